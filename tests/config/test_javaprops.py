"""java.util.Properties text: the parsing rules of Properties.load and a lossless writer."""

from hypothesis import given, strategies as st

from rmqproto.config import dump_properties, parse_properties


def test_separators_comments_and_blanks():
    text = "# comment\n! other comment\n\n  listenPort = 9876\nkey:value\nspaced  value here\nempty=\n"
    assert parse_properties(text) == {
        "listenPort": "9876", "key": "value", "spaced": "value here", "empty": ""}


def test_continuation_lines_and_escapes():
    text = "a=first \\\n    second\nb=tab\\there\\u00e9\nc\\ key=x\nd=\\\\\n"
    assert parse_properties(text) == {
        "a": "first second", "b": "tab\there\u00e9", "c key": "x", "d": "\\"}


def test_crlf_and_latin1_bytes():
    assert parse_properties(b"k=v\r\nz=\xe9\r") == {"k": "v", "z": "\u00e9"}


def test_later_duplicate_wins():
    assert parse_properties("k=1\nk=2\n") == {"k": "2"}


def test_writer_escapes_like_properties_store():
    assert dump_properties({"k ey": "a=b", "v": " lead", "u": "\u00e9"}) == (
        "k\\ ey=a\\=b\nv=\\ lead\nu=\\u00E9\n")


@given(st.dictionaries(st.text(min_size=1), st.text()))
def test_round_trip(values):
    assert parse_properties(dump_properties(values)) == values
