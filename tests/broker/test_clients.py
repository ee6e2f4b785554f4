"""Client tracking: heartbeats, NOTIFY_CONSUMER_IDS_CHANGED, unregistration, closed and idle
connections, GET_CONSUMER_LIST_BY_GROUP, and queue locks."""

from consume_support import Connection, Controller

from rmqproto.broker.clients import ConsumerTable, ProducerTable, ClientChannelInfo
from rmqproto.broker.rebalancelock import RebalanceLockManager
from rmqproto.codec import headers as h
from rmqproto.codec.bodies.client import (
    ConsumeType, ConsumerData, GetConsumerListByGroupResponseBody, HeartbeatData,
    LockBatchRequestBody, LockBatchResponseBody, MessageModel, MessageQueue, ProducerData,
    SubscriptionData, UnlockBatchRequestBody,
)
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R


def heartbeat(client_id, group="g", topics=("T",), producer=None):
    subs = [SubscriptionData.for_expression(t, "*", 1) for t in topics]
    consumers = [ConsumerData(group, ConsumeType.CONSUME_PASSIVELY, MessageModel.CLUSTERING,
                              subscription_data_set=subs)] if group else []
    producers = [ProducerData(producer)] if producer else []
    return HeartbeatData(client_id, producers, consumers).to_json()


def notified(connection):
    return [(r.code, r.ext_fields["consumerGroup"]) for r in connection.oneway]


def test_heartbeat_registers_and_notifies_members(tmp_path):
    broker = Controller(tmp_path)
    a, b = Connection("10.0.0.1:1"), Connection("10.0.0.2:1")
    assert broker.call(RC.HEART_BEAT, body=heartbeat("A"), connection=a).code == R.SUCCESS
    assert notified(a) == [(RC.NOTIFY_CONSUMER_IDS_CHANGED, "g")]
    assert broker.topic_config_manager.select_topic_config("%RETRY%g").read_queue_nums == 1
    broker.call(RC.HEART_BEAT, body=heartbeat("B"), connection=b)
    assert len(a.oneway) == 2 and len(b.oneway) == 1
    broker.call(RC.HEART_BEAT, body=heartbeat("A"), connection=a)  # nothing changed
    assert len(a.oneway) == 2
    response = broker.call(RC.GET_CONSUMER_LIST_BY_GROUP,
                           h.GetConsumerListByGroupRequestHeader(consumer_group="g"))
    assert GetConsumerListByGroupResponseBody.from_json(response.body).consumer_id_list == ["A", "B"]
    # a new subscription is a change too
    broker.call(RC.HEART_BEAT, body=heartbeat("B", topics=("T", "U")), connection=b)
    assert len(a.oneway) == 3
    assert broker.client_manager.find_subscription_data("g", "U").topic == "U"


def test_unregister_and_connection_lost(tmp_path):
    broker = Controller(tmp_path)
    a, b = Connection("10.0.0.1:1"), Connection("10.0.0.2:1")
    broker.call(RC.HEART_BEAT, body=heartbeat("A", producer="p"), connection=a)
    broker.call(RC.HEART_BEAT, body=heartbeat("B"), connection=b)
    header = h.UnregisterClientRequestHeader(client_id="B", consumer_group="g")
    assert broker.call(RC.UNREGISTER_CLIENT, header, connection=b).code == R.SUCCESS
    assert broker.client_manager.consumer_group_info("g").all_client_ids() == ["A"]
    assert notified(a)[-1] == (RC.NOTIFY_CONSUMER_IDS_CHANGED, "g")
    broker.client_manager.connection_lost(a)
    assert broker.client_manager.consumer_group_info("g") is None
    assert broker.client_manager.producers.group_count() == 0
    response = broker.call(RC.GET_CONSUMER_LIST_BY_GROUP,
                           h.GetConsumerListByGroupRequestHeader(consumer_group="g"))
    assert (response.code, response.remark) == (R.SYSTEM_ERROR, "no consumer for this group, g")


def test_idle_clients_expire_after_120_seconds(tmp_path):
    broker = Controller(tmp_path)
    broker.client_manager.start()
    a, b = Connection("10.0.0.1:1"), Connection("10.0.0.2:1")
    broker.call(RC.HEART_BEAT, body=heartbeat("A", producer="p"), connection=a)
    broker.reactor.advance(60)
    broker.call(RC.HEART_BEAT, body=heartbeat("B"), connection=b)
    broker.reactor.advance(70)  # A silent for 130 s, scanned at 10 s steps
    assert a.closed and not b.closed
    assert broker.client_manager.consumer_group_info("g").all_client_ids() == ["B"]
    assert broker.client_manager.producers.group_count() == 0
    broker.client_manager.stop()


def test_tables_are_pure():
    consumers, producers = ConsumerTable(), ProducerTable()
    info = ClientChannelInfo("conn", "A", last_update_timestamp=0)
    events = consumers.register_consumer("g", info, None, None, None, [], True, 0)
    assert events == [("g", ["conn"])]
    assert consumers.register_consumer("g", info, None, None, None, [], False, 1) == []
    producers.register_producer("p", ClientChannelInfo("conn", "A"), 0)
    assert producers.scan_not_active(120_000) == []
    assert [i.client_id for i in producers.scan_not_active(120_001)] == ["A"]
    assert consumers.scan_not_active(120_001) == []  # its heartbeat at 1 renewed it
    assert consumers.scan_not_active(120_002) == [info]


def test_lock_leases():
    locks = RebalanceLockManager()
    q0, q1 = MessageQueue("T", "b", 0), MessageQueue("T", "b", 1)
    assert locks.try_lock_batch("g", [q0, q1], "A", 0) == [q0, q1]
    assert locks.try_lock_batch("g", [q0, q1], "B", 59_000) == []
    assert locks.try_lock_batch("g", [q0], "A", 59_000) == [q0]  # renewed
    assert locks.try_lock_batch("g", [q0, q1], "B", 60_001) == [q1]  # q1's lease ran out
    locks.unlock_batch("g", [q0, q1], "A")  # A holds neither q1 nor ... q0 only
    assert locks.try_lock_batch("g", [q0, q1], "B", 60_002) == [q0, q1]


def test_lock_requests(tmp_path):
    broker = Controller(tmp_path)
    mqs = [MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)]
    body = LockBatchRequestBody("g", "A", mqs).to_json()
    response = broker.call(RC.LOCK_BATCH_MQ, body=body)
    assert LockBatchResponseBody.from_json(response.body).lock_ok_mq_set == mqs
    other = LockBatchRequestBody("g", "B", mqs).to_json()
    assert LockBatchResponseBody.from_json(broker.call(RC.LOCK_BATCH_MQ, body=other).body).lock_ok_mq_set == []
    unlock = UnlockBatchRequestBody("g", "A", mqs[:1]).to_json()
    assert broker.call(RC.UNLOCK_BATCH_MQ, body=unlock).code == R.SUCCESS
    assert LockBatchResponseBody.from_json(
        broker.call(RC.LOCK_BATCH_MQ, body=other).body).lock_ok_mq_set == mqs[:1]
