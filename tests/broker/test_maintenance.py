"""GET_SYSTEM_TOPIC_LIST_FROM_BROKER, CLEAN_UNUSED_TOPIC and CLONE_GROUP_OFFSET on the consume
side's controller with its in-memory store."""

import pytest
from consume_support import Connection, Controller
from test_pull import put

from rmqproto.broker.processors.maintenance import MaintenanceProcessor
from rmqproto.codec import headers as h
from rmqproto.codec.bodies.client import (
    ConsumeType, ConsumerData, HeartbeatData, MessageModel, SubscriptionData,
)
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
