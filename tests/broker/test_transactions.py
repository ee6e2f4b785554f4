"""The transaction path of one broker on a fake clock and an in-memory store: half
messages, END_TRANSACTION commit and rollback with their op records, the check-back
service (CHECK_TRANSACTION_STATE to the producer group, discarding after
``transactionCheckMax``), a slave's refusals, and a restart resuming from the
``CID_RMQ_SYS_TRANS`` offsets (``EndTransactionProcessor``, ``TransactionalMessageServiceImpl``)."""

import pytest
from twisted.internet.defer import succeed
from twisted.internet.task import Clock

from rmqproto.broker.clients import ClientChannelInfo
from rmqproto.broker.controller import BrokerController
from rmqproto.broker.transaction.records import CHECK_GROUP
from rmqproto.codec import headers as h
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.message import create_message_id, decode_message_id, decode_record
from rmqproto.store.results import PutMessageStatus
from rmqproto.store.defaultstore import DefaultMessageStore
from brokerkit import NOW_MS, broker_config, call, make_controller
from store.store_support import SMALL
from test_send import send

HALF, OP, DISCARDED = "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC"
TX_SETTINGS = dict(transactionCheckInterval=1000, transactionTimeOut=3000, transactionCheckMax=2)


class Producer:
    """A producer's connection: what the broker sends it oneway."""

    def __init__(self):
        self.requests = []

    def send_oneway(self, request):
        self.requests.append(request)
        return succeed(None)


@pytest.fixture
def broker(tmp_path):
    controller = make_controller(tmp_path, **TX_SETTINGS)
    controller.start()
    yield controller
    controller.transaction_check_service.stop()
    controller.client_manager.stop()


def prepare(broker, key="K1", group="PG", **kw):
    answer = send(broker, properties={"TRAN_MSG": "true", "PGROUP": group, "UNIQ_KEY": key,
                                      "TAGS": "TagT", "WAIT": "true"}, sys_flag=0x4, **kw)
    assert answer.code == R.SUCCESS
    return broker.store.look_message_by_offset(decode_message_id(answer.ext_fields["msgId"])[1])


def end(broker, half, kind, group="PG", check=False, **overrides):
    fields = dict(producer_group=group, tran_state_table_offset=half.queue_offset,
                  commit_log_offset=half.commit_log_offset, commit_or_rollback=kind,
                  from_transaction_check=check, msg_id=half.properties["UNIQ_KEY"])
    fields.update(overrides)
    return call(broker, RC.END_TRANSACTION, h.EndTransactionRequestHeader(**fields).to_ext_fields())


def offsets(broker, topic):
    return broker.consumer_offset_manager.query_offset(CHECK_GROUP, topic, 0)


def test_commit_puts_the_real_message_and_an_op_record(broker):
    half = prepare(broker)
    assert end(broker, half, 8).code == R.SUCCESS
    [real] = broker.store.records("TopicA", 1)
    assert real.body == b"hello" and real.flag == 3 and real.born_timestamp == NOW_MS - 5
    assert real.sys_flag & 0xC == 8  # COMMIT_TYPE, as Java's resetTransactionValue leaves it
    assert real.prepared_transaction_offset == half.commit_log_offset
    # Java builds the string before clearing them from the map: they stay
    assert real.properties["TRAN_MSG"] == "true"
    assert (real.properties["REAL_TOPIC"], real.properties["REAL_QID"]) == ("TopicA", "1")
    assert broker.store.waits[-2] is True  # the commit waits as the half message's WAIT says
    [op] = broker.store.records(OP)
    assert (op.body, op.properties["TAGS"], op.queue_id) == (b"0", "d", 0)
    assert op.born_host == op.store_host == ("10.0.0.1", 10911)


def test_rollback_puts_only_the_op_record(broker):
    half = prepare(broker)
    assert end(broker, half, 12).code == R.SUCCESS
    assert broker.store.records("TopicA", 1) == []
    assert [op.body for op in broker.store.records(OP)] == [b"0"]


def test_pending_state_is_not_answered(broker):
    assert end(broker, prepare(broker), 0) is None
    assert broker.store.records(OP) == []


@pytest.mark.parametrize("overrides, remark", [
    (dict(group="Other"), "The producer group wrong"),
    (dict(tran_state_table_offset=5), "The transaction state table offset wrong"),
    (dict(commit_log_offset=10 ** 9), "Find prepared transaction message failed"),
])
def test_a_request_that_does_not_match_its_half_message(broker, overrides, remark):
    half = prepare(broker)
    answer = end(broker, half, 8, **overrides)
    assert (answer.code, answer.remark) == (R.SYSTEM_ERROR, remark)
    assert broker.store.records(OP) == [] and broker.store.records("TopicA", 1) == []


def test_a_message_that_is_no_half_message_is_refused(broker):
    send(broker, properties={"PGROUP": "PG", "UNIQ_KEY": "N"}, queue_id=0)
    [plain] = broker.store.records("TopicA", 0)
    answer = end(broker, plain, 8)
    assert answer.code == R.SYSTEM_ERROR and "no half message" in answer.remark
    assert broker.store.records(OP) == []


def test_a_failed_commit_puts_no_op_record(broker):
    half = prepare(broker)
    broker.store.put_status = PutMessageStatus.MESSAGE_ILLEGAL
    answer = end(broker, half, 8)
    assert answer.code == R.MESSAGE_ILLEGAL and answer.remark.startswith("The message is illegal")
    broker.store.put_status = None
    assert broker.store.records(OP) == []


def test_a_slave_refuses_and_does_not_check(tmp_path):
    slave = make_controller(tmp_path, brokerRole="SLAVE", brokerId=1, **TX_SETTINGS)
    slave.start()
    try:
        answer = end(slave, type("Half", (), dict(queue_offset=0, commit_log_offset=0,
                                                  properties={"UNIQ_KEY": "K"}))(), 8)
        assert answer.code == R.SLAVE_NOT_AVAILABLE
        assert slave.transaction_check_service._loop is None
    finally:
        slave.client_manager.stop()


def register(broker, group="PG"):
    producer = Producer()
    broker.client_manager.producers.register_producer(
        group, ClientChannelInfo(producer, "client-1"), broker.client_manager.now())
    return producer


def test_check_back_asks_the_producer_group_and_a_check_commit_settles_it(broker):
    producer = register(broker)
    half = prepare(broker)
    broker.reactor.advance(1)  # first pass: the message is too young
    assert producer.requests == []
    broker.reactor.advance(3)
    [request] = producer.requests
    assert request.code == RC.CHECK_TRANSACTION_STATE
    header = h.CheckTransactionStateRequestHeader.from_ext_fields(request.ext_fields)
    [_, copy] = broker.store.records(HALF)
    assert copy.properties["TRANSACTION_CHECK_TIMES"] == "1"
    assert (header.tran_state_table_offset, header.commit_log_offset) == (1, copy.commit_log_offset)
    assert header.msg_id == header.transaction_id == "K1"
    shown = decode_record(request.body)
    assert (shown.topic, shown.queue_id, shown.body) == ("TopicA", 1, b"hello")
    assert (shown.queue_offset, shown.commit_log_offset) == (1, copy.commit_log_offset)
    assert offsets(broker, HALF) == 1
    assert broker.topic_config_manager.topic_config_table[HALF].read_queue_nums == 1
    # the producer answers from its check: the copy is committed
    answer = end(broker, copy, 8, check=True)
    assert answer.code == R.SUCCESS
    assert len(broker.store.records("TopicA", 1)) == 1
    broker.reactor.advance(1)
    assert len(producer.requests) == 1  # settled: no more checks
    assert (offsets(broker, HALF), offsets(broker, OP)) == (2, 1)


def test_unknown_until_the_maximum_then_discarded(broker):
    producer = register(broker)
    prepare(broker)
    for _ in range(10):
        broker.reactor.advance(1)
    assert len(producer.requests) == 2  # transactionCheckMax
    [discarded] = broker.store.records(DISCARDED)
    assert discarded.properties["TRANSACTION_CHECK_TIMES"] == "2"
    assert discarded.properties["REAL_TOPIC"] == "TopicA"
    assert DISCARDED in broker.topic_config_manager.topic_config_table
    assert offsets(broker, HALF) == 3  # the original and its two copies


def resume(broker, msg_id):
    return call(broker, RC.RESUME_CHECK_HALF_MESSAGE,
                h.ResumeCheckHalfMessageRequestHeader(msg_id=msg_id).to_ext_fields())


def test_a_discarded_message_resumed_is_checked_again(broker):
    producer = register(broker)
    prepare(broker)
    for _ in range(10):
        broker.reactor.advance(1)
    [discarded] = broker.store.records(DISCARDED)
    answer = resume(broker, create_message_id(discarded.store_host, discarded.commit_log_offset))
    assert answer.code == R.SUCCESS
    resumed = broker.store.records(HALF)[-1]
    assert resumed.properties["TRANSACTION_CHECK_TIMES"] == "0"
    assert (resumed.body, resumed.properties["REAL_TOPIC"]) == (b"hello", "TopicA")
    assert resumed.born_timestamp == discarded.born_timestamp
    broker.reactor.advance(1)
    assert len(producer.requests) == 3  # checked once more (counted from 0 again)


def test_resume_of_what_is_not_there(broker):
    gone = resume(broker, create_message_id(("10.0.0.1", 10911), 10 ** 9))
    assert (gone.code, gone.remark) == (R.SYSTEM_ERROR, "Exception was thrown when putting "
                                        "message back to RMQ_SYS_TRANS_HALF_TOPIC.")
    assert resume(broker, "not an id").code == R.SYSTEM_ERROR
    half = prepare(broker)
    broker.store.put_status = PutMessageStatus.OS_PAGECACHE_BUSY
    refused = resume(broker, create_message_id(half.store_host, half.commit_log_offset))
    assert (refused.code, refused.remark) == (
        R.SYSTEM_ERROR, "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.")


def test_no_producer_connection_checks_again_later(broker):
    prepare(broker)
    broker.reactor.advance(4)
    assert len(broker.store.records(HALF)) == 2  # put back although nobody was asked
    producer = register(broker)
    broker.reactor.advance(1)
    assert len(producer.requests) == 1


def test_a_failed_put_back_stops_the_pass_at_that_message(broker):
    producer = register(broker)
    prepare(broker)
    broker.store.put_status = PutMessageStatus.OS_PAGECACHE_BUSY
    broker.reactor.advance(4)
    assert producer.requests == [] and offsets(broker, HALF) == -1
    broker.store.put_status = None
    broker.reactor.advance(1)
    assert len(producer.requests) == 1 and offsets(broker, HALF) == 1


def _fake_store(tmp_path):
    controller = make_controller(tmp_path, **TX_SETTINGS)
    return controller.config, controller.reactor, lambda: controller.store


def _disk_store(tmp_path):
    config = broker_config(tmp_path, **dict(SMALL, **TX_SETTINGS))
    clock = Clock()
    clock.advance(NOW_MS / 1000)
    return config, clock, lambda: DefaultMessageStore(config, clock)


@pytest.mark.parametrize("stores", [_fake_store, _disk_store], ids=["fake-store", "disk-store"])
def test_a_restart_checks_on_from_the_stored_offsets(tmp_path, stores):
    config, clock, open_store = stores(tmp_path)
    first = BrokerController(config, clock, store=open_store())
    first.start()
    producer = register(first)
    committed = prepare(first, key="A")
    prepare(first, key="B")
    end(first, committed, 8)
    clock.advance(4)
    assert [decode_record(r.body).properties["UNIQ_KEY"] for r in producer.requests] == ["B"]
    first.shutdown()  # persists consumerOffset.json, shuts the store down
    second = BrokerController(config, clock, store=open_store())
    second.start()
    try:
        assert second.consumer_offset_manager.query_offset(CHECK_GROUP, HALF, 0) == 2
        producer = register(second)
        clock.advance(1)
        # only B's copy is checked again (its second check); A stays settled
        [request] = producer.requests
        shown = decode_record(request.body)
        assert (shown.properties["UNIQ_KEY"], shown.properties["TRANSACTION_CHECK_TIMES"]) == ("B", "2")
    finally:
        second.shutdown()
