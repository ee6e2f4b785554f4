"""The RocketMQ 5 requests a 4.9-style broker serves (GET_TOPIC_CONFIG, LITE_PULL_MESSAGE,
GET_BROKER_HA_STATUS) and RocketMQ 5's ``pullOffset`` in GET_CONSUME_STATS, on the consume
side's controller with its in-memory store. The Java proof is ``test_rocketmq5_java.py``."""

import pytest
from consume_support import Controller, result_of
from test_pull import pull, put

from rmqproto.broker.processors.rocketmq5 import RocketMQ5Processor
from rmqproto.codec import headers as h
from rmqproto.codec.bodies.client import MessageQueue
from rmqproto.codec.bodies.ha import HAConnectionRuntimeInfo, HARuntimeInfo
from rmqproto.codec.bodies.offsets import ConsumeStats
from rmqproto.codec.bodies.topic import TopicConfigAndQueueMapping
from rmqproto.codec.codes import RequestCode as RC, RequestCodeV5 as RC5, ResponseCode as R
from rmqproto.codec.message import iter_records


@pytest.fixture
def broker(tmp_path):
    broker = Controller(tmp_path)
    broker.consume_processor = broker.processor
    broker.ha_runtime_info = None
    RocketMQ5Processor(broker).register_with(broker.dispatcher)
    broker.topic("T", queues=2)
    return broker


def test_get_topic_config_answers_rocketmq5s_body(broker):
    response = broker.call(RC5.GET_TOPIC_CONFIG, topic="T", lo="true")
    assert response.code == R.SUCCESS
    assert response.body == (b'{"attributes":{},"order":false,"perm":6,"readQueueNums":2,'
                             b'"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,'
                             b'"writeQueueNums":2}')
    config = TopicConfigAndQueueMapping.from_json(response.body)
    assert (config.topic_name, config.read_queue_nums, config.attributes) == ("T", 2, {})


def test_get_topic_config_of_an_unknown_topic_or_without_one(broker):
    response = broker.call(RC5.GET_TOPIC_CONFIG, topic="Nope")
    assert (response.code, response.remark) == (R.TOPIC_NOT_EXIST,
                                                "No topic in this broker. topic: Nope")
    response = broker.call(RC5.GET_TOPIC_CONFIG, lo="true")
    assert (response.code, response.remark) == (R.SYSTEM_ERROR, "the custom field <topic> is null")


def test_lite_pull_is_answered_as_a_pull(broker):
    for body in (b"one", b"two"):
        put(broker, body=body)
    header = h.PullMessageRequestHeader(
        consumer_group="g", topic="T", queue_id=0, queue_offset=0, max_msg_nums=32,
        sys_flag=0x4 | 0x10, commit_offset=0, suspend_timeout_millis=0, subscription="*",
        sub_version=1)
    lite = broker.call(RC5.LITE_PULL_MESSAGE, header)
    plain = pull(broker)
    assert lite.code == plain.code == R.SUCCESS
    assert lite.ext_fields == plain.ext_fields
    assert [r.body for r in iter_records(lite.body)] == [b"one", b"two"]


def test_ha_status_without_an_ha_service_is_java5s_error(broker):
    response = broker.call(RC5.GET_BROKER_HA_STATUS)
    assert (response.code, response.remark) == (
        R.SYSTEM_ERROR, "Can not get HARuntimeInfo, may be duplicationEnable is true")


def test_ha_status_is_the_ha_services_runtime_info(broker):
    info = HARuntimeInfo(master=True, master_commit_log_max_offset=500, in_sync_slave_nums=1,
                         ha_connection_info=[HAConnectionRuntimeInfo(
                             addr="10.0.0.2:4000", slave_ack_offset=500, in_sync=True,
                             transfer_from_where=500)])
    broker.ha_runtime_info = lambda: info
    response = broker.call(RC5.GET_BROKER_HA_STATUS)
    assert response.code == R.SUCCESS
    assert response.body == (
        b'{"haClientRuntimeInfo":{"lastReadTimestamp":0,"lastWriteTimestamp":0,'
        b'"masterFlushOffset":0,"maxOffset":0,"transferredByteInSecond":0},'
        b'"haConnectionInfo":[{"addr":"10.0.0.2:4000","diff":0,"inSync":true,'
        b'"slaveAckOffset":500,"transferFromWhere":500,"transferredByteInSecond":0}],'
        b'"inSyncSlaveNums":1,"master":true,"masterCommitLogMaxOffset":500}')
    assert HARuntimeInfo.from_json(response.body) == info


def consume_stats(broker):
    response = broker.call(RC.GET_CONSUME_STATS, h.GetConsumeStatsRequestHeader(consumer_group="g"))
    return ConsumeStats.from_json(response.body).offset_table


def test_consume_stats_pull_offset_is_where_the_last_pull_ended(broker):
    for _ in range(3):
        put(broker)
    broker.consumer_offset_manager.commit_offset("g", "T", 1, 0)  # the group's topics
    assert pull(broker).code == R.SUCCESS
    table = consume_stats(broker)
    pulled, untouched = (table[MessageQueue("T", "broker-a", q)] for q in (0, 1))
    assert (pulled.consumer_offset, pulled.pull_offset) == (0, 3)  # 3 in flight
    assert (untouched.consumer_offset, untouched.pull_offset) == (0, 0)
    broker.consumer_offset_manager.commit_offset("g", "T", 0, 3)
    assert consume_stats(broker)[MessageQueue("T", "broker-a", 0)].pull_offset == 3
    broker.consumer_offset_manager.commit_offset("g", "T", 1, 5)  # a commit beyond any pull
    assert consume_stats(broker)[MessageQueue("T", "broker-a", 1)].pull_offset == 5


def test_a_parked_pull_records_its_offset_when_it_runs_again(broker):
    parked = pull(broker, sys_flag=0x4 | 0x2, offset=0)  # subscription + suspend
    put(broker)
    broker.reactor.advance(0)
    assert result_of(parked).code == R.SUCCESS
    assert broker.consumer_offset_manager.query_pull_offset("g", "T", 0) == 1
