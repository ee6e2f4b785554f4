"""PULL_MESSAGE and CONSUMER_SEND_MSG_BACK and GET_CONSUME_STATS against an in-memory store."""

import pytest
from consume_support import Connection, Controller, result_of

from rmqproto.broker.processors.consume import (
    PULL_COMMIT_OFFSET, PULL_SUBSCRIPTION, PULL_SUSPEND, pull_response_code,
    send_back_target, suggest_which_broker_id, tags_filter,
)
from rmqproto.codec import headers as h
from rmqproto.codec.bodies.client import (
    ConsumeType, ConsumerData, HeartbeatData, MessageModel, MessageQueue, SubscriptionData,
)
from rmqproto.codec.bodies.offsets import ConsumeStats, SubscriptionGroupConfig
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.javalang import java_string_hash
from rmqproto.codec.message import MessageRecord, iter_records
from rmqproto.store.results import GetMessageStatus as G


@pytest.mark.parametrize("status, offset, code", [
    (G.FOUND, 3, R.SUCCESS),
    (G.NO_MESSAGE_IN_QUEUE, 0, R.PULL_NOT_FOUND),
    (G.NO_MESSAGE_IN_QUEUE, 5, R.PULL_OFFSET_MOVED),
    (G.NO_MATCHED_LOGIC_QUEUE, 0, R.PULL_NOT_FOUND),
    (G.NO_MATCHED_LOGIC_QUEUE, 1, R.PULL_OFFSET_MOVED),
    (G.OFFSET_TOO_SMALL, 0, R.PULL_OFFSET_MOVED),
    (G.OFFSET_OVERFLOW_ONE, 4, R.PULL_NOT_FOUND),
    (G.OFFSET_OVERFLOW_BADLY, 9, R.PULL_OFFSET_MOVED),
    (G.OFFSET_FOUND_NULL, 4, R.PULL_NOT_FOUND),
    (G.NO_MATCHED_MESSAGE, 4, R.PULL_RETRY_IMMEDIATELY),
    (G.MESSAGE_WAS_REMOVING, 4, R.PULL_RETRY_IMMEDIATELY),
])
def test_status_to_code(status, offset, code):
    assert pull_response_code(status, offset) == code


def test_suggest_which_broker_id():
    group = SubscriptionGroupConfig("g", broker_id=2, which_broker_when_consume_slowly=3)
    assert suggest_which_broker_id(True, False, group) == 0
    assert suggest_which_broker_id(True, True, group) == 3
    assert suggest_which_broker_id(False, True, group) == 2


def test_tags_filter():
    assert tags_filter(SubscriptionData.for_expression("T", "*")) is None
    accept = tags_filter(SubscriptionData.for_expression("T", "a || b"))
    assert accept(java_string_hash("a")) and accept(java_string_hash("b"))
    assert not accept(java_string_hash("c")) and accept(None)
    assert accept(java_string_hash("a") + (1 << 32))  # Java compares the low 32 bits


def test_send_back_target():
    group = SubscriptionGroupConfig("g", retry_max_times=3, retry_queue_nums=2)
    assert send_back_target("g", group, 0, 0).topic == "%RETRY%g"
    assert send_back_target("g", group, 1, 0).delay_level == 4
    assert send_back_target("g", group, 1, 7).delay_level == 7
    assert send_back_target("g", group, 3, 0).topic == "%DLQ%g"
    assert send_back_target("g", group, 0, -1).dlq
    assert not send_back_target("g", group, 3, 0, max_reconsume_times=5).dlq


def put(broker, topic="T", queue_id=0, tags=None, body=b"hello", **properties):
    if tags:
        properties["TAGS"] = tags
    return result_of(broker.store.put_message(MessageRecord(topic, body, properties, queue_id=queue_id)))


def pull(broker, offset=0, sys_flag=PULL_SUBSCRIPTION, sub="*", topic="T", queue_id=0,
         commit_offset=0, connection=None, group="g"):
    header = h.PullMessageRequestHeader(
        consumer_group=group, topic=topic, queue_id=queue_id, queue_offset=offset, max_msg_nums=32,
        sys_flag=sys_flag, commit_offset=commit_offset, suspend_timeout_millis=15_000,
        subscription=sub, sub_version=1)
    return broker.call(RC.PULL_MESSAGE, header, connection=connection)


@pytest.fixture
def broker(tmp_path):
    broker = Controller(tmp_path)
    broker.topic("T")
    return broker


def test_pull_found_with_tags(broker):
    for tags in ("a", "b", "a"):
        put(broker, tags=tags, body=tags.encode())
    response = pull(broker, sub="a")
    assert response.code == R.SUCCESS and response.remark == "FOUND"
    assert [r.body for r in iter_records(response.body)] == [b"a", b"a"]
    assert response.ext_fields == {"suggestWhichBrokerId": "0", "nextBeginOffset": "3",
                                   "minOffset": "0", "maxOffset": "3"}
    assert pull(broker, offset=1, sub="c").code == R.PULL_RETRY_IMMEDIATELY


def test_pull_errors(broker, tmp_path):
    assert pull(broker, topic="Nope").code == R.TOPIC_NOT_EXIST
    response = pull(broker, queue_id=4)
    assert response.code == R.SYSTEM_ERROR and response.remark.startswith("queueId[4] is illegal")
    assert pull(broker, sys_flag=0).code == R.SUBSCRIPTION_NOT_EXIST  # no heartbeat yet
    broker.subscription_group_manager.disable_consume("g")
    assert pull(broker).code == R.NO_PERMISSION
    closed = Controller(tmp_path / "closed", autoCreateSubscriptionGroup=False)
    closed.subscription_group_manager.auto_create = False
    closed.topic("T")
    assert pull(closed).code == R.SUBSCRIPTION_GROUP_NOT_EXIST
    read_only = Controller(tmp_path / "ro", brokerPermission=2)
    read_only.topic("T")
    assert pull(read_only).code == R.NO_PERMISSION


def test_pull_uses_heartbeat_subscription(broker):
    sub = SubscriptionData.for_expression("T", "b", sub_version=1)
    data = HeartbeatData("C", [], [ConsumerData("g", ConsumeType.CONSUME_PASSIVELY,
                                                MessageModel.CLUSTERING, subscription_data_set=[sub])])
    broker.call(RC.HEART_BEAT, body=data.to_json())
    put(broker, tags="a")
    put(broker, tags="b")
    response = pull(broker, sys_flag=0)
    assert [r.tags for r in iter_records(response.body)] == ["b"]
    header = h.PullMessageRequestHeader(
        consumer_group="g", topic="T", queue_id=0, queue_offset=0, max_msg_nums=32, sys_flag=0,
        commit_offset=0, suspend_timeout_millis=0, sub_version=2)
    assert broker.call(RC.PULL_MESSAGE, header).code == R.SUBSCRIPTION_NOT_LATEST


def test_offset_moved_and_commit_offset(broker, tmp_path):
    put(broker)
    response = pull(broker, offset=9, sys_flag=PULL_SUBSCRIPTION | PULL_COMMIT_OFFSET, commit_offset=1)
    assert response.code == R.PULL_OFFSET_MOVED and response.ext_fields["nextBeginOffset"] == "1"
    assert broker.consumer_offset_manager.query_offset("g", "T", 0) == 1
    slave = Controller(tmp_path / "slave", brokerRole="SLAVE", brokerId=1)
    slave.topic("T")
    put(slave)
    response = pull(slave, offset=9, sys_flag=PULL_SUBSCRIPTION | PULL_COMMIT_OFFSET, commit_offset=1)
    assert response.code == R.PULL_RETRY_IMMEDIATELY
    assert slave.consumer_offset_manager.query_offset("g", "T", 0) == -1  # slaves never commit


def test_long_polling_answers_when_a_message_arrives(broker):
    connection = Connection()
    answer = pull(broker, sys_flag=PULL_SUBSCRIPTION | PULL_SUSPEND, sub="x", connection=connection)
    results = []
    answer.addCallback(results.append)
    assert results == []
    put(broker, tags="y")  # the store announces it; the filter "x" does not match it
    assert results == []
    put(broker, tags="x")
    assert results[0].code == R.SUCCESS and results[0].ext_fields["nextBeginOffset"] == "2"
    assert [r.tags for r in iter_records(results[0].body)] == ["x"]


def test_long_polling_times_out_with_pull_not_found(broker):
    answer = pull(broker, sys_flag=PULL_SUBSCRIPTION | PULL_SUSPEND)
    results = []
    answer.addCallback(results.append)
    broker.reactor.advance(14.9)
    assert results == []
    broker.reactor.advance(0.1)
    assert results[0].code == R.PULL_NOT_FOUND and results[0].remark == "NO_MESSAGE_IN_QUEUE"


def test_short_polling(tmp_path):
    broker = Controller(tmp_path, longPollingEnable=False)
    broker.topic("T")
    results = []
    pull(broker, sys_flag=PULL_SUBSCRIPTION | PULL_SUSPEND).addCallback(results.append)
    broker.reactor.advance(1)
    assert results[0].code == R.PULL_NOT_FOUND


def test_send_back_to_retry_then_dlq(broker):
    stored = put(broker, tags="t", UNIQ_KEY="U1")
    offset = stored.append_result.wrote_offset
    back = h.ConsumerSendMsgBackRequestHeader(offset=offset, group="g", delay_level=0,
                                              max_reconsume_times=1)
    assert result_of(broker.call(RC.CONSUMER_SEND_MSG_BACK, back)).code == R.SUCCESS
    retry = broker.store.puts[-1]
    assert (retry.topic, retry.properties["REAL_TOPIC"], retry.properties["DELAY"]) == (
        "SCHEDULE_TOPIC_XXXX", "%RETRY%g", "3")
    assert retry.properties["RETRY_TOPIC"] == "T"
    assert retry.properties["WAIT"] == "false"
    assert retry.properties["ORIGIN_MESSAGE_ID"] == stored.append_result.msg_id
    assert retry.reconsume_times == 1
    back.offset = retry.commit_log_offset
    assert result_of(broker.call(RC.CONSUMER_SEND_MSG_BACK, back)).code == R.SUCCESS
    dead = broker.store.puts[-1]
    assert (dead.topic, dead.reconsume_times, dead.properties["DELAY"]) == ("%DLQ%g", 2, "0")
    assert dead.properties["ORIGIN_MESSAGE_ID"] == stored.append_result.msg_id
    assert broker.topic_config_manager.select_topic_config("%DLQ%g").read_queue_nums == 1
    back.offset = 10 ** 9
    response = broker.call(RC.CONSUMER_SEND_MSG_BACK, back)
    assert response.code == R.SYSTEM_ERROR and response.remark.startswith("look message by offset failed")


@pytest.mark.parametrize("group", ["a/b", "a\0b"])
def test_send_back_of_a_group_whose_retry_topic_cannot_be_stored(broker, group):
    """Such a retry topic (and its DLQ) cannot name a consume-queue directory and the store
    refuses it; refused at once, so that it never waits in the delay queue."""
    stored = put(broker)
    back = h.ConsumerSendMsgBackRequestHeader(offset=stored.append_result.wrote_offset,
                                              group=group, delay_level=0, max_reconsume_times=1)
    puts = len(broker.store.puts)
    response = broker.call(RC.CONSUMER_SEND_MSG_BACK, back)  # answered at once
    assert (response.code, response.remark) == (R.SYSTEM_ERROR, "MESSAGE_ILLEGAL")
    assert len(broker.store.puts) == puts
    assert broker.topic_config_manager.select_topic_config("%RETRY%" + group) is None


def test_consume_stats(broker):
    for _ in range(3):
        put(broker)
    broker.consumer_offset_manager.commit_offset("g", "T", 0, 2)
    response = broker.call(RC.GET_CONSUME_STATS, h.GetConsumeStatsRequestHeader(consumer_group="g"))
    stats = ConsumeStats.from_json(response.body)
    wrapper = stats.offset_table[MessageQueue("T", "broker-a", 0)]
    assert (wrapper.broker_offset, wrapper.consumer_offset) == (3, 2)
    assert wrapper.last_timestamp == broker.store.get_message_store_timestamp("T", 0, 1)
    assert stats.total_diff() == 1 and len(stats.offset_table) == 4
