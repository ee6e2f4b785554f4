"""Java enums written as ordinals, as the C++ client writes them in its heartbeats: fastjson
(and so the Java broker) reads an integer as the constant's ordinal, and so do we."""

import json

import pytest

from rmqproto.codec import bodies as B
from rmqproto.codec.bodies._bean import EnumOf
from rmqproto.errors import CodecError

#: A heartbeat the way the C++ client (rocketmq-client-cpp 2.x) writes it: enums as numbers.
CPP_HEARTBEAT = json.dumps({
    "clientID": "127.0.0.1@4242#1",
    "consumerDataSet": [{
        "consumeFromWhere": 4, "consumeType": 1, "groupName": "cpp_group", "messageModel": 1,
        "subscriptionDataSet": [{
            "classFilterMode": False, "codeSet": [2598919], "expressionType": "TAG",
            "subString": "TagC", "subVersion": 1700000000000, "tagsSet": ["TagC"], "topic": "T"}],
        "unitMode": False}],
    "producerDataSet": [{"groupName": "cpp_group_producer"}],
}).encode()


def test_ordinals_decode_to_the_java_constants():
    data = B.HeartbeatData.from_json(CPP_HEARTBEAT)
    consumer = data.consumer_data_set[0]
    assert consumer.consume_from_where == B.ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    assert consumer.consume_type == B.ConsumeType.CONSUME_PASSIVELY
    assert consumer.message_model == B.MessageModel.CLUSTERING
    # written back by name, as fastjson writes enums
    assert b'"consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET"' in data.to_json()


@pytest.mark.parametrize("enum_class", [B.ConsumeType, B.MessageModel, B.ConsumeFromWhere,
                                        B.TopicFilterType])
def test_every_ordinal_is_the_constant_in_declaration_order(enum_class):
    decoder = EnumOf(enum_class)
    for ordinal, constant in enumerate(enum_class):
        assert decoder.decode(ordinal, "x") is constant
    for bad in (-1, len(enum_class), True, 1.0):
        with pytest.raises(CodecError):
            decoder.decode(bad, "x")


@pytest.mark.java
def test_java_reads_the_cpp_heartbeat_as_we_do(java_interop):
    [answer] = java_interop.decode("body_heartbeat", [CPP_HEARTBEAT])
    assert "error" not in answer, answer
    consumer = answer["fields"]["consumerDataSet"][0]
    ours = B.HeartbeatData.from_json(CPP_HEARTBEAT).consumer_data_set[0]
    assert consumer["consumeFromWhere"] == ours.consume_from_where.value
    assert consumer["consumeType"] == ours.consume_type.value
    assert consumer["messageModel"] == ours.message_model.value
