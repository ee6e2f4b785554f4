"""Topic administration, broker information and queries, on an in-memory store."""

import os

import pytest

from rmqproto.codec import headers as h
from rmqproto.codec.bodies.offsets import TopicStatsTable
from rmqproto.codec.bodies.route import KVTable
from rmqproto.codec.bodies.topic import DataVersion, TopicConfigSerializeWrapper
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.message import decode_record
from rmqproto.config import parse_properties
from brokerkit import call, make_controller
from test_send import send


@pytest.fixture
def broker(tmp_path):
    return make_controller(tmp_path)


def create_topic(broker, topic="AdminTopic", **kw):
    values = dict(topic=topic, default_topic="TBW102", read_queue_nums=2, write_queue_nums=3,
                  perm=6, topic_filter_type="MULTI_TAG", topic_sys_flag=None, order=False)
    values.update(kw)
    return call(broker, RC.UPDATE_AND_CREATE_TOPIC, h.CreateTopicRequestHeader(**values).to_ext_fields())


def test_update_and_create_topic(broker):
    version = broker.topic_config_manager.data_version.counter
    assert create_topic(broker).code == R.SUCCESS
    topic_config = broker.topic_config_manager.select_topic_config("AdminTopic")
    assert (topic_config.read_queue_nums, topic_config.write_queue_nums) == (2, 3)
    assert topic_config.topic_filter_type == "MULTI_TAG" and topic_config.topic_sys_flag == 0
    assert broker.topic_config_manager.data_version.counter == version + 1


@pytest.mark.parametrize("topic, remark", [
    ("TBW102", "The topic[TBW102] is conflict with system topic."),
    ("broker-a", "The topic[broker-a] is conflict with system topic."),
    ("rmq_sys_x", "The topic[rmq_sys_x] is conflict with system topic."),
    ("a b", "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"),
])
def test_update_and_create_topic_refuses(broker, topic, remark):
    answer = create_topic(broker, topic)
    assert (answer.code, answer.remark) == (R.SYSTEM_ERROR, remark)


@pytest.mark.parametrize("read, write, ok", [
    (0, 0, True), (65536, 65536, True), (8, 0, True), (-1, 8, False), (8, 65537, False),
    (2147483647, 2147483647, False)])
def test_update_and_create_topic_queue_nums(broker, read, write, ok):
    """Beyond Java, which takes any int: a count every stats query would walk for ever is
    refused, and the topic stays as it was."""
    answer = create_topic(broker, read_queue_nums=read, write_queue_nums=write)
    if ok:
        assert answer.code == R.SUCCESS
        assert call(broker, RC.GET_TOPIC_STATS_INFO, {"topic": "AdminTopic"}).code == R.SUCCESS
    else:
        assert (answer.code, answer.remark) == (
            R.SYSTEM_ERROR, "readQueueNums and writeQueueNums must be within 0..65536, got "
            "%d and %d" % (read, write))
        assert broker.topic_config_manager.select_topic_config("AdminTopic") is None


def test_bad_topic_filter_type_is_a_system_error(broker):
    ext = h.CreateTopicRequestHeader(topic="T", default_topic="TBW102", read_queue_nums=1,
                                     write_queue_nums=1, perm=6, topic_filter_type="SINGLE_TAG",
                                     order=False).to_ext_fields()
    ext["topicFilterType"] = "NO_TAG"
    assert call(broker, RC.UPDATE_AND_CREATE_TOPIC, ext).code == R.SYSTEM_ERROR


def test_slave_refuses_topic_changes(tmp_path):
    slave = make_controller(tmp_path, brokerRole="SLAVE", brokerId="2")
    answer = create_topic(slave)
    assert answer.code == R.SYSTEM_ERROR and answer.remark.startswith("Can't modify topic")


def test_get_all_topic_config(broker):
    create_topic(broker)
    wrapper = TopicConfigSerializeWrapper.from_json(call(broker, RC.GET_ALL_TOPIC_CONFIG).body)
    assert wrapper.topic_config_table == broker.topic_config_manager.topic_config_table
    assert wrapper.data_version == broker.topic_config_manager.data_version


def test_offsets_and_store_times(broker):
    for _ in range(3):
        send(broker, topic="TBW102", queue_id=2)
    queue = {"topic": "TBW102", "queueId": "2"}
    assert call(broker, RC.GET_MAX_OFFSET, queue).ext_fields == {"offset": "3"}
    assert call(broker, RC.GET_MIN_OFFSET, queue).ext_fields == {"offset": "0"}
    assert call(broker, RC.SEARCH_OFFSET_BY_TIMESTAMP, dict(queue, timestamp="0")).ext_fields == {
        "offset": "0"}
    stamp = broker.store.records("TBW102", 2)[0].store_timestamp
    assert call(broker, RC.GET_EARLIEST_MSG_STORETIME, queue).ext_fields == {"timestamp": str(stamp)}
    assert call(broker, RC.GET_MAX_OFFSET, {"topic": "TBW102"}).code == R.SYSTEM_ERROR


def test_topic_stats(broker):
    send(broker, topic="TBW102", queue_id=1)
    stats = TopicStatsTable.from_json(call(broker, RC.GET_TOPIC_STATS_INFO, {"topic": "TBW102"}).body)
    by_queue = {mq.queue_id: offsets for mq, offsets in stats.offset_table.items()}
    assert sorted(by_queue) == list(range(8))
    assert by_queue[1].max_offset == 1 and by_queue[1].last_update_timestamp > 0
    assert by_queue[0].max_offset == 0 and by_queue[0].last_update_timestamp == 0
    assert {mq.broker_name for mq in stats.offset_table} == {"broker-a"}
    missing = call(broker, RC.GET_TOPIC_STATS_INFO, {"topic": "Nope"})
    assert (missing.code, missing.remark) == (R.TOPIC_NOT_EXIST, "topic[Nope] not exist")


def test_view_message_by_id(broker):
    send(broker, topic="TBW102", queue_id=0, body=b"first")
    send(broker, topic="TBW102", queue_id=0, body=b"second")
    second = broker.store.records("TBW102", 0)[1]
    answer = call(broker, RC.VIEW_MESSAGE_BY_ID, {"offset": str(second.commit_log_offset)})
    assert decode_record(answer.body).body == b"second"
    missing = call(broker, RC.VIEW_MESSAGE_BY_ID, {"offset": "999999"})
    assert (missing.code, missing.remark) == (R.SYSTEM_ERROR, "can not find message by the offset, 999999")


def test_query_message_by_key(broker):
    send(broker, topic="TBW102", queue_id=0, properties={"KEYS": "order-1"})
    query = h.QueryMessageRequestHeader(topic="TBW102", key="order-1", max_num=32,
                                        begin_timestamp=0, end_timestamp=2**62).to_ext_fields()
    answer = call(broker, RC.QUERY_MESSAGE, query)
    assert answer.code == R.SUCCESS
    assert decode_record(answer.body).keys == ["order-1"]
    assert set(answer.ext_fields) == {"indexLastUpdateTimestamp", "indexLastUpdatePhyoffset"}
    query["key"] = "order-2"
    answer = call(broker, RC.QUERY_MESSAGE, query)
    assert answer.code == R.QUERY_NOT_FOUND
    assert answer.remark == "can not find message, maybe time range not correct"


def test_broker_runtime_info_has_java_keys(broker):
    send(broker)
    table = KVTable.from_json(call(broker, RC.GET_BROKER_RUNTIME_INFO).body).table
    assert table["brokerVersion"] == "409" and table["brokerVersionDesc"] == "V4_9_8"
    assert table["msgPutTotalTodayNow"] == "1"
    assert table["commitLogMaxOffset"] == str(len(broker.store.log))
    for key in ("sendThreadPoolQueueCapacity", "dispatchBehindBytes", "pullThreadPoolQueueSize",
                "startAcceptSendRequestTimeStamp", "EndTransactionQueueSize"):
        assert key in table


def test_broker_config(broker):
    answer = call(broker, RC.GET_BROKER_CONFIG)
    assert DataVersion.from_json(answer.ext_fields["version"].encode()) == broker.config_data_version
    settings = parse_properties(answer.body.decode())
    assert settings["brokerName"] == "broker-a" and settings["listenPort"] == "10911"
    assert settings["haListenPort"] == "10912" and settings["flushDiskType"] == "ASYNC_FLUSH"


def test_broker_config_prints_values_as_java(broker):
    settings = parse_properties(call(broker, RC.GET_BROKER_CONFIG).body.decode())
    assert settings["autoCreateTopicEnable"] == "true" and settings["traceTopicEnable"] == "false"
    assert settings["serverSocketBacklog"] == "1024"  # a Java key listed though not acted on


def update_config(broker, **values):
    body = "".join("%s=%s\n" % item for item in values.items()).encode()
    return call(broker, RC.UPDATE_BROKER_CONFIG, body=body)


def test_update_broker_config_applies_and_saves(broker):
    version = broker.config_data_version.counter
    answer = update_config(broker, maxMessageSize="1024", autoCreateTopicEnable="false",
                           noSuchSetting="x")
    assert answer.code == R.SUCCESS
    assert broker.config["maxMessageSize"] == 1024 and broker.config["autoCreateTopicEnable"] is False
    assert broker.config_data_version.counter == version + 1
    saved = parse_properties(open(broker.config_file, encoding="utf-8").read())
    assert saved["maxMessageSize"] == "1024" and saved["autoCreateTopicEnable"] == "false"
    assert "noSuchSetting" not in saved and "noSuchSetting" not in broker.config
    shown = parse_properties(call(broker, RC.GET_BROKER_CONFIG).body.decode())
    assert shown["maxMessageSize"] == "1024"


def test_update_broker_config_refuses_a_bad_value_whole(broker):
    answer = update_config(broker, maxMessageSize="1024", listenPort="many")
    assert answer.code == R.SYSTEM_ERROR and "listenPort" in answer.remark
    assert broker.config["maxMessageSize"] == 1024 * 1024 * 4
    assert not os.path.exists(broker.config_file)


def test_update_broker_permission_registers_at_once(broker):
    registered = []
    broker.registration.register_all = lambda **kw: registered.append(kw)
    version = broker.topic_config_manager.data_version.counter
    assert update_config(broker, brokerPermission="4").code == R.SUCCESS
    assert registered and broker.topic_config_manager.data_version.counter == version + 1


def test_update_broker_config_reports_a_file_it_cannot_save(broker, tmp_path):
    broker.config_file = str(tmp_path / "missing-dir-is-a-file" / "broker.properties")
    (tmp_path / "missing-dir-is-a-file").write_text("")
    answer = update_config(broker, maxMessageSize="2048")
    assert answer.code == R.SYSTEM_ERROR and "could not be saved" in answer.remark
    assert broker.config["maxMessageSize"] == 2048


def test_delete_topic_in_broker(broker):
    create_topic(broker, "Doomed")
    create_topic(broker, "Kept")
    send(broker, topic="Doomed", queue_id=0)
    send(broker, topic="Kept", queue_id=0)
    answer = call(broker, RC.DELETE_TOPIC_IN_BROKER, {"topic": "Doomed"})
    assert answer.code == R.SUCCESS
    assert broker.topic_config_manager.select_topic_config("Doomed") is None
    assert "Doomed" not in broker.store.get_topics() and "Kept" in broker.store.get_topics()
    for topic, remark in (("TBW102", "The topic[TBW102] is conflict with system topic."),
                          ("a b", "The specified topic contains illegal characters, allowing only "
                                  "^[%|a-zA-Z0-9_-]+$")):
        answer = call(broker, RC.DELETE_TOPIC_IN_BROKER, {"topic": topic})
        assert (answer.code, answer.remark) == (R.SYSTEM_ERROR, remark)
