"""The push consumer's core without a broker: consumed offsets, orderly hand-out and
suspension, the local offset file's text (as Java's ``LocalFileOffsetStore`` writes it),
the running info ``mqadmin consumerStatus`` reads, and the NOTIFY that rebalances."""

import json

import pytest

from rmqproto.client.config import PushConsumerConfig
from rmqproto.client.errors import ClientError
from rmqproto.client.lookup import run
from rmqproto.client.offsetfile import (
    decode_offset_table, encode_local_offsets, local_offsets_path, read_local_offsets,
    write_local_offsets)
from rmqproto.client.push import ConsumeStatus, ProcessQueue, PushCore, succeeded
from rmqproto.client.route import MessageQueue
from rmqproto.codec.codes import RequestCode
from rmqproto.codec.frame import RemotingCommand

QUEUE = MessageQueue("T", "broker-a", 1)


class Held:
    def __init__(self, offset, reconsume_times=0):
        self.queue_offset, self.reconsume_times, self.body = offset, reconsume_times, b"x"


def core(orderly=False, **settings):
    settings.setdefault("namesrvAddr", "ns:9876")
    c = PushCore(PushConsumerConfig(consumerGroup="g", **settings), "10.0.0.1@1#2", orderly=orderly)
    c.subscribe("T", "*", 1000)
    return c


def hold(c, offsets, next_offset):
    process_queue = c.process_queues.setdefault(QUEUE, ProcessQueue())
    messages = [Held(o) for o in offsets]
    process_queue.put(messages, next_offset)
    c.offsets[QUEUE] = process_queue.consumed_offset()
    return messages


def test_consumed_offset_is_the_smallest_held():
    c = core(messageModel="BROADCASTING")  # failures are dropped, nothing is sent
    m = hold(c, [5, 6, 7], 8)
    assert c.offsets[QUEUE] == 5
    assert run(c.consumed(QUEUE, [m[1]], "CONSUME_SUCCESS", 0), None) == ([], 0)
    assert c.offsets[QUEUE] == 5
    run(c.consumed(QUEUE, [m[0]], ConsumeStatus.RECONSUME_LATER, 0), None)
    assert c.offsets[QUEUE] == 7
    run(c.consumed(QUEUE, [m[2]], None, 0), None)
    assert c.offsets[QUEUE] == 8
    assert [succeeded(s) for s in ("SUCCESS", ConsumeStatus.CONSUME_SUCCESS, None, "RECONSUME_LATER")] == [
        True, True, False, False]


def test_orderly_one_batch_at_a_time_in_order_and_suspended():
    c = core(orderly=True, consumeMessageBatchMaxSize=2)
    hold(c, [9, 3, 4], 10)
    c.process_queues[QUEUE].locked, c.process_queues[QUEUE].lock_time = True, 0
    batch = c.take_orderly(QUEUE, 0)
    assert [m.queue_offset for m in batch] == [3, 4]
    assert c.take_orderly(QUEUE, 0) is None  # busy
    suspend, _ = run(c.orderly_done(QUEUE, batch, "SUSPEND_CURRENT_QUEUE_A_MOMENT", 0), None)
    assert suspend == 1000 and [m.reconsume_times for m in batch] == [1, 1]
    again = c.take_orderly(QUEUE, 0)
    assert again == batch
    assert run(c.orderly_done(QUEUE, again, "SUCCESS", 0), None) == (0, 0)
    assert c.offsets[QUEUE] == 9
    assert c.take_orderly(QUEUE, 40_000) is None  # the lock was not renewed for 30 s


def test_local_offset_file_as_java_writes_it(tmp_path):
    java = ('{"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:12,'
            '{"brokerName":"broker-b","queueId":0,"topic":"T"}:3}}')
    offsets = {QUEUE: 12, MessageQueue("T", "broker-b", 0): 3}
    assert decode_offset_table(java) == offsets and encode_local_offsets(offsets) == java
    config = PushConsumerConfig(consumerGroup="g", offsetStoreDir=str(tmp_path))
    path = local_offsets_path(config, "10.0.0.1@DEFAULT")
    assert path == str(tmp_path / "10.0.0.1@DEFAULT" / "g" / "offsets.json")
    assert read_local_offsets(path) == {}
    write_local_offsets(path, java)
    assert read_local_offsets(path) == offsets
    assert local_offsets_path(PushConsumerConfig(), "c", home="/h") == "/h/.rocketmq_offsets/c/DEFAULT_CONSUMER/offsets.json"


def test_serves_notify_and_running_info():
    c = core()
    hold(c, [4], 5)
    c.next_rebalance = 99
    other = RemotingCommand(int(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED), ext_fields={"consumerGroup": "x"})
    assert c.serve(other, 0) is None and c.next_rebalance == 99
    mine = RemotingCommand(int(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED), ext_fields={"consumerGroup": "g"})
    assert c.serve(mine, 0) is None and c.next_rebalance == 0
    asked = RemotingCommand(int(RequestCode.GET_CONSUMER_RUNNING_INFO),
                            ext_fields={"consumerGroup": "g", "clientId": c.client_id})
    body = c.serve(asked, 7).body.decode()
    standard = json.loads(body.replace('{"brokerName":"broker-a","queueId":1,"topic":"T"}:', '"q":'))
    assert standard["mqTable"]["q"]["commitOffset"] == 4
    assert standard["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
    assert [s["topic"] for s in standard["subscriptionSet"]] == ["%RETRY%g", "T"]
    asked = RemotingCommand(int(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT),
                            ext_fields={"topic": "T", "group": "g"})
    body = c.serve(asked, 7).body.decode()
    assert body == ('{"consumerTable":{},"messageQueueTable":'
                    '{{"brokerName":"broker-a","queueId":1,"topic":"T"}:4}}')


def test_refused_settings():
    with pytest.raises(ClientError):
        core(messageModel="ANYCAST")
    with pytest.raises(ClientError):
        core(allocateMessageQueueStrategy="NEAREST")


def test_reset_offsets_from_the_broker():
    c = core()
    old = c.process_queues[QUEUE] = ProcessQueue()
    hold(c, [4, 5], 6)
    c.committed[QUEUE] = 4
    body = encode_local_offsets({QUEUE: 1, MessageQueue("T", "broker-z", 0): 9}).encode()
    reset = RemotingCommand(int(RequestCode.RESET_CONSUMER_CLIENT_OFFSET), body=body, ext_fields={
        "topic": "T", "group": "g", "timestamp": "0", "isForce": "true"})
    assert c.serve(reset, 0) is None
    assert old.dropped and not c.process_queues[QUEUE].messages
    assert (c.positions[QUEUE], c.offsets[QUEUE]) == (1, 1)
    assert QUEUE not in c.committed and len(c.process_queues) == 1
