"""INVOKE_BROKER_TO_RESET_OFFSET (``mqadmin resetOffsetByTime``): offsets by time, sent to every
online consumer of the group with RESET_CONSUMER_CLIENT_OFFSET, as ``Broker2Client#resetOffset``."""

from consume_support import Connection, Controller, result_of
from test_clients import heartbeat

from rmqproto.codec import headers as h
from rmqproto.codec.bodies.client import MessageQueue
from rmqproto.codec.bodies.offsets import ResetOffsetBody, ResetOffsetBodyForC
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.message import MessageRecord


def broker_with_messages(tmp_path):
    broker = Controller(tmp_path)
    broker.topic("T", queues=2)
    for i in range(6):
        result_of(broker.store.put_message(MessageRecord("T", b"m%d" % i, {}, queue_id=i % 2)))
        broker.reactor.advance(1)
    for queue_id in (0, 1):
        broker.consumer_offset_manager.commit_offset("g", "T", queue_id, 2)
    return broker


def reset(broker, timestamp, force):
    return broker.call(RC.INVOKE_BROKER_TO_RESET_OFFSET, h.ResetOffsetRequestHeader(
        topic="T", group="g", timestamp=timestamp, is_force=force))


def offsets(body):
    return {q.queue_id: offset for q, offset in body.offset_table.items()}


def test_reset_to_a_time_tells_every_consumer(tmp_path):
    broker = broker_with_messages(tmp_path)
    java, cpp = Connection("10.0.0.1:1"), Connection("10.0.0.2:1")
    broker.call(RC.HEART_BEAT, body=heartbeat("J", topics=("T",)), connection=java)
    broker.call(RC.HEART_BEAT, body=heartbeat("C", topics=("T",)), connection=cpp)
    broker.client_manager.consumer_group_info("g").channel_info_table[cpp].language = "CPP"
    answer = reset(broker, 0, force=True)
    assert answer.code == R.SUCCESS
    assert offsets(ResetOffsetBody.from_json(answer.body)) == {0: 0, 1: 0}
    told = [r for r in java.oneway if r.code == RC.RESET_CONSUMER_CLIENT_OFFSET]
    assert offsets(ResetOffsetBody.from_json(told[0].body)) == {0: 0, 1: 0}
    assert told[0].ext_fields["group"] == "g" and told[0].ext_fields["timestamp"] == "0"
    told_cpp = [r for r in cpp.oneway if r.code == RC.RESET_CONSUMER_CLIENT_OFFSET]
    body = ResetOffsetBodyForC.from_json(told_cpp[0].body)
    assert sorted((q.queue_id, q.offset, q.broker_name) for q in body.offset_table) == [
        (0, 0, "broker-a"), (1, 0, "broker-a")]


def test_without_force_a_group_only_moves_back(tmp_path):
    broker = broker_with_messages(tmp_path)
    broker.call(RC.HEART_BEAT, body=heartbeat("J", topics=("T",)), connection=Connection())
    assert offsets(ResetOffsetBody.from_json(reset(broker, -1, force=False).body)) == {0: 2, 1: 2}
    assert offsets(ResetOffsetBody.from_json(reset(broker, -1, force=True).body)) == {0: 3, 1: 3}
    assert MessageQueue("T", "broker-a", 0) in ResetOffsetBody.from_json(
        reset(broker, 0, force=False).body).offset_table


def test_refusals(tmp_path):
    broker = broker_with_messages(tmp_path)
    answer = reset(broker, 0, force=True)  # nobody online
    assert answer.code == R.CONSUMER_NOT_ONLINE
    assert answer.remark == ("Consumer not online, so can not reset offset, Group: g Topic: T "
                             "Timestamp: 0")
    old = Connection()
    broker.call(RC.HEART_BEAT, body=heartbeat("Old", topics=("T",)), connection=old, version=10)
    answer = reset(broker, 0, force=True)
    assert answer.code == R.SYSTEM_ERROR and answer.remark.startswith(
        "the client does not support this feature. version=V3_0_0_BETA")
    answer = broker.call(RC.INVOKE_BROKER_TO_RESET_OFFSET, h.ResetOffsetRequestHeader(
        topic="Nope", group="g", timestamp=0, is_force=True))
    assert answer.remark == "[reset-offset] reset offset failed, no topic in this broker. topic=Nope"
    answer = broker.call(RC.INVOKE_BROKER_TO_RESET_OFFSET, h.ResetOffsetRequestHeader(
        topic="T", group="stranger", timestamp=0, is_force=True))
    assert (answer.code, answer.remark) == (R.SYSTEM_ERROR, "THe consumer group <stranger> not exist")
