"""GET_SYSTEM_TOPIC_LIST_FROM_BROKER, CLEAN_UNUSED_TOPIC, CLONE_GROUP_OFFSET,
CLEAN_EXPIRED_CONSUMEQUEUE and QUERY_CONSUME_QUEUE on the consume side's controller with its
in-memory store."""

import pytest
from consume_support import Connection, Controller
from test_pull import put

from rmqproto.broker.processors.maintenance import MaintenanceProcessor
from rmqproto.codec import headers as h
from rmqproto.codec.bodies.client import (
    ConsumeType, ConsumerData, HeartbeatData, MessageModel, SubscriptionData,
)
from rmqproto.codec.bodies.queue import QueryConsumeQueueResponseBody
from rmqproto.codec.bodies.route import TopicList
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R


@pytest.fixture
def broker(tmp_path):
    broker = Controller(tmp_path, brokerClusterName="ClusterX")
    MaintenanceProcessor(broker).register_with(broker.dispatcher)
    for topic in ("T", "U"):
        broker.topic(topic)
    return broker


def test_system_topics_are_javas_and_the_brokers_own(broker):
    answer = broker.call(RC.GET_SYSTEM_TOPIC_LIST_FROM_BROKER)
    topics = set(TopicList.from_json(answer.body).topic_list)
    assert {"TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "OFFSET_MOVED_EVENT",
            "ClusterX", "broker-a"} <= topics
    assert "T" not in topics


def test_clean_unused_topic_hands_the_configured_topics_to_the_store(broker, monkeypatch):
    kept = []
    monkeypatch.setattr(broker.store, "clean_unused_topic", kept.append, raising=False)
    assert broker.call(RC.CLEAN_UNUSED_TOPIC).code == R.SUCCESS
    assert kept == [set(broker.topic_config_manager.topic_config_table)]


def clone(broker, topic=None, offline=False):
    header = h.CloneGroupOffsetRequestHeader(src_group="src", dest_group="dest", topic=topic,
                                             offline=offline)
    assert broker.call(RC.CLONE_GROUP_OFFSET, header).code == R.SUCCESS
    return {t: broker.consumer_offset_manager.query_offsets("dest", t) for t in ("T", "U", "Gone")}


def test_clone_one_topic_or_all_of_the_groups(broker):
    offsets = broker.consumer_offset_manager
    for topic, offset in (("T", 3), ("U", 5), ("Gone", 7)):
        offsets.commit_offset("src", topic, 0, offset)
    assert clone(broker, "T") == {"T": {0: 3}, "U": None, "Gone": None}
    assert clone(broker) == {"T": {0: 3}, "U": {0: 5}, "Gone": None}  # no config: skipped


def test_clone_skips_topics_an_online_group_no_longer_subscribes(broker):
    put(broker)
    for topic in ("T", "U"):
        broker.consumer_offset_manager.commit_offset("src", topic, 0, 1)
    sub = SubscriptionData.for_expression("T", "*")
    beat = HeartbeatData("c", [], [ConsumerData("src", ConsumeType.CONSUME_PASSIVELY,
                                                MessageModel.CLUSTERING, subscription_data_set=[sub])])
    broker.call(RC.HEART_BEAT, body=beat.to_json(), connection=Connection())
    assert clone(broker) == {"T": {0: 1}, "U": None, "Gone": None}
    assert clone(broker, offline=True)["U"] == {0: 1}


def test_clean_expired_consume_queue_asks_the_store(broker):
    assert broker.call(RC.CLEAN_EXPIRED_CONSUMEQUEUE).code == R.SUCCESS
    assert broker.store.expired_queue_cleanings == 1


def query_cq(broker, index=0, count=10, topic="T", queue_id=0, group=None):
    header = h.QueryConsumeQueueRequestHeader(topic=topic, queue_id=queue_id, index=index,
                                              count=count, consumer_group=group)
    return broker.call(RC.QUERY_CONSUME_QUEUE, header)


def test_query_consume_queue_units_and_bounds(broker):
    for tags in ("TagA", "TagB", None):
        put(broker, tags=tags)
    answer = query_cq(broker, index=1, count=5)
    assert answer.code == R.SUCCESS
    body = QueryConsumeQueueResponseBody.from_json(answer.body)
    assert (body.min_queue_index, body.max_queue_index) == (0, 3)
    assert body.subscription_data is None and body.filter_data is None
    units = broker.store.queues["T", 0]
    assert [(u.physic_offset, u.physic_size, u.tags_code, u.eval) for u in body.queue_data] == [
        (*units[1], False), (*units[2], False)]
    assert [u.tags_code for u in QueryConsumeQueueResponseBody.from_json(
        query_cq(broker, count=1).body).queue_data] == [units[0][2]]


def test_query_consume_queue_of_a_group_and_what_is_not_there(broker):
    put(broker)
    offline = QueryConsumeQueueResponseBody.from_json(query_cq(broker, group="g").body)
    assert (offline.subscription_data, offline.filter_data) == (None, "g@T is not online!")
    sub = SubscriptionData.for_expression("T", "TagA")
    beat = HeartbeatData("c", [], [ConsumerData("g", ConsumeType.CONSUME_PASSIVELY,
                                                MessageModel.CLUSTERING, subscription_data_set=[sub])])
    broker.call(RC.HEART_BEAT, body=beat.to_json(), connection=Connection())
    online = QueryConsumeQueueResponseBody.from_json(query_cq(broker, group="g").body)
    assert (online.subscription_data, online.filter_data) == (sub, "null")
    missing = query_cq(broker, index=1)
    assert (missing.code, missing.remark, missing.body) == (
        R.SUCCESS, "Index 1 of 0@T is not exist!", b"")
    no_queue = query_cq(broker, queue_id=3)
    assert (no_queue.code, no_queue.remark) == (R.SYSTEM_ERROR, "3@T is not exist!")
    assert query_cq(broker, topic=None).code == R.SYSTEM_ERROR
