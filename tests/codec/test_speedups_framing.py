"""``HAReceiver.check_records`` (``rmqproto/codec/hareceiver.c``), the C twin of the record
checks a slave makes before acking (``rmqproto/ha/framing.py``): the same stop and the same
verdict on whole, cut, mutated and random bytes."""

from hypothesis import given, strategies as st

from rmqproto.ha.framing import check_records

from support.recordstream import records, segment
from support.speedups import require_speedups

speedups = require_speedups()

FILE = 4096
STREAM = segment(FILE, 60) + records(10, 60, seed=7, offset=FILE)


def both(data, start, end, crc):
    python = check_records(data, start, end, start, FILE, crc)
    c = speedups.HAReceiver.check_records(data, start, end, start, FILE, crc)
    assert c[0] == python[0] and (c[1] is None) == (python[1] is None), (python, c)


@given(st.integers(0, len(STREAM)), st.integers(0, len(STREAM)),
       st.lists(st.tuples(st.integers(0, len(STREAM) - 1), st.integers(0, 255)), max_size=3),
       st.booleans())
def test_the_c_walk_agrees_with_the_python_one(a, b, changes, crc):
    data = bytearray(STREAM)
    for at, value in changes:
        data[at] = value
    pos, end = min(a, b), max(a, b)
    # walks start at record boundaries: the first one at or after pos
    start = check_records(STREAM, 0, pos, 0, FILE, False)[0]
    both(bytes(data), start, max(end, start), crc)


@given(st.binary(max_size=600), st.booleans())
def test_the_c_walk_agrees_on_random_bytes(data, crc):
    both(data, 0, len(data), crc)


def test_bad_arguments_are_refused():
    import pytest
    walk = speedups.HAReceiver.check_records
    for args in [(b"abc", 0, 4, 0, FILE, True), (b"abc", 2, 1, 0, FILE, True),
                 (b"abc", 0, 3, -1, FILE, True), (b"abc", 0, 3, 0, 0, True)]:
        with pytest.raises(ValueError):
            walk(*args)
