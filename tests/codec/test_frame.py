"""Remoting frames against RocketMQ 4.9.8's RemotingCommand."""

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqproto.codec.codes import RequestCode
from rmqproto.codec.frame import (
    FLAG_ONEWAY, FLAG_RESPONSE, LANGUAGE_CODES, MAX_FRAME_LENGTH, SERIALIZE_JSON,
    SERIALIZE_ROCKETMQ, FrameDecoder, JsonResponseTemplate, RemotingCommand, _orjson_json_header,
    build_frame_declared,
    decode_frame, encode_frame, encode_json_header, fastjson_json_header, parse_frame_declared)
from rmqproto.errors import BadHeaderLengthError, CodecError, FrameTooLargeError
from support.interop import load_vectors

VECTORS = load_vectors("frame_command")
_SERIALIZE_NAMES = {SERIALIZE_JSON: "JSON", SERIALIZE_ROCKETMQ: "ROCKETMQ"}


def command_fields(cmd):
    """``cmd`` as the Java side records a decoded command (null entries left out)."""
    ext = cmd.ext_fields
    fields = dict(
        code=cmd.code, language=cmd.language if isinstance(cmd.language, str) else None,
        version=cmd.version, opaque=cmd.opaque, flag=cmd.flag, remark=cmd.remark,
        extFields=None if ext is None else {k: v for k, v in ext.items() if v is not None},
        serializeType=_SERIALIZE_NAMES[cmd.serialize_type], body=bytes(cmd.body).hex())
    return {k: v for k, v in fields.items() if v is not None}


# ---------------------------------------------------------------- 1. checked-in vectors

@pytest.mark.parametrize("vector", [pytest.param(v, id=v["name"]) for v in VECTORS])
def test_vector_decodes_to_java_fields(vector):
    data = bytes.fromhex(vector["hex"])
    assert command_fields(decode_frame(data[4:])) == vector["fields"]
    assert command_fields(parse_frame_declared(data)) == vector["fields"]


@pytest.mark.parametrize("vector", [pytest.param(v, id=v["name"]) for v in VECTORS])
def test_vector_reencodes_identically(vector):
    data = bytes.fromhex(vector["hex"])
    cmd = decode_frame(data[4:])
    assert encode_frame(cmd) == data
    assert build_frame_declared(cmd) == data


def test_binary_header_truncates_codes_like_java():
    by_name = {v["name"]: v["fields"] for v in VECTORS}
    assert by_name["rocketmq_code_50001"]["code"] == 50001 - 65536
    assert by_name["rocketmq_code_200050"]["code"] == 200050 % 65536
    assert by_name["rocketmq_version_40000"]["version"] == 40000 - 65536
    assert by_name["json_code_200050"]["code"] == 200050


# ---------------------------------------------------------------- 2. fresh vectors

def test_fresh_vectors_equal_checked_in(fresh_vectors):
    assert fresh_vectors("frame_command") == VECTORS


# ---------------------------------------------------------------- strategies

_INT32 = st.integers(-2 ** 31, 2 ** 31 - 1)
_INT16 = st.integers(-2 ** 15, 2 ** 15 - 1)
_TEXT = st.text(max_size=20)


@st.composite
def commands(draw):
    binary = draw(st.booleans())
    word = _INT16 if binary else _INT32
    if binary:
        language = draw(st.sampled_from(sorted(LANGUAGE_CODES)) | st.integers(14, 255))
        remark = draw(st.none() | st.text(min_size=1, max_size=30))
        ext = draw(st.none() | st.dictionaries(
            st.text(min_size=1, max_size=10), st.none() | st.text(min_size=1, max_size=20),
            min_size=1, max_size=8))
    else:
        language = draw(st.sampled_from(sorted(LANGUAGE_CODES)))
        remark = draw(st.none() | _TEXT)
        ext = draw(st.none() | st.dictionaries(_TEXT, _TEXT, max_size=8))
    return RemotingCommand(
        draw(word), opaque=draw(_INT32), flag=draw(st.sampled_from([0, 1, 2, 3]) | _INT32),
        ext_fields=ext, body=draw(st.binary(max_size=64)), remark=remark, language=language,
        version=draw(word), serialize_type=SERIALIZE_ROCKETMQ if binary else SERIALIZE_JSON)


# ---------------------------------------------------------------- 3. Java decodes ours

_EDGE_COMMANDS = [
    RemotingCommand(50001, serialize_type=SERIALIZE_JSON, version=409),
    RemotingCommand(105, ext_fields={"topic": "T", "empty": None}, language=13,
                    serialize_type=SERIALIZE_ROCKETMQ, remark="错误\u0001"),
    RemotingCommand(0, flag=FLAG_RESPONSE | FLAG_ONEWAY, opaque=-1, body=b"\x00" * 5),
]


def java_view(cmd):
    """What 4.9.8 reads from ``cmd``: it has no NODE_JS and decodes unknown languages as null."""
    fields = command_fields(cmd)
    if fields.get("language") == "NODE_JS":
        del fields["language"]
    return fields


@settings(max_examples=3, deadline=None)
@given(st.lists(commands(), min_size=40, max_size=40))
def test_java_decodes_our_frames(java_interop, cmds):
    cmds = cmds + _EDGE_COMMANDS
    answers = java_interop.decode("frame_command", [encode_frame(c) for c in cmds])
    for cmd, answer in zip(cmds, answers):
        assert answer == {"fields": java_view(cmd)}, cmd


# ---------------------------------------------------------------- 4. round trip, fast == declared

@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(commands())
def test_round_trip_and_fast_equals_declared(cmd):
    data = encode_frame(cmd)
    assert build_frame_declared(cmd) == data
    decoded = decode_frame(data[4:])
    assert decoded == parse_frame_declared(data)
    assert command_fields(decoded) == command_fields(cmd)
    assert encode_frame(decoded) == data


# JSON headers: the orjson fast path writes what fastjson's writer writes

#: Mostly plain ASCII, with every character one of the two writers escapes or writes raw.
_TRICKY_TEXT = st.text(alphabet=st.characters(max_codepoint=0x7F) | st.sampled_from(
    '"\\/\x00\x1f\x7f\x80\x9f\xa0\u2028\u2029\u00e9\u9519\U0001f600'), max_size=12)
_JSON_VALUE = (st.integers(-2 ** 63, 2 ** 64 - 1) | st.integers() | st.sampled_from([True, None]))


@settings(max_examples=500)
@given(code=_JSON_VALUE, opaque=_JSON_VALUE, flag=_JSON_VALUE, version=_JSON_VALUE,
       language=st.sampled_from(sorted(LANGUAGE_CODES)) | st.integers(0, 255) | st.none()
       | _TRICKY_TEXT,
       remark=st.none() | _TRICKY_TEXT,
       ext=st.none() | st.dictionaries(_TRICKY_TEXT | st.none() | st.integers(),
                                       _TRICKY_TEXT | st.none() | st.integers(), max_size=5))
def test_json_header_fast_path_equals_fastjson_writer(code, opaque, flag, version, language,
                                                      remark, ext):
    cmd = RemotingCommand(code, opaque=opaque, flag=flag, ext_fields=ext, remark=remark,
                          language=language, version=version)
    try:
        expected = fastjson_json_header(cmd)
    except (AttributeError, TypeError, UnicodeEncodeError):
        expected = None  # nothing fastjson would write: the fast path must not write it either
    fast = _orjson_json_header(cmd)
    assert fast is None or fast == expected
    if expected is not None:
        assert encode_json_header(cmd) == expected


def test_json_header_fast_path_serves_plain_answers():
    answer = RemotingCommand(0, opaque=7, flag=FLAG_RESPONSE, version=417, ext_fields={
        "msgId": "7F00000100002A9F0000000000001234", "queueId": "3", "queueOffset": "0",
        "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}, remark="a b/c")
    assert _orjson_json_header(answer) == fastjson_json_header(answer)


def test_json_header_fast_path_serves_requests_with_properties():
    """A send (its code a ``RequestCode``) has properties with the separators \\u0001 and
    \\u0002, which both writers escape alike; control characters with a hex letter in their
    escape are left to fastjson's writer."""
    request = RemotingCommand(RequestCode.SEND_MESSAGE_V2, opaque=11, version=417, ext_fields={
        "a": "bench_producer", "b": "BenchSend", "i": "WAIT\x01true\x02UNIQ_KEY\x017F0000",
        "m": "false"})
    assert _orjson_json_header(request) == fastjson_json_header(request)
    assert _orjson_json_header(request).startswith(b'{"code":310,"extFields":{"a":')
    assert b"\\u0001" in _orjson_json_header(request)
    for char in "\x0b\x0e\x0f\x1a\x1f":
        odd = RemotingCommand(310, opaque=11, ext_fields={"i": "a" + char})
        assert _orjson_json_header(odd) is None
        assert encode_json_header(odd) == fastjson_json_header(odd)


# JSON response templates: the frames encode_frame writes

_HEX_IDS = st.lists(st.text("0123456789ABCDEF", min_size=32, max_size=32), min_size=1,
                    max_size=3).map(",".join)


@settings(max_examples=300)
@given(constants=st.dictionaries(_TRICKY_TEXT.filter(bool), _TRICKY_TEXT, max_size=3),
       varying_first=st.booleans(), version=st.integers(0, 2 ** 31 - 1),
       code=st.integers(-2 ** 31, 2 ** 31 - 1), opaque=st.integers(-2 ** 31, 2 ** 31 - 1),
       msg_id=_HEX_IDS, queue_id=st.integers(-1, 2 ** 31 - 1), offset=st.integers(0, 2 ** 63 - 1))
def test_json_response_template_writes_what_encode_frame_writes(
        constants, varying_first, version, code, opaque, msg_id, queue_id, offset):
    values = {"queueId": str(queue_id), "msgId": msg_id, "queueOffset": str(offset)}
    constants = {k: v for k, v in constants.items() if k not in values}
    ext = dict(values, **constants) if varying_first else dict(constants, **values)
    template = JsonResponseTemplate(ext, ("msgId", "queueId", "queueOffset"), version)
    expected = RemotingCommand(code, opaque=opaque, flag=FLAG_RESPONSE, language="JAVA",
                               version=version, ext_fields={
                                   k: values.get(k, v) for k, v in ext.items()})
    assert template.frame(code, opaque, msg_id, queue_id, offset) == encode_frame(expected)


def test_json_response_template_refuses_a_constant_that_holds_a_marker():
    with pytest.raises(CodecError, match="marker"):
        JsonResponseTemplate({"msgId": "", "region": "~slot0~"}, ("msgId",), 417)
    with pytest.raises(CodecError, match="marker"):
        JsonResponseTemplate({"region": str(JsonResponseTemplate._OPAQUE)}, (), 417)


# ---------------------------------------------------------------- 5. fuzz

def _all_decoders(data):
    for decoder in (decode_frame, parse_frame_declared, lambda d: FrameDecoder().feed(d)):
        try:
            decoder(data)
        except CodecError:
            pass


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_random_bytes_raise_only_codec_errors(data):
    _all_decoders(data)


@settings(max_examples=300)
@given(st.sampled_from(VECTORS), st.data())
def test_mutated_vectors_raise_only_codec_errors(vector, data):
    blob = bytearray.fromhex(vector["hex"])
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(blob) - 1))
        blob[pos] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(blob)))
    _all_decoders(bytes(blob[:cut]))
    _all_decoders(bytes(blob[4:cut]))


# ---------------------------------------------------------------- FrameDecoder

_STREAM = b"".join(bytes.fromhex(v["hex"]) for v in VECTORS)
_FRAMES = [bytes.fromhex(v["hex"])[4:] for v in VECTORS]


def test_many_frames_in_one_chunk():
    decoder = FrameDecoder()
    assert decoder.feed(_STREAM) == _FRAMES
    assert decoder.buffered == 0


@settings(max_examples=100)
@given(st.lists(st.integers(0, len(_STREAM)), max_size=30))
def test_any_chunking_yields_the_same_frames(cuts):
    decoder = FrameDecoder()
    frames = []
    bounds = [0, *sorted(cuts), len(_STREAM)]
    for start, end in zip(bounds, bounds[1:]):
        frames += decoder.feed(_STREAM[start:end])
    assert frames == _FRAMES
    assert decoder.buffered == 0


def test_byte_at_a_time():
    decoder = FrameDecoder()
    frames = [f for i in range(len(_STREAM)) for f in decoder.feed(_STREAM[i:i + 1])]
    assert frames == _FRAMES


@pytest.mark.parametrize("length", [MAX_FRAME_LENGTH - 3, 2 ** 31 - 1])
def test_oversized_prefix_rejected_before_the_body(length):
    decoder = FrameDecoder()
    with pytest.raises(FrameTooLargeError):
        decoder.feed(struct.pack(">i", length))


def test_largest_allowed_frame_waits_for_its_body():
    decoder = FrameDecoder()
    assert decoder.feed(struct.pack(">i", MAX_FRAME_LENGTH - 4) + b"\x00" * 100) == []
    assert decoder.buffered == 104


@pytest.mark.parametrize("prefix", [0, 3, -1, -2 ** 31])
def test_length_below_four_rejected(prefix):
    with pytest.raises(BadHeaderLengthError):
        FrameDecoder().feed(struct.pack(">i", prefix))


def test_bad_header_length_rejected():
    frame = struct.pack(">iI", 8, 100) + b"{}\x00\x00"
    with pytest.raises(BadHeaderLengthError):
        decode_frame(frame[4:])
    with pytest.raises(CodecError):
        parse_frame_declared(frame)


def test_garbage_after_valid_frame_is_reported_after_the_frame():
    decoder = FrameDecoder()
    with pytest.raises(CodecError):
        decoder.feed(_STREAM[:len(bytes.fromhex(VECTORS[0]["hex"]))] + b"\xff\xff\xff\xff")


def test_unknown_language_is_kept_like_java():
    cmd = RemotingCommand(10, language=200, serialize_type=SERIALIZE_ROCKETMQ)
    data = encode_frame(cmd)
    assert decode_frame(data[4:]).language == 200
    json_cmd = decode_frame(encode_frame(RemotingCommand(10, language="KLINGON"))[4:])
    assert json_cmd.language == "KLINGON"
