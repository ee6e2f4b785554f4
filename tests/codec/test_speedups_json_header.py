"""The C reader of the usual JSON header (``rmqproto/codec/speedups/jsonheader.c``, behind
``decode_frame``) against the Python decoder it fronts: headers written by fastjson's
rules, with any JSON spacing and escapes, and the same texts damaged. Values, their types,
the order of ``extFields`` and errors must be the same. ``test_speedups_requests.py`` covers
the rest of ``decode_frame``."""

import json

from hypothesis import given, settings, strategies as st

from rmqproto.codec import frame as F
from rmqproto.codec.native import speedups
from rmqproto.errors import CodecError
from support.speedups import require_speedups
from test_speedups_requests import assert_no_leak

require_speedups()


def _frame(text, body=b"body"):
    return len(text).to_bytes(4, "big") + text + body


def _outcome(decode, frame):
    try:
        command = decode(frame)
    except CodecError as exc:
        return type(exc), str(exc)
    ext = command.ext_fields
    return [(type(value), value) for value in (
        command.code, command.opaque, command.flag, command.body, command.remark,
        command.language, command.version, command.serialize_type)] + [
        ext if ext is None else [(type(k), k, type(v), v) for k, v in ext.items()]]


def _python_counted():
    """A ``decode_frame`` whose Python decoder counts the frames it is given, and those."""
    calls = []

    def python(frame):
        calls.append(frame)
        return F.python_decode_frame(frame)

    plan = (F.RemotingCommand, python)
    return calls, lambda frame: speedups.decode_frame(plan, frame)


#: A SEND_MESSAGE_V2 header as the Java client writes it.
_SEND = (b'{"code":310,"extFields":{"a":"pg","b":"TopicTest","c":"TBW102","d":"4","e":"2",'
         b'"f":"0","g":"1795329689160","h":"0","i":"UNIQ_KEY\\u0001AC11\\u0002WAIT\\u0001true'
         b'\\u0002TAGS\\u0001TagA","j":"0","k":"false","m":"false"},"flag":0,"language":"JAVA",'
         b'"opaque":7,"serializeTypeCurrentRPC":"JSON","version":399}')

#: Headers the C reader takes itself.
_USUAL = [
    _SEND,
    b'{}',
    b' \t\r\n{ "code" : -5 , "remark" : null , "extFields" : null } \n',
    b'{"code":1,"extFields":{},"language":"CPP","remark":"r\\"\\\\\\/\\b\\f\\n\\r\\t"}',
    b'{"code":1,"extFields":{"k\\u00e9y":"\\ud83d\\ude00 \\u0000 \xc3\xa9 \xf0\x9f\x98\x80"}}',
    b'{"code":1,"code":2,"extFields":{"a":"1","b":"2","a":"3"}}',
    b'{"code":999999999999999999,"opaque":-999999999999999999,"other":true,"x":false,'
    b'"y":null,"z":"s","w":12}',
    b'{"extFields":{"long":"' + b"v" * 600 + b'\\n"}}',
]

#: Headers it leaves to the Python decoder.
_UNUSUAL = [
    b'{"code":1.0}', b'{"code":1e3}', b'{"code":-0}', b'{"code":01}', b'{"code":+1}',
    b'{"code":1234567890123456789}', b'{"code":18446744073709551616000}', b'{"code":null}', b'{"code":"1"}', b'{"code":true}',
    b'{"language":null}', b'{"language":3}', b'{"remark":4}', b'{"extFields":[]}',
    b'{"extFields":{"a":1}}', b'{"extFields":{"a":null}}', b'{"extFields":{"a":{"b":"c"}}}',
    b'{"other":{"a":[1,2]}}', b'{"other":[]}', b'{"c\\u006fde":5}', b'{"\xc3\xa9":5}',
    b'{"remark":"\\ud83d"}', b'{"remark":"\\ude00"}', b'{"remark":"\\ud83d\\u0041"}',
    b'{"remark":"\\x"}', b'{"remark":"\\u12"}', b'{"remark":"\\u12g4"}', b'{"remark":"\xff"}',
    b'{"remark":"\xed\xa0\x80"}', b'{"remark":"a\nb"}', b'{"remark":"a', b'{"remark":"a\\',
    b'{"code":1}x', b'{"code":1,}', b'{,}', b'{"code" 1}', b'{"code":1 "flag":2}', b'[1]',
    b'"s"', b'', b' ', b'{', b'{"code":nul}', b'{"code":1}{}', b'{"extFields":{"a":"b",}}',
    b'{"extFields":{"a" "b"}}', b'{"extFields":{a:"b"}}', b'\xef\xbb\xbf{"code":1}',
    # more digits than an int64 holds: read without overflow (the sanitized run checks)
    b'{"code":' + b"9" * 40 + b"}", b'{"opaque":-' + b"5" * 30 + b"}",
]


def test_usual_headers_are_read_without_python():
    calls, decode = _python_counted()
    for text in _USUAL:
        assert _outcome(decode, _frame(text)) == _outcome(F.python_decode_frame, _frame(text))
    assert calls == []


def test_unusual_headers_go_to_python_and_decode_as_it_does():
    calls, decode = _python_counted()
    for text in _UNUSUAL:
        assert _outcome(decode, _frame(text)) == _outcome(F.python_decode_frame, _frame(text))
        assert calls[-1:] == [_frame(text)]


_STRINGS = st.text(max_size=8) | st.sampled_from(["\x01", "\x02", "\ud800", "\udfff", "\u2028",
                                                   "😀", "\\", '"', "\x00", "é"])
_SCALARS = (st.none() | st.booleans() | st.integers(-2 ** 64, 2 ** 64) | _STRINGS
            | st.floats(allow_nan=False))


@settings(max_examples=1500)
@given(st.data())
def test_c_header_reader_equals_python_decoder(data):
    header = data.draw(st.fixed_dictionaries(
        {}, optional={
            "code": st.integers(-2 ** 31, 2 ** 31 - 1) | _SCALARS,
            "opaque": st.integers(-2 ** 31, 2 ** 31 - 1),
            "flag": st.sampled_from([0, 1, 2]),
            "extFields": st.none() | st.dictionaries(_STRINGS, _STRINGS | _SCALARS, max_size=6),
            "remark": st.none() | _STRINGS,
            "language": st.sampled_from(["JAVA", "CPP", "PYTHON"]) | _SCALARS,
            "version": st.just(399),
            "serializeTypeCurrentRPC": st.just("JSON") | _SCALARS,
            "x": _SCALARS | st.lists(_SCALARS, max_size=2)}))
    keys = data.draw(st.permutations(list(header)))
    text = json.dumps({key: header[key] for key in keys}, ensure_ascii=data.draw(st.booleans()),
                      indent=data.draw(st.sampled_from([None, 0, 2, "\t"])),
                      separators=data.draw(st.sampled_from([None, (",", ":"), (" , ", " : ")])))
    raw = text.encode("utf-8", "surrogatepass")
    if data.draw(st.booleans()):  # damaged: a byte changed, dropped or added
        at = data.draw(st.integers(0, len(raw)))
        byte = bytes([data.draw(st.sampled_from(b'{}[]",:\\ 0-.eu\x01\x80\xff'))])
        raw = raw[:at] + data.draw(st.sampled_from([byte, b""])) + raw[at + 1:]
    frame = _frame(raw)
    assert _outcome(F.decode_frame, frame) == _outcome(F.python_decode_frame, frame)


def test_c_header_reader_leaks_nothing():
    frames = [_frame(text) for text in _USUAL + _UNUSUAL]

    def run():
        for _ in range(300):
            for frame in frames:
                try:
                    F.decode_frame(frame)
                except CodecError:
                    pass

    assert_no_leak(run)
