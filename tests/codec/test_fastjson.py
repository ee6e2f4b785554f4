"""fastjson's dialect (``docs/codecs/bodies.md``, "The fastjson dialect") against fastjson 1.2.69 itself."""

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqproto.codec import fastjson
from rmqproto.codec.codes import MQVersion, ResponseCode
from rmqproto.errors import CodecError
from support.interop import load_vectors

MODES = {"fastjson_default": False, "fastjson_standard": True}


@pytest.mark.parametrize("kind", sorted(MODES))
def test_vectors(kind):
    standard = MODES[kind]
    for vector in load_vectors(kind):
        data = bytes.fromhex(vector["hex"])
        assert fastjson.dumps(vector["fields"], browser_compatible=standard, sort_maps=standard) == data, vector["name"]
        assert fastjson.dumps(fastjson.loads(data), browser_compatible=standard) == data, vector["name"]
        if not standard:  # standard JSON carries longs beyond 2**53 as strings
            assert fastjson.loads(data) == vector["fields"], vector["name"]


@pytest.mark.java
@pytest.mark.parametrize("kind", sorted(MODES))
def test_fresh_vectors_equal_checked_in(fresh_vectors, kind):
    assert fresh_vectors(kind) == load_vectors(kind)


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 63), (1 << 63) - 1) | _TEXT
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12)


@pytest.mark.java
def test_java_reads_what_we_write(java_interop):
    found = []

    @settings(max_examples=40, database=None)
    @given(st.dictionaries(_TEXT, _VALUES, max_size=4))
    def collect(value):
        found.append(value)

    collect()
    answers = java_interop.decode("fastjson_default", [fastjson.dumps(v) for v in found])
    for value, answer in zip(found, answers):
        assert answer["fields"] == _without_null_members(value)


def _without_null_members(value):
    if isinstance(value, dict):
        return {k: _without_null_members(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_null_members(v) for v in value]
    return value


@settings(max_examples=200)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_java_double_str_round_trips(value):
    text = fastjson.java_double_str(value)
    assert float(text) == value
    assert "e" not in text and ("E" in text or "." in text)


def test_java_double_str_examples():
    cases = {0.0: "0.0", 1e7: "1.0E7", 9999999.0: "9999999.0", 0.001: "0.001", 1e-4: "1.0E-4",
             5e-324: "4.9E-324", float("nan"): "null", 123.456: "123.456"}
    for value, text in cases.items():
        assert fastjson.java_double_str(value) == text


@settings(max_examples=200)
@given(st.dictionaries(_TEXT, _VALUES, max_size=4))
def test_reader_agrees_with_orjson_on_standard_json(value):
    data = orjson.dumps(value)
    assert fastjson._Reader(data.decode()).document() == orjson.loads(data)


@settings(max_examples=100)
@given(st.dictionaries(st.integers(-(1 << 63), (1 << 63) - 1), _TEXT, max_size=4))
def test_integer_keys_unquoted_then_read_back(table):
    data = fastjson.dumps({"t": table})
    assert fastjson.loads(data) == {"t": {str(k): v for k, v in table.items() if v is not None}}


def test_int_enums_are_written_as_their_numbers():
    """Codes and versions are ``IntEnum`` members; fastjson writes the number, as a key too."""
    data = fastjson.dumps({"code": ResponseCode.SYSTEM_ERROR, "t": {MQVersion.V4_9_8: "v"}})
    assert data == b'{"code":1,"t":{%d:"v"}}' % int(MQVersion.V4_9_8)


def test_object_keys():
    key = fastjson.ObjectKey({"brokerName": "b", "queueId": 0, "topic": "t"})
    data = fastjson.dumps({"offsetTable": {key: 1}})
    assert data == b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:1}}'
    assert fastjson.loads(data) == {"offsetTable": {key: 1}}
    assert fastjson.dumps({key: 1}, browser_compatible=True) == b'{"{\\"brokerName\\":\\"b\\",\\"queueId\\":0,\\"topic\\":\\"t\\"}":1}'


def test_map_sort_field_orders_like_a_tree_map():
    assert fastjson.dumps({"b": 1, "B": 2, "\U0001F600": 3, "\uffff": 4}, sort_maps=True) == \
        '{"B":2,"b":1,"\U0001F600":3,"\uffff":4}'.encode()
    assert fastjson.dumps({10: "a", 9: "b"}, browser_compatible=True, sort_maps=True) == b'{"9":"b","10":"a"}'


@settings(max_examples=300)
@given(st.binary(max_size=100))
def test_random_bytes_raise_only_codec_errors(data):
    try:
        fastjson.loads(data)
    except CodecError:
        pass


@settings(max_examples=200)
@given(st.sampled_from([bytes.fromhex(v["hex"]) for k in MODES for v in load_vectors(k)]), st.data())
def test_mutated_documents_raise_only_codec_errors(valid, data):
    mutated = bytearray(valid)
    mutated[data.draw(st.integers(0, len(mutated) - 1))] = data.draw(st.sampled_from(b'{}[]:,"\\0-9ae'))
    try:
        fastjson.loads(bytes(mutated))
    except CodecError:
        pass


def test_deep_nesting_is_a_codec_error():
    with pytest.raises(CodecError):
        fastjson.loads(b"[" * 5000 + b'{{"a":1}:2}' + b"]" * 5000)
