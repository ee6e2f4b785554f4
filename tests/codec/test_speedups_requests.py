"""The C decoders of a request against the Python ones they front: the frame
(``decode_frame``) on random and malformed JSON and binary frames,
and the request header (``decode_header``) of every header class on random
``extFields`` with texts around the int and long limits, signs, Unicode digits and case
variants of booleans. Values and errors must be the same. ``test_headers.py`` checks the
header decoders against decoding field by field, ``test_frame.py`` the frames against the
construct declarations and Java."""

import gc
import sys

import orjson
import pytest
from hypothesis import given, settings, strategies as st

from rmqproto.codec import frame as F, headers as H
from rmqproto.codec.native import speedups
from rmqproto.errors import CodecError
from support.speedups import require_speedups

require_speedups()

_NUMBERS = st.sampled_from([
    "0", "-0", "+0", "7", "+7", "-7", "007", "", "+", "-", " 1", "1 ", "1.5", "0x10",
    "2147483647", "2147483648", "-2147483648", "-2147483649", "+2147483647",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "-9223372036854775809", "99999999999999999999999", "١٢٣", "-١", "１２", "²"])
_BOOLEANS = st.sampled_from(["true", "TRUE", "True", "tRuE", "false", "yes", "1", "", "truee",
                             "tru", "ｔｒｕｅ", "TRUE\u0131"])
_VALUES = st.none() | _NUMBERS | _BOOLEANS | st.text(max_size=12) | st.integers() | st.just(b"x")


def _frame_outcome(decode, frame):
    try:
        command = decode(frame)
    except CodecError as exc:
        return type(exc), str(exc)
    return [(type(value), value) for value in (
        command.code, command.opaque, command.flag, command.ext_fields, command.body,
        command.remark, command.language, command.version, command.serialize_type)]


_JSON = (st.none() | st.booleans() | st.integers(-2 ** 63, 2 ** 64 - 1) | st.text(max_size=8)
         | st.floats() | st.just([1]))
_HEADER_KEYS = ["code", "opaque", "flag", "extFields", "remark", "language", "version", "other"]


def _json_frame(header, body):
    text = header if isinstance(header, bytes) else orjson.dumps(header)
    return len(text).to_bytes(4, "big") + text + body


@settings(max_examples=800)
@given(st.data())
def test_c_frame_decoder_equals_python_decoder(data):
    header = data.draw(
        st.dictionaries(st.sampled_from(_HEADER_KEYS), _JSON | st.dictionaries(
            st.text(max_size=4), _JSON | st.text(max_size=6), max_size=4), max_size=8)
        | st.fixed_dictionaries({"code": st.integers(-2 ** 31, 2 ** 31 - 1),
                                 "opaque": st.integers(-2 ** 31, 2 ** 31 - 1),
                                 "flag": st.sampled_from([0, 1, 2]), "language": st.just("JAVA"),
                                 "version": st.just(399), "extFields": st.dictionaries(
                                     st.text(max_size=4), st.text(max_size=6), max_size=6)})
        | _JSON | st.binary(max_size=12))
    body = data.draw(st.binary(max_size=16))
    frame = _json_frame(header, body)
    cut = data.draw(st.sampled_from([None, 0, 2, 3, 5, len(frame) - 1]))
    if cut is not None:
        frame = frame[:cut]
    if data.draw(st.booleans()):  # a bad serialize type or header length
        frame = bytes([data.draw(st.integers(0, 255))]) + frame[1:]
    assert _frame_outcome(F.decode_frame, frame) == _frame_outcome(F.python_decode_frame, frame)


def test_frames_c_does_not_decode_go_to_python():
    binary = F.encode_frame(F.RemotingCommand(10, ext_fields={"a": "b"}, language=13,
                                              serialize_type=F.SERIALIZE_ROCKETMQ))[4:]
    json = F.encode_frame(F.RemotingCommand(10, ext_fields={"a": "b"}, body=b"x"))[4:]
    for frame in (binary, bytearray(json), memoryview(json), b"\x00\x00\x00"):
        assert _frame_outcome(F.decode_frame, frame) == _frame_outcome(
            F.python_decode_frame, frame)
    assert F.decode_frame.func is speedups.decode_frame


def _split_outcome(split, data, max_frame_length):
    frames, used, error = split(data, max_frame_length)
    return frames, used, error if error is None else (type(error), str(error))


_PREFIXES = st.integers(-2 ** 31, 2 ** 31 - 1) | st.sampled_from([-1, 0, 3, 4, 5, 2 ** 31 - 1])


@settings(max_examples=800)
@given(st.data())
def test_c_frame_splitter_equals_python_splitter(data):
    stream = b"".join(
        len(body).to_bytes(4, "big") + body if isinstance(body, bytes)
        else body.to_bytes(4, "big", signed=True)
        for body in data.draw(st.lists(st.binary(min_size=4, max_size=24) | _PREFIXES,
                                       max_size=6)))
    stream = stream[:data.draw(st.integers(0, len(stream)))]
    stream = bytearray(stream) if data.draw(st.booleans()) else stream
    limit = data.draw(st.integers(-8, 40) | st.sampled_from([2 ** 24, 2 ** 63, 2 ** 64, True]))
    assert _split_outcome(F.split_frames, stream, limit) == _split_outcome(
        F.python_split_frames, stream, limit)


def test_streams_c_does_not_split_go_to_python():
    frame = (5).to_bytes(4, "big") + b"hello"
    for data, limit in ((memoryview(frame), 100), (frame, 100.0), (frame + b"\0" * 4, 100)):
        assert _split_outcome(F.split_frames, data, limit) == _split_outcome(
            F.python_split_frames, data, limit)
    assert F.split_frames.func is speedups.split_frames
    with pytest.raises(TypeError):
        speedups.split_frames(F.python_split_frames, frame)


def _outcome(decode, ext_fields):
    try:
        header = decode(ext_fields)
    except CodecError as exc:
        return type(exc), str(exc)
    return type(header), {name: (type(value), value) for name, value in (
        (f.name, getattr(header, f.name)) for f in type(header).all_fields)}


def _decoders():
    """``(C decoder, Python decoder)`` of every header class, and V2 decoded as V1."""
    pairs = [(cls._decode, cls._python_decode) for cls in H.HEADER_CLASSES.values()]
    v2 = H.SendMessageRequestHeaderV2
    return pairs + [(v2.v1_from_ext_fields, v2.python_v1_from_ext_fields)]


_PAIRS = sorted(_decoders(), key=repr)


def test_every_header_without_a_double_field_decodes_in_c():
    in_c = [python for c, python in _PAIRS if c is not python]
    assert len(in_c) >= len(_PAIRS) - 2  # only classes with a Double field stay in Python
    assert H.PullMessageRequestHeader._decode.func is speedups.decode_header
    assert H.SendMessageRequestHeaderV2.v1_from_ext_fields.func is speedups.decode_header


@settings(max_examples=600)
@given(st.data())
def test_c_decoder_equals_python_decoder(data):
    native, python = data.draw(st.sampled_from(_PAIRS))
    plan = getattr(native, "args", (None,))[0]
    wires = [field[0] for field in plan[1]] if plan else ["other"]
    ext = data.draw(st.none() | st.dictionaries(st.sampled_from(wires + ["other"]), _VALUES)
                    | st.fixed_dictionaries({w: _NUMBERS | _BOOLEANS | st.text(max_size=6)
                                             for w in wires}))
    assert _outcome(native, ext) == _outcome(python, ext)


def test_a_dict_subclass_and_other_mappings_go_to_python():
    class Fields(dict):
        pass

    ext = Fields(consumerGroup="g", topic="t")
    decode = H.QueryConsumerOffsetRequestHeader
    assert _outcome(decode._decode, ext) == _outcome(decode._python_decode, ext)
    with pytest.raises((TypeError, AttributeError)):
        decode._decode(["not", "a", "mapping"])


def test_malformed_plans_are_refused():
    for plan in [(), (int, (), ()), (int, ("x",), (), print), (int, (), ("x",), print)]:
        with pytest.raises(TypeError):
            speedups.decode_header(plan, {"x": "1"})


def test_decoding_does_not_leak():
    decode_header = H.SendMessageRequestHeaderV2.v1_from_ext_fields
    good = {"a": "g", "b": "T", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "123",
            "h": "0", "i": "x\x01y", "k": "true"}
    bad = dict(good, e="one")

    frames = [F.encode_frame(F.RemotingCommand(310, ext_fields=good, body=b"x"))[4:],
              _json_frame({"code": 1, "extFields": {"a": 1}}, b""), _json_frame(b"{", b"")]
    stream_ok = bytearray(b"".join(len(f).to_bytes(4, "big") + f for f in frames))
    stream_bad = bytes(stream_ok) + b"\0\0\0\1"

    def run():
        for _ in range(2000):
            decode_header(good)
            for decode, value in ((decode_header, bad), (F.decode_frame, frames[1]),
                                  (F.decode_frame, frames[2])):
                try:
                    decode(value)
                except CodecError:
                    pass
            F.decode_frame(frames[0])
            for stream in (stream_ok, stream_bad):
                F.split_frames(stream, 1 << 20)

    assert_no_leak(run)


def assert_no_leak(run):
    """A second ``run()`` leaves (almost) no more memory blocks, nor references in a debug
    build, than the first left."""
    run()
    gc.collect()
    before = sys.gettotalrefcount() if hasattr(sys, "gettotalrefcount") else None
    blocks = sys.getallocatedblocks()
    run()
    gc.collect()
    assert sys.getallocatedblocks() - blocks < 200
    if before is not None:  # a debug build
        assert sys.gettotalrefcount() - before < 200
