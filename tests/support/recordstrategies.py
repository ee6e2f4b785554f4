"""Hypothesis strategies for the fields of commit-log records, shared by the
record codec tests."""

from hypothesis import strategies as st

__all__ = ["INT32", "INT64", "HOSTS", "PROPERTY_TEXT", "properties", "TOPICS"]

INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
#: ``(ip, port)`` with IPv4 or IPv6 addresses.
HOSTS = st.tuples(st.one_of(st.ip_addresses(v=4).map(str), st.ip_addresses(v=6).map(str)),
                  st.integers(0, 65535))
#: Property names and values: no separators (\x01, \x02) and no lone surrogates.
PROPERTY_TEXT = st.text(st.characters(blacklist_characters="\x01\x02",
                                      blacklist_categories=("Cs",)), min_size=1, max_size=12)
TOPICS = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)


def properties(max_size=5):
    """A strategy of message property dicts."""
    return st.dictionaries(PROPERTY_TEXT, PROPERTY_TEXT, max_size=max_size)
