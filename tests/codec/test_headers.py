"""Typed custom headers against the 4.9.8 header classes."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqproto.codec import headers as H
from rmqproto.codec.codes import RequestCode
from rmqproto.codec.frame import (
    SERIALIZE_JSON, SERIALIZE_ROCKETMQ, RemotingCommand, decode_frame,
    encode_frame)
from rmqproto.errors import CodecError, MissingFieldError
from support.interop import load_vectors

SCHEMA = load_vectors("header_schema")
VECTORS = load_vectors("header_ext_fields")
FRAMES = {v["name"]: v for v in load_vectors("frame_command")}


def wire_values(header):
    """``{wire name: value}`` of the fields that are set, as the Java side records them."""
    return {f.wire: getattr(header, f.name) for f in header.all_fields
            if getattr(header, f.name) is not None}


# ---------------------------------------------------------------- declarations vs Java reflection

def test_every_java_class_is_declared():
    assert sorted(H.HEADER_CLASSES) == sorted(v["name"] for v in SCHEMA)


@pytest.mark.parametrize("vector", [pytest.param(v, id=v["name"]) for v in SCHEMA])
def test_declaration_matches_java_class(vector):
    cls = H.HEADER_CLASSES[vector["name"]]
    java = vector["fields"]
    assert cls.java_class == java["javaClass"]
    assert (cls.fast_fields is not None) == java["fast"]
    java_fields = [f for f in java["fields"] if not f["static"]]
    assert [(f.wire, f.java_type, f.required, f.declaring_class) for f in cls.all_fields] == [
        (f["name"], f["type"], f["required"], f["declaringClass"]) for f in java_fields]
    assert [f.default for f in cls.all_fields] == [f.get("initial") for f in java_fields]


# ---------------------------------------------------------------- 1. checked-in vectors

def _command_like(cmd, ext_fields):
    return RemotingCommand(cmd.code, opaque=cmd.opaque, flag=cmd.flag, ext_fields=ext_fields,
                           remark=cmd.remark, version=cmd.version,
                           serialize_type=cmd.serialize_type, body=cmd.body)


@pytest.mark.parametrize("vector", [pytest.param(v, id=v["name"]) for v in VECTORS])
def test_vector_decodes_and_reencodes(vector):
    data = bytes.fromhex(vector["hex"])
    cmd = decode_frame(data[4:])
    cls = H.HEADER_CLASSES[vector["fields"]["class"]]
    header = cls.from_ext_fields(cmd.ext_fields)
    assert wire_values(header) == vector["fields"]["values"]
    for field in cls.all_fields:  # what the class does not decode (V2's bname) the sender set
        if field.wire not in cls._decoded and field.wire in cmd.ext_fields:
            setattr(header, field.name, cmd.ext_fields[field.wire])
    ext = header.to_ext_fields(cmd.serialize_type)
    assert encode_frame(_command_like(cmd, ext)) == data


@pytest.mark.parametrize("serialize", ["json", "rocketmq"])
def test_extra_fields_of_a_send_response(serialize):
    data = bytes.fromhex(FRAMES[serialize + "_send_response_with_extra"]["hex"])
    cmd = decode_frame(data[4:])
    header = H.SendMessageResponseHeader(msg_id="C0A8000100002A9F0000000000000000",
                                         queue_id=3, queue_offset=42)
    ext = header.to_ext_fields(cmd.serialize_type,
                               extra={"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"})
    assert list(ext.items()) == list(cmd.ext_fields.items())
    assert encode_frame(_command_like(cmd, ext)) == data


@pytest.mark.parametrize("serialize", ["json", "rocketmq"])
def test_send_v2_frame(serialize):
    """JSON carries the inherited ``bname``; the binary fast encoder writes only a..n."""
    data = bytes.fromhex(FRAMES[serialize + "_send_v2_with_body"]["hex"])
    cmd = decode_frame(data[4:])
    header = H.SendMessageRequestHeaderV2.from_ext_fields(cmd.ext_fields)
    assert (header.topic, header.broker_name, header.bname) == ("TopicTest", "broker-a", None)
    header.bname = "broker-a"
    assert encode_frame(_command_like(cmd, header.to_ext_fields(cmd.serialize_type))) == data


# ---------------------------------------------------------------- 2. fresh vectors

@pytest.mark.parametrize("kind", ["header_schema", "header_ext_fields"])
def test_fresh_vectors_equal_checked_in(fresh_vectors, kind):
    assert fresh_vectors(kind) == load_vectors(kind)


# ---------------------------------------------------------------- strategies

_VALUES = {
    "String": st.text(min_size=1, max_size=12),
    "Integer": st.integers(-2 ** 31, 2 ** 31 - 1), "int": st.integers(-2 ** 31, 2 ** 31 - 1),
    "Long": st.integers(-2 ** 63, 2 ** 63 - 1), "long": st.integers(-2 ** 63, 2 ** 63 - 1),
    "Boolean": st.booleans(), "boolean": st.booleans(),
}
_CHECKED = {"commitOrRollback": st.sampled_from([8, 12]),  # 0 is valid only for EndTransaction
            "topicFilterType": st.sampled_from(["SINGLE_TAG", "MULTI_TAG"])}


def _value(field):
    value = _CHECKED.get(field.wire, _VALUES[field.java_type])
    if field.required or field.java_type.islower():
        return value
    return st.none() | value


@st.composite
def headers(draw, classes=tuple(H.HEADER_CLASSES.values())):
    cls = draw(st.sampled_from(sorted(classes, key=lambda c: c.__name__)))
    return cls(**{f.name: draw(_value(f)) for f in cls.all_fields})


def _decodable(header):
    """``header`` as decoding sees it: fields its class does not decode (V2's inherited
    ``bname``) and unset fields take their initial value."""
    cls = type(header)
    values = {}
    for f in cls.all_fields:
        value = getattr(header, f.name) if f.wire in cls._decoded else None
        values[f.name] = f.default if value is None else value
    return cls(**values)


# ---------------------------------------------------------------- 3. Java decodes ours

@settings(max_examples=3, deadline=None)
@given(st.lists(headers(), min_size=80, max_size=80), st.sampled_from([SERIALIZE_JSON,
                                                                        SERIALIZE_ROCKETMQ]))
def test_java_decodes_our_headers(java_interop, batch, serialize_type):
    frames = []
    for opaque, header in enumerate(batch):
        # the remark names the class for the Java decoder
        cmd = RemotingCommand(1000, opaque=opaque, serialize_type=serialize_type,
                              remark=type(header).__name__,
                              ext_fields=header.to_ext_fields(serialize_type))
        frames.append(encode_frame(cmd))
    answers = java_interop.decode("header_ext_fields", frames)
    for header, answer in zip(batch, answers):
        assert answer["fields"]["values"] == wire_values(_decodable(header)), header


# ---------------------------------------------------------------- 4. round trip

@settings(max_examples=300)
@given(headers(), st.sampled_from([SERIALIZE_JSON, SERIALIZE_ROCKETMQ]))
def test_round_trip(header, serialize_type):
    ext = header.to_ext_fields(serialize_type)
    decoded = type(header).from_ext_fields(ext)
    assert decoded == _decodable(header)
    assert decoded.to_ext_fields(serialize_type) == (
        ext if header == _decodable(header) else decoded.to_ext_fields(serialize_type))
    frame = encode_frame(RemotingCommand(1, ext_fields=ext, serialize_type=serialize_type))
    assert type(header).from_ext_fields(decode_frame(frame[4:]).ext_fields) == decoded


# ---------------------------------------------------------------- 5. fuzz

_TEXTS = st.text(max_size=8) | st.sampled_from(
    ["", " 1", "1 ", "+1", "-0", "1_000", "0x10", "٣", "9" * 30, "true", "TRUE", "NaN", "1e3"])


@settings(max_examples=300)
@given(st.sampled_from(sorted(H.HEADER_CLASSES)), st.data())
def test_random_ext_fields_raise_only_codec_errors(name, data):
    cls = H.HEADER_CLASSES[name]
    wires = [f.wire for f in cls.all_fields] + ["other"]
    ext = data.draw(st.dictionaries(st.sampled_from(wires), st.none() | _TEXTS))
    try:
        header = cls.from_ext_fields(ext)
    except CodecError:
        return
    assert cls.from_ext_fields(header.to_ext_fields()) == header


# ---------------------------------------------------------------- Java parsing rules

@pytest.mark.parametrize("text, value", [("+5", 5), ("-0", 0), ("٣", 3), ("2147483647", 2 ** 31 - 1)])
def test_integer_parsing_accepts_what_java_accepts(text, value):
    header = H.GetMaxOffsetRequestHeader.from_ext_fields({"topic": "T", "queueId": text})
    assert header.queue_id == value


@pytest.mark.parametrize("text", ["", " 1", "1 ", "1_0", "0x1", "2147483648", "1.0", "abc"])
def test_unparsable_integer_is_a_codec_error(text):
    with pytest.raises(CodecError, match="queueId"):
        H.GetMaxOffsetRequestHeader.from_ext_fields({"topic": "T", "queueId": text})


def test_boolean_parsing_never_fails():
    parse = H.QueryDataVersionResponseHeader.from_ext_fields
    assert parse({"changed": "TRUE"}).changed is True
    assert parse({"changed": "yes"}).changed is False


def test_missing_required_field():
    with pytest.raises(MissingFieldError, match="queueId"):
        H.GetMaxOffsetRequestHeader.from_ext_fields({"topic": "T"})
    with pytest.raises(MissingFieldError):
        H.GetMaxOffsetRequestHeader.from_ext_fields(None)


def test_optional_fields_take_java_initial_values():
    header = H.RegisterBrokerRequestHeader.from_ext_fields(
        {"brokerName": "b", "brokerAddr": "a:1", "clusterName": "c", "haServerAddr": "a:2",
         "brokerId": "0"})
    assert (header.compressed, header.body_crc32) == (False, 0)
    assert header.to_ext_fields()["compressed"] == "false"


def test_class_checks():
    base = {"producerGroup": "g", "tranStateTableOffset": "1", "commitLogOffset": "2",
            "msgId": "m"}
    assert H.EndTransactionRequestHeader.from_ext_fields(
        dict(base, commitOrRollback="8")).from_transaction_check is False
    with pytest.raises(CodecError, match="commitOrRollback"):
        H.EndTransactionRequestHeader.from_ext_fields(dict(base, commitOrRollback="4"))
    with pytest.raises(CodecError, match="topicFilterType"):
        H.CreateTopicRequestHeader(
            topic="T", default_topic="TBW102", read_queue_nums=1, write_queue_nums=1, perm=6,
            topic_filter_type="BAD").__class__.from_ext_fields(
                {"topic": "T", "defaultTopic": "D", "readQueueNums": "1", "writeQueueNums": "1",
                 "perm": "6", "topicFilterType": "BAD", "order": "false"})


def test_encoding_rejects_values_java_cannot_hold():
    with pytest.raises(CodecError):
        H.GetMaxOffsetRequestHeader(topic="T", queue_id=2 ** 31).to_ext_fields()
    with pytest.raises(CodecError):
        H.QueryDataVersionResponseHeader(changed=1).to_ext_fields()


def _decoded_field_by_field(cls, ext_fields):
    """What ``from_ext_fields`` does, one declared field at a time (the written-out decoder's
    reference): ``({attribute: value}, None)`` or ``(None, (error type, message))``."""
    values = {}
    for field in cls.all_fields:
        text = (ext_fields or {}).get(field.wire) if field.wire in cls._decoded else None
        if text is None:
            if field.required and field.wire in cls._decoded:
                return None, (MissingFieldError, "the custom field <%s> of %s is null"
                              % (field.wire, cls.__name__))
            values[field.name] = field.default
            continue
        try:
            values[field.name] = field.type.parse(text)
        except (ValueError, TypeError, AttributeError):
            return None, (CodecError, "the custom field <%s> of %s is not a valid %s: %r"
                          % (field.wire, cls.__name__, field.java_type, text))
    return values, None


_DECODED_CLASSES = sorted(H.HEADER_CLASSES.values(), key=lambda cls: cls.__name__)


@settings(max_examples=400)
@given(st.data())
def test_written_out_decoders_equal_field_by_field_decoding(data):
    cls = data.draw(st.sampled_from(_DECODED_CLASSES))
    wires = [f.wire for f in cls.all_fields] + ["other"]
    ext = data.draw(st.none() | st.dictionaries(
        st.sampled_from(wires), st.none() | _TEXTS | st.sampled_from(
            ["0", "-1", "2147483648", "true", "FALSE", "1.5", "x"])))
    expected, error = _decoded_field_by_field(cls, ext)
    try:
        header = cls._decode(ext)
    except CodecError as exc:
        assert (type(exc), str(exc)) == error
        assert exc.__context__ is None or exc.__suppress_context__  # no "during handling"
        return
    assert error is None
    assert {f.name: getattr(header, f.name) for f in cls.all_fields} == expected


@settings(max_examples=300)
@given(st.data())
def test_v2_decodes_straight_to_v1_as_through_v2(data):
    wires = [f.wire for f in H.SendMessageRequestHeaderV2.all_fields] + ["other"]
    ext = data.draw(st.dictionaries(st.sampled_from(wires), st.none() | _TEXTS)
                    | headers([H.SendMessageRequestHeaderV2]).map(
                        lambda header: header.to_ext_fields(SERIALIZE_ROCKETMQ)))
    try:
        expected = H.SendMessageRequestHeaderV2.from_ext_fields(ext).to_v1()
    except CodecError as exc:
        with pytest.raises(type(exc), match=re.escape(str(exc))):
            H.SendMessageRequestHeaderV2.v1_from_ext_fields(ext)
        return
    assert H.SendMessageRequestHeaderV2.v1_from_ext_fields(ext) == expected


def test_send_header_conversion_follows_java():
    v1 = H.SendMessageRequestHeader(
        producer_group="g", topic="T", default_topic="TBW102", default_topic_queue_nums=4,
        queue_id=1, sys_flag=0, born_timestamp=1, flag=0, max_reconsume_times=16, batch=True,
        bname="broker-a")
    v2 = v1.to_v2()
    assert (v2.broker_name, v2.bname, v2.batch, v2.max_reconsume_times) == ("broker-a", None, True, 16)
    assert v2.to_ext_fields(SERIALIZE_ROCKETMQ)["n"] == "broker-a"
    assert v2.to_v1() == v1


def test_code_lookup():
    assert H.request_header_class(RequestCode.SEND_MESSAGE_V2) is H.SendMessageRequestHeaderV2
    assert H.request_header_class(320) is H.SendMessageRequestHeaderV2
    assert H.request_header_class(RequestCode.UPDATE_AND_CREATE_TOPIC) is H.CreateTopicRequestHeader
    assert H.request_header_class(50001) is None
    assert H.response_header_class(RequestCode.PULL_MESSAGE) is H.PullMessageResponseHeader
    assert H.response_header_class(RequestCode.HEART_BEAT) is None


@pytest.mark.parametrize("value, text", [
    (1.0, "1.0"), (0.001, "0.001"), (1e-4, "1.0E-4"), (1e7, "1.0E7"), (9999999.0, "9999999.0"),
    (-1.5e300, "-1.5E300"), (123.456, "123.456"), (float("nan"), "NaN"),
    (float("-inf"), "-Infinity"), (-0.0, "-0.0"), (5e-324, "4.9E-324")])
def test_double_fields_format_like_java(value, text):
    double = H.Field("ratio", "Double").type
    assert double.format(value) == text
    assert double.parse(text) == value or value != value


@pytest.mark.parametrize("cls,valid", [(H.EndTransactionRequestHeader, (0, 8, 12)),
                                       (H.CheckTransactionStateResponseHeader, (8, 12))])
def test_commit_or_rollback_checks_match_java(cls, valid):
    base = {f.wire: "1" for f in cls.all_fields if f.required}
    for value in range(-1, 14):
        ext = dict(base, commitOrRollback=str(value))
        if value in valid:
            assert cls.from_ext_fields(ext).commit_or_rollback == value
        else:
            with pytest.raises(CodecError, match="commitOrRollback field wrong"):
                cls.from_ext_fields(ext)
