"""The send path against an in-memory store: every check and response code of Java's ``SendMessageProcessor``."""

import re

import pytest
from twisted.internet.defer import Deferred

from rmqproto.broker.controller import BrokerController
from rmqproto.broker.processors.send import wait_store_msg_ok
from rmqproto.codec import headers as h
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.frame import (
    FLAG_ONEWAY, SERIALIZE_JSON, SERIALIZE_ROCKETMQ, RemotingCommand, decode_frame,
)
from rmqproto.codec.message import (
    MESSAGE_RECORD, Message, create_message_id, decode_message_id, encode_batch,
    properties_to_string,
)
from rmqproto.remoting import RequestContext
from rmqproto.store.results import PutMessageStatus
from brokerkit import NOW_MS, broker_config, call, make_controller
from store.store_support import ManualRunner, stores  # noqa: F401 (a fixture: real stores)


def send_header(topic="TopicA", queue_id=1, properties=None, **kw):
    values = dict(producer_group="PG", topic=topic, default_topic="TBW102",
                  default_topic_queue_nums=4, queue_id=queue_id, sys_flag=0,
                  born_timestamp=NOW_MS - 5, flag=3,
                  properties=properties_to_string(properties or {"WAIT": "true", "TAGS": "TagA",
                                                                 "UNIQ_KEY": "ABC"}),
                  reconsume_times=0, unit_mode=False)
    values.update(kw)
    return h.SendMessageRequestHeaderV2(**values)


def send(controller, header=None, body=b"hello", code=RC.SEND_MESSAGE_V2, **kw):
    header = header or send_header(**kw)
    if code == RC.SEND_MESSAGE:
        header = header.to_v1()
    return call(controller, code, header.to_ext_fields(), body)


@pytest.fixture
def broker(tmp_path):
    return make_controller(tmp_path)


@pytest.mark.parametrize("serialize_type", [SERIALIZE_JSON, SERIALIZE_ROCKETMQ])
def test_answer_fields_are_the_response_header_in_java_order(broker, serialize_type):
    """The per-broker template gives what SendMessageResponseHeader.to_ext_fields gives."""
    request = RemotingCommand(int(RC.SEND_MESSAGE_V2), opaque=7, body=b"x",
                              ext_fields=send_header(queue_id=2).to_ext_fields(serialize_type),
                              serialize_type=serialize_type)
    for offset in range(2):
        answer = decode_frame(broker.dispatcher.dispatch(
            request, RequestContext(None, "192.168.1.7:40000"))[4:])
        expected = h.SendMessageResponseHeader(
            msg_id=answer.ext_fields["msgId"], queue_id=2, queue_offset=offset).to_ext_fields(
                serialize_type, extra={"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"})
        assert list(answer.ext_fields.items()) == list(expected.items())


def test_born_host_of_a_peer_that_is_not_host_port(broker):
    """A peer address that is not ``host:port`` (a unix socket, say) gives the born host
    127.0.0.1:0 rather than a failed send."""
    answer = call(broker, RC.SEND_MESSAGE_V2, send_header().to_ext_fields(), b"x",
                  peer="unix-socket")
    assert answer.code == R.SUCCESS
    assert broker.store.records("TopicA", 1)[0].born_host == ("127.0.0.1", 0)


@pytest.mark.parametrize("code", [RC.SEND_MESSAGE, RC.SEND_MESSAGE_V2])
def test_send_stores_the_record_and_answers_msg_id(broker, code):
    first = send(broker, code=code)
    second = send(broker, code=code)
    assert first.code == R.SUCCESS and first.remark is None
    assert first.ext_fields["MSG_REGION"] == "DefaultRegion"
    assert first.ext_fields["TRACE_ON"] == "true"
    assert (first.ext_fields["queueId"], first.ext_fields["queueOffset"]) == ("1", "0")
    assert second.ext_fields["queueOffset"] == "1"
    record = broker.store.records("TopicA", 1)[0]
    assert first.ext_fields["msgId"] == create_message_id(("10.0.0.1", 10911), 0)
    assert record.store_host == ("10.0.0.1", 10911)
    assert record.born_host == ("192.168.1.7", 40000)
    assert (record.body, record.flag, record.born_timestamp) == (b"hello", 3, NOW_MS - 5)
    # CLUSTER added, WAIT dropped, Java HashMap order (``MessageDecoder#messageProperties2String``)
    assert list(record.properties.items()) == [
        ("UNIQ_KEY", "ABC"), ("CLUSTER", "DefaultCluster"), ("TAGS", "TagA")]


def test_unknown_topic_is_created_from_tbw102_and_announced(broker):
    announced = []
    broker.registration.register_all = lambda **kw: announced.append(kw)
    version = broker.topic_config_manager.data_version.counter
    assert send(broker, topic="NewTopic", queue_id=3).code == R.SUCCESS
    created = broker.topic_config_manager.select_topic_config("NewTopic")
    assert (created.read_queue_nums, created.write_queue_nums, created.perm) == (4, 4, 6)
    assert broker.topic_config_manager.data_version.counter == version + 1
    assert announced == [{"oneway": True}]


def test_unknown_topic_without_auto_creation(tmp_path):
    broker = make_controller(tmp_path, autoCreateTopicEnable="false")
    answer = send(broker, topic="NewTopic")
    assert answer.code == R.TOPIC_NOT_EXIST
    assert answer.remark.startswith("topic[NewTopic] not exist, apply first please!\nSee http")
    assert answer.ext_fields == {"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}


def test_retry_topic_is_created_with_one_queue_even_without_auto_creation(tmp_path):
    broker = make_controller(tmp_path, autoCreateTopicEnable="false")
    broker.subscription_group_manager = _Groups()
    assert send(broker, topic="%RETRY%G", queue_id=0).code == R.SUCCESS
    assert broker.topic_config_manager.select_topic_config("%RETRY%G").write_queue_nums == 1


class _Groups:
    class config:
        retry_max_times = 16

    def __init__(self, known=("G",)):
        self.known = known

    def find_subscription_group_config(self, group):
        return self.config if group in self.known else None


def test_retry_topic_redirects_to_dlq_after_max_reconsume_times(broker):
    broker.subscription_group_manager = _Groups()
    answer = send(broker, topic="%RETRY%G", queue_id=0, reconsume_times=16)
    assert answer.code == R.SUCCESS and answer.ext_fields["queueId"] == "0"
    assert len(broker.store.records("%DLQ%G", 0)) == 1
    assert broker.topic_config_manager.select_topic_config("%DLQ%G").write_queue_nums == 1
    # the header's maxReconsumeTimes wins over the group's
    send(broker, topic="%RETRY%G", queue_id=0, reconsume_times=2, max_reconsume_times=2)
    assert len(broker.store.records("%DLQ%G", 0)) == 2
    send(broker, topic="%RETRY%G", queue_id=0, reconsume_times=1, max_reconsume_times=2)
    assert len(broker.store.records("%RETRY%G", 0)) == 1


def test_retry_topic_of_unknown_group(broker):
    broker.subscription_group_manager = _Groups(known=())
    answer = send(broker, topic="%RETRY%Nobody", queue_id=0)
    assert answer.code == R.SUBSCRIPTION_GROUP_NOT_EXIST
    assert answer.remark.startswith("subscription group not exist, Nobody \nSee")


@pytest.mark.parametrize("topic, remark", [
    ("bad topic", "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"),
    ("T" * 128, "The specified topic is longer than topic max length."),
    ("  ", "The specified topic is blank."),
    ("Topic\u00e9", "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"),
])
def test_illegal_topics_get_system_error(broker, topic, remark):
    answer = send(broker, topic=topic)
    assert (answer.code, answer.remark) == (R.SYSTEM_ERROR, remark)


@pytest.mark.parametrize("topic", ["SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC",
                                   "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT"])
def test_not_allowed_send_topics(broker, topic):
    answer = send(broker, topic=topic, queue_id=0)
    assert answer.code == R.NO_PERMISSION
    assert answer.remark == "Sending message to topic[%s] is forbidden." % topic


def test_queue_id_out_of_range(broker):
    answer = send(broker, topic="TBW102", queue_id=8)
    assert answer.code == R.SYSTEM_ERROR
    assert answer.remark == (
        "request queueId[8] is illegal, TopicConfig [topicName=TBW102, readQueueNums=8, "
        "writeQueueNums=8, perm=RWX, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false] "
        "Producer: 192.168.1.7:40000")


def test_negative_queue_id_picks_a_queue(broker):
    answer = send(broker, topic="TBW102", queue_id=-1)
    assert answer.code == R.SUCCESS and 0 <= int(answer.ext_fields["queueId"]) < 8


def test_order_topic_on_unwritable_broker(tmp_path):
    broker = make_controller(tmp_path, brokerPermission="4")
    broker.topic_config_manager.select_topic_config("TBW102").order = True
    answer = send(broker, topic="TBW102", queue_id=0)
    assert (answer.code, answer.remark) == (R.NO_PERMISSION,
                                            "the broker[10.0.0.1] sending message is forbidden")


def test_not_yet_accepting_sends(tmp_path):
    broker = make_controller(tmp_path, startAcceptSendRequestTimeStamp=str(NOW_MS + 60_000))
    answer = send(broker)
    assert answer.code == R.SYSTEM_ERROR and answer.remark.startswith("broker unable to service, until ")


def test_slave_refuses_sends(tmp_path):
    broker = make_controller(tmp_path, brokerRole="SLAVE", brokerId="1")
    answer = send(broker, topic="TBW102", queue_id=0)
    assert answer.code == R.SERVICE_NOT_AVAILABLE
    assert answer.remark.startswith("service not available now.")


STATUS_CODES = [
    (PutMessageStatus.FLUSH_DISK_TIMEOUT, R.FLUSH_DISK_TIMEOUT, True),
    (PutMessageStatus.FLUSH_SLAVE_TIMEOUT, R.FLUSH_SLAVE_TIMEOUT, True),
    (PutMessageStatus.SLAVE_NOT_AVAILABLE, R.SLAVE_NOT_AVAILABLE, True),
    (PutMessageStatus.MESSAGE_ILLEGAL, R.MESSAGE_ILLEGAL, False),
    (PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, R.MESSAGE_ILLEGAL, False),
    (PutMessageStatus.SERVICE_NOT_AVAILABLE, R.SERVICE_NOT_AVAILABLE, False),
    (PutMessageStatus.CREATE_MAPEDFILE_FAILED, R.SYSTEM_ERROR, False),
    (PutMessageStatus.OS_PAGECACHE_BUSY, R.SYSTEM_ERROR, False),
    (PutMessageStatus.UNKNOWN_ERROR, R.SYSTEM_ERROR, False),
]


@pytest.mark.parametrize("status, code, stored", STATUS_CODES, ids=[s.name for s, _, _ in STATUS_CODES])
def test_store_status_to_response_code(broker, status, code, stored):
    broker.store.put_status = status
    answer = send(broker)
    assert answer.code == code
    assert ("msgId" in answer.ext_fields) is stored
    if status is PutMessageStatus.OS_PAGECACHE_BUSY:
        assert answer.remark == "[PC_SYNCHRONIZED]broker busy, start flow control for a while"


def test_missing_header_field_is_a_system_error(broker):
    ext = send_header().to_ext_fields()
    del ext["b"]
    answer = call(broker, RC.SEND_MESSAGE_V2, ext, b"x")
    assert answer.code == R.SYSTEM_ERROR


def test_oneway_send_is_stored_and_not_answered(broker):
    request = RemotingCommand(int(RC.SEND_MESSAGE_V2), ext_fields=send_header().to_ext_fields(),
                              body=b"x", flag=FLAG_ONEWAY)
    # stored at once (no flush wait): the processor answers at once, and the answer is dropped
    assert broker.dispatcher.dispatch(request, RequestContext(None, "1.2.3.4:5")) is None
    assert len(broker.store.records("TopicA", 1)) == 1


@pytest.fixture
def stored_broker(tmp_path, stores):
    """A controller with a real store (answers at once: ASYNC_FLUSH, ASYNC_MASTER)."""
    store = stores.open(maxMessageSize=4096)
    return BrokerController(broker_config(tmp_path, maxMessageSize=4096), store.reactor,
                            store=store)


def send_batch(broker, messages, properties=None, body=None):
    header = send_header(properties=properties or {"WAIT": "true"}, batch=True)
    return send(broker, header, encode_batch(messages) if body is None else body,
                code=RC.SEND_BATCH_MESSAGE)


def stored_records(broker, answer):
    """The declared decoding (raw properties bytes) of each record a batch answer names."""
    return [MESSAGE_RECORD.parse(broker.store.select_one_message_by_offset(
        decode_message_id(msg_id)[1])) for msg_id in answer.ext_fields["msgId"].split(",")]


def test_batch_stores_each_messages_bytes_then_the_batchs(stored_broker):
    messages = [Message(b"m%d" % i, {"KEYS": "k%d" % i, "UNIQ_KEY": "U%d" % i, "WAIT": "true"}, i)
                for i in range(3)]
    answer = send_batch(stored_broker, messages)
    assert answer.code == R.SUCCESS
    assert answer.ext_fields["queueOffset"] == "0"
    records = stored_records(stored_broker, answer)
    assert [(r.body, r.flag, r.queue_offset) for r in records] == [
        (b"m0", 0, 0), (b"m1", 1, 1), (b"m2", 2, 2)]
    # Java's MessageExtBatchEncoder: the message's own bytes, 0x02, the batch's string
    # (CLUSTER, WAIT in HashMap order): WAIT is stored twice
    assert records[1].properties == (
        b"KEYS\x01k1\x02UNIQ_KEY\x01U1\x02WAIT\x01true\x02CLUSTER\x01DefaultCluster\x02WAIT\x01true")
    # the dispatch read them as Java's does: the index finds the key
    found = stored_broker.store.query_message("TopicA", "k1", 10, 0, NOW_MS * 2)
    assert len(found.messages) == 1


def test_a_message_delay_level_in_a_batch_is_stored_in_its_topic(stored_broker):
    answer = send_batch(stored_broker, [Message(b"a", {"DELAY": "3"})])
    assert answer.code == R.SUCCESS
    assert stored_broker.store.get_max_offset_in_queue("TopicA", 1) == 1
    assert stored_broker.store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", 2) == 0


@pytest.mark.parametrize("properties, code", [
    ({"WAIT": "true", "DELAY": "2"}, R.MESSAGE_ILLEGAL),  # the batch's delay level
    ({"DELAY": "x"}, R.SYSTEM_ERROR),  # Java's Integer.parseInt throws
    ({"P": "x" * 32767}, R.SYSTEM_ERROR),  # Java's batch encoder throws
])
def test_batch_level_refusals(stored_broker, properties, code):
    answer = send_batch(stored_broker, [Message(b"a")], properties)
    assert answer.code == code
    assert stored_broker.store.get_max_phy_offset() == 0


def test_a_batch_body_over_max_message_size_is_illegal(stored_broker):
    fits = [Message(b"x" * (4096 - 22 - 3), {"A": "b"})]
    assert send_batch(stored_broker, fits).code == R.SUCCESS
    answer = send_batch(stored_broker, fits + [Message(b"")])
    assert (answer.code, answer.remark) == (R.MESSAGE_ILLEGAL, (
        "the message is illegal, maybe msg body or properties length not matched. msg body "
        "length limit 4096B, msg properties length limit 32KB."))


def test_a_batch_without_a_body_is_a_system_error(stored_broker):
    assert send_batch(stored_broker, [], body=b"").code == R.SYSTEM_ERROR


def test_malformed_batch_body_is_a_system_error(broker):
    header = send_header(batch=True)
    answer = send(broker, header, b"\x00\x00\x00\x30garbage", code=RC.SEND_BATCH_MESSAGE)
    assert answer.code == R.SYSTEM_ERROR
    assert broker.store.log == bytearray()


def test_prepared_transaction_message_goes_to_the_half_topic(broker):
    answer = send(broker, properties={"TRAN_MSG": "true", "PGROUP": "PG"}, sys_flag=0x4)
    assert answer.code == R.SUCCESS
    record = broker.store.records("RMQ_SYS_TRANS_HALF_TOPIC", 0)[0]
    assert record.properties["REAL_TOPIC"] == "TopicA"
    assert record.properties["REAL_QID"] == "1"
    assert record.sys_flag & 0xC == 0


def test_rejected_transaction_message(tmp_path):
    broker = make_controller(tmp_path, rejectTransactionMessage="true")
    answer = send(broker, properties={"TRAN_MSG": "true"})
    assert answer.code == R.NO_PERMISSION


def test_multi_tag_topic_sets_the_sys_flag(broker):
    from rmqproto.codec.bodies.topic import TopicConfig, TopicFilterType
    broker.topic_config_manager.update_topic_config(
        TopicConfig("Multi", 2, 2, topic_filter_type=TopicFilterType.MULTI_TAG))
    send(broker, topic="Multi", queue_id=0)
    assert broker.store.records("Multi", 0)[0].sys_flag & 0x2


# ---------------------------------------------------------------- WAIT (isWaitStoreMsgOK)

def test_wait_property_rule():
    assert wait_store_msg_ok({}) and wait_store_msg_ok({"WAIT": "TRUE"})
    assert not wait_store_msg_ok({"WAIT": "false"})
    assert not wait_store_msg_ok({"WAIT": " true"})  # Boolean.parseBoolean does not trim


@pytest.mark.parametrize("properties, wait", [
    ({"WAIT": "true", "TAGS": "a"}, True), ({"TAGS": "a"}, True), ({"WAIT": "false"}, False)])
def test_the_store_is_told_wait_though_it_is_not_stored(broker, properties, wait):
    assert send(broker, properties=properties).code == R.SUCCESS
    assert broker.store.waits == [wait]
    assert "WAIT" not in broker.store.records("TopicA", 1)[0].properties


def test_a_batch_waits_as_its_header_says(broker):
    messages = [Message(b"m", {"WAIT": "true"}, 0)]
    header = send_header(properties={"WAIT": "false"}, batch=True)
    assert send(broker, header, encode_batch(messages), code=RC.SEND_BATCH_MESSAGE).code == R.SUCCESS
    assert broker.store.waits == [False]


def dispatch(controller, header, body=b"hello", connection=False, code=RC.SEND_MESSAGE_V2):
    """Send without waiting for the answer: a list that gets the decoded response. With
    ``connection`` the context can write, as a connection's does, so a later answer comes
    without a Deferred."""
    request = RemotingCommand(int(code), opaque=7, ext_fields=header.to_ext_fields(), body=body)
    answers = []

    def write(frame):
        answers.append(decode_frame(frame[4:]))

    context = RequestContext(None, "192.168.1.7:40000", write if connection else None)
    answer = controller.dispatcher.dispatch(request, context)
    if isinstance(answer, Deferred):  # the store waits (a flush, a slave)
        answer.addCallback(write)
    elif answer is not None:  # stored at once: answered at once
        write(answer)
    return answers


@pytest.mark.parametrize("connection", [False, True])
def test_sync_flush_answers_a_wait_false_send_at_once(tmp_path, stores, connection):
    store = stores.open(start=False, flushDiskType="SYNC_FLUSH", syncFlushTimeout=2000)
    runner = store.flusher.run_blocking = ManualRunner()
    store.start()
    broker = BrokerController(broker_config(tmp_path, flushDiskType="SYNC_FLUSH"),
                              store.reactor, store=store)
    no_wait = dispatch(broker, send_header(properties={"WAIT": "false"}), connection=connection)
    assert [(a.code, a.ext_fields["queueOffset"]) for a in no_wait] == [(R.SUCCESS, "0")]
    waiting = dispatch(broker, send_header(properties={"WAIT": "true"}), connection=connection)
    assert waiting == [] and runner.jobs
    while runner.jobs:
        runner.run_next()
    assert [(a.code, a.ext_fields["queueOffset"]) for a in waiting] == [(R.SUCCESS, "1")]
    late = dispatch(broker, send_header(properties={"TAGS": "a"}), connection=connection)
    store.reactor.advance(2.1)
    assert [a.code for a in late] == [R.FLUSH_DISK_TIMEOUT]


def test_sync_master_answers_a_wait_false_send_without_the_slave(tmp_path, stores):
    store = stores.open(brokerRole="SYNC_MASTER")
    store.replica_waiter = lambda next_offset, then, token: None  # a slave that never answers
    broker = BrokerController(broker_config(tmp_path, brokerRole="SYNC_MASTER"),
                              store.reactor, store=store)
    assert [a.code for a in dispatch(broker, send_header(properties={"WAIT": "false"}))] == [
        R.SUCCESS]
    assert dispatch(broker, send_header()) == []


@pytest.mark.parametrize("connection", [False, True])
def test_sync_master_answers_once_the_slave_acks(tmp_path, stores, connection):
    """Through the store's ``then`` (a context that writes) or a Deferred: the same answer."""
    store = stores.open(brokerRole="SYNC_MASTER")
    waits = []
    store.replica_waiter = lambda next_offset, then, token: waits.append((then, token))
    broker = BrokerController(broker_config(tmp_path, brokerRole="SYNC_MASTER"),
                              store.reactor, store=store)
    first = dispatch(broker, send_header(), connection=connection)
    second = dispatch(broker, send_header(), connection=connection)
    assert first == second == [] and len(waits) == 2
    for (then, token), status in zip(waits, (PutMessageStatus.PUT_OK,
                                             PutMessageStatus.FLUSH_SLAVE_TIMEOUT)):
        then(status, token)
    assert [(a.code, a.opaque, a.ext_fields["queueOffset"]) for a in first + second] == [
        (R.SUCCESS, 7, "0"), (R.FLUSH_SLAVE_TIMEOUT, 7, "1")]
    batch = dispatch(broker, send_header(batch=True), encode_batch([Message(b"a"), Message(b"b")]),
                     connection=connection, code=RC.SEND_BATCH_MESSAGE)
    assert batch == [] and len(waits) == 3
    then, token = waits[2]
    then(PutMessageStatus.PUT_OK, token)
    assert [(a.code, a.ext_fields["queueOffset"]) for a in batch] == [(R.SUCCESS, "2")]


def test_a_full_disk_remark_shows_the_retention_measure_in_java_format(tmp_path):
    from rmqproto.store.config import store_paths
    from rmqproto.store.retention import disk_partition_used_ratio

    broker = make_controller(tmp_path)
    paths = store_paths(broker.config)
    for name in ("commitlog", "consumequeue"):
        (tmp_path / "store" / name).mkdir(parents=True, exist_ok=True)
    broker.store.put_status = PutMessageStatus.SERVICE_NOT_AVAILABLE
    answer = send(broker)
    used = disk_partition_used_ratio(paths["commitlog"])  # the same disk for CL and CQ here
    assert 0 <= used <= 1
    # diskUtil(): String.format("CL: %5.2f CQ: %5.2f INDEX: %5.2f") of the used fractions;
    # a missing directory measures -1
    found = re.search(r"the broker's disk is full \[CL: ( \d\.\d\d) CQ: ( \d\.\d\d) "
                      r"INDEX: -1\.00\]", answer.remark)
    assert found, answer.remark
    assert all(abs(float(value) - used) <= 0.01 for value in found.groups())  # a shared disk
