"""The topic table: Java's system topics, auto-creation, data versions, topics.json."""

import json

from twisted.logger import globalLogPublisher

from rmqproto.broker.topicconfig import TopicConfigManager, topic_config_string, validate_topic
from rmqproto.codec.bodies.topic import TopicConfig, TopicConfigSerializeWrapper
from support.mounts import read_only
from brokerkit import broker_config, make_controller

# name -> (read, write, perm) as TopicConfigManager 4.9.x creates them
SYSTEM_TOPICS = {
    "SELF_TEST_TOPIC": (1, 1, 6), "TBW102": (8, 8, 7), "BenchmarkTest": (1024, 1024, 6),
    "DefaultCluster": (16, 16, 7), "broker-a": (1, 1, 7), "OFFSET_MOVED_EVENT": (1, 1, 6),
    "SCHEDULE_TOPIC_XXXX": (18, 18, 6), "DefaultCluster_REPLY_TOPIC": (1, 1, 6),
}


def table(manager):
    return {name: (tc.read_queue_nums, tc.write_queue_nums, tc.perm)
            for name, tc in manager.topic_config_table.items()}


def test_system_topics(tmp_path):
    assert table(make_controller(tmp_path).topic_config_manager) == SYSTEM_TOPICS


def test_system_topics_follow_the_settings(tmp_path):
    manager = make_controller(tmp_path, autoCreateTopicEnable="false", clusterTopicEnable="false",
                              brokerTopicEnable="false", traceTopicEnable="true").topic_config_manager
    topics = table(manager)
    assert "TBW102" not in topics
    assert topics["DefaultCluster"][2] == topics["broker-a"][2] == 1
    assert topics["RMQ_SYS_TRACE_TOPIC"] == (1, 1, 6)
    assert manager.is_system_topic("broker-a") and manager.is_system_topic("rmq_sys_x")
    assert not manager.is_system_topic("TopicA")


def test_created_topic_takes_min_of_client_and_default_queues(tmp_path):
    manager = make_controller(tmp_path).topic_config_manager
    created = manager.create_topic_in_send_message_method("A", "TBW102", "peer", 16, 0)
    assert (created.read_queue_nums, created.write_queue_nums, created.perm) == (8, 8, 6)
    assert manager.create_topic_in_send_message_method("B", "Missing", "peer", 4, 0) is None
    assert manager.create_topic_in_send_message_method("C", "SELF_TEST_TOPIC", "peer", 4, 0) is None


def test_changes_bump_the_data_version_and_persist(tmp_path):
    controller = make_controller(tmp_path)
    manager = controller.topic_config_manager
    start = manager.data_version.counter
    controller.reactor.advance(5)
    manager.update_topic_config(TopicConfig("T1", 2, 3))
    assert manager.data_version.counter == start + 1
    assert manager.data_version.timestamp == int(controller.reactor.seconds() * 1000)
    saved = json.loads((tmp_path / "store" / "config" / "topics.json").read_text())
    assert saved["dataVersion"]["counter"] == start + 1
    assert saved["topicConfigTable"]["T1"]["writeQueueNums"] == 3
    assert manager.delete_topic_config("T1") and not manager.delete_topic_config("T1")
    assert (tmp_path / "store" / "config" / "topics.json.bak").exists()


def test_topics_json_is_reloaded_over_the_system_topics(tmp_path):
    controller = make_controller(tmp_path)
    controller.topic_config_manager.update_topic_config(TopicConfig("T1", 2, 3, order=True))
    version = controller.topic_config_manager.data_version
    reloaded = TopicConfigManager(broker_config(tmp_path), controller.reactor,
                                  controller.topic_config_manager.path)
    assert reloaded.load()
    assert reloaded.select_topic_config("T1") == TopicConfig("T1", 2, 3, order=True)
    assert reloaded.data_version == version
    assert "TBW102" in reloaded.topic_config_table


def test_corrupt_topics_json_falls_back_to_the_backup(tmp_path):
    controller = make_controller(tmp_path)
    manager = controller.topic_config_manager
    manager.update_topic_config(TopicConfig("T1"))
    manager.update_topic_config(TopicConfig("T2"))
    with open(manager.path, "w") as fh:
        fh.write("{not json")
    reloaded = TopicConfigManager(broker_config(tmp_path), controller.reactor, manager.path)
    assert reloaded.load()
    assert "T1" in reloaded.topic_config_table and "T2" not in reloaded.topic_config_table


def test_java_reads_our_topics_json(tmp_path):
    manager = make_controller(tmp_path).topic_config_manager
    wrapper = TopicConfigSerializeWrapper.from_json(manager.encode())
    assert wrapper.topic_config_table == manager.topic_config_table


def test_order_topics_follow_the_nameserver_table(tmp_path):
    manager = make_controller(tmp_path).topic_config_manager
    manager.update_topic_config(TopicConfig("Ordered"))
    manager.update_order_topic_config({"Ordered": "broker-a:4"})
    assert manager.is_order_topic("Ordered")
    manager.update_order_topic_config({})
    assert not manager.is_order_topic("Ordered")


def test_validate_topic_and_to_string():
    assert validate_topic("%RETRY%group|x-1_") is None
    assert validate_topic("") == "The specified topic is blank."
    assert topic_config_string(TopicConfig("T", 1, 2, 2)) == (
        "TopicConfig [topicName=T, readQueueNums=1, writeQueueNums=2, perm=-W-, "
        "topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false]")


def test_a_topics_json_that_cannot_be_saved_is_a_log_line(tmp_path):
    """A read-only config directory: the change is kept in memory, the file is left as it
    was, the failure is logged (as Java's ``ConfigManager.persist``), nothing raises."""
    controller = make_controller(tmp_path)
    manager = controller.topic_config_manager
    manager.update_topic_config(TopicConfig("T1", 2, 3))
    path = tmp_path / "store" / "config" / "topics.json"
    before = path.read_bytes()
    events = []
    globalLogPublisher.addObserver(events.append)
    try:
        with read_only(path.parent):
            manager.update_topic_config(TopicConfig("T2", 2, 3))
    finally:
        globalLogPublisher.removeObserver(events.append)
    assert "T2" in manager.topic_config_table
    assert path.read_bytes() == before
    assert not (path.parent / "topics.json.tmp").exists()
    assert any(event.get("log_format", "").startswith("persist file") for event in events)
