"""Java semantics against the JVM: String.hashCode, Math.abs, UtilAll.crc32, UtilAll.offset2FileName."""

import pytest
from hypothesis import given, settings, strategies as st

from rmqproto.codec.javalang import (java_abs_int, java_string_hash, java_string_hash_continued,
                                     java_string_hash_uncached, masked_crc32, to_int32)
from rmqproto.codec.storefile import file_name_to_offset, offset_to_file_name, segment_start
from rmqproto.errors import CodecError
from support.interop import load_vectors


@pytest.mark.parametrize("vector", load_vectors("store_javalang"), ids=lambda v: v["name"])
def test_javalang_vectors(vector):
    f, data = vector["fields"], bytes.fromhex(vector["hex"])
    if f["op"] == "hash":
        text = b"".join(u.to_bytes(2, "big") for u in f["units"]).decode("utf-16-be", "surrogatepass")
        assert java_string_hash(text) == f["hash_code"]
        assert java_string_hash.__wrapped__(text) == f["hash_code"]
        assert java_abs_int(f["hash_code"]) == f["math_abs"]
    elif f["op"] == "crc32":
        assert masked_crc32(data) == f["crc32"]
    else:
        assert offset_to_file_name(f["offset"]) == f["name"] == data.decode()
        assert file_name_to_offset(f["name"]) == f["offset"]


def _reference_hash(text):
    h = 0
    raw = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(raw), 2):
        h = (31 * h + int.from_bytes(raw[i:i + 2], "big")) & 0xFFFFFFFF
    return to_int32(h)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_hash_matches_the_definition(text):
    assert java_string_hash.__wrapped__(text) == _reference_hash(text)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(st.characters(max_codepoint=127), max_size=60),
                 st.text(st.characters(max_codepoint=127), min_size=600, max_size=700)))
def test_ascii_hash_matches_the_definition(text):
    """ASCII texts take the base-31 path up to 640 characters, the loop beyond."""
    assert java_string_hash_uncached(text) == _reference_hash(text) == java_string_hash(text)


_narrow_text = st.text(st.characters(min_codepoint=48, max_codepoint=78))


@settings(max_examples=200, deadline=None)
@given(st.one_of(_narrow_text, st.text(max_size=20), _narrow_text.map(lambda t: t + "a"),
                 st.text(st.characters(min_codepoint=40, max_codepoint=90), min_size=630,
                         max_size=650)))
def test_narrow_ascii_hash_matches_the_definition(text):
    """Units within '0'..'N' take one parse; one unit outside (or any other text) does not."""
    assert java_string_hash_uncached(text) == _reference_hash(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20), st.one_of(st.text(max_size=40), _narrow_text,
                                       st.text(st.characters(max_codepoint=127), min_size=630,
                                               max_size=650)))
def test_continued_hash_is_the_hash_of_the_concatenation(prefix, text):
    assert java_string_hash_continued(java_string_hash(prefix), text) == _reference_hash(
        prefix + text)


def test_file_names():
    assert segment_start(65537, 65536) == 65536
    for bad in ("", "123", "0000000000000000000x", "-0000000000000000001"):
        with pytest.raises(CodecError):
            file_name_to_offset(bad)
    with pytest.raises(CodecError):
        offset_to_file_name(-1)


@pytest.mark.java
def test_fresh_vectors_equal_checked_in(fresh_vectors):
    assert fresh_vectors("store_javalang") == load_vectors("store_javalang")
