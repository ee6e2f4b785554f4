"""Every request code the broker serves, with random header fields (valid, out of range and
not parsable) and random bodies, against a real store: each request is answered, the only
errors are the header and body decoders' (SYSTEM_ERROR, as Java answers its decode
exceptions), and the store is consistent afterwards.

Such fuzzing found a send-back group whose retry topic cannot name a directory and a topic
with 2147483647 queues that stalled every stats query; their own tests are with the send-back
(``test_pull.py``), the admin requests (``test_admin.py``) and the store's checks."""

import random

import pytest
from twisted.internet import defer

from rmqproto.broker.controller import BrokerController
from rmqproto.codec import headers as h
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.frame import RemotingCommand, decode_frame
from rmqproto.codec.message import MessageRecord
from rmqproto.errors import CodecError
from rmqproto.remoting import RequestContext, dispatch
from brokerkit import broker_config
from consume_support import Connection
from store.store_support import SMALL, stores  # noqa: F401 (a fixture: real stores)
from support.storecheck import check_store

TOPICS = ("T", "TopicA")
GOOD = {
    "int": ["0", "1", "2", "3", "-1", "7", "31", "1700000000000", "2147483647"],
    "boolean": ["true", "false"],
    "double": ["1.5"],
    "string": list(TOPICS) + ["%RETRY%g", "g", "TBW102", "*", "broker-a", "DefaultCluster",
                              "TAGS\x01x\x02WAIT\x01true\x02UNIQ_KEY\x01U1", "KEYS\x01k",
                              "DELAY\x013"],
}
ODD = ["", "x", " 1", "1.5", "+3", "2147483648", "-9223372036854775809", "99999999999999999999",
       "é", "\x00", "a/b", "..", "a b", "a" * 200, "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRACE_TOPIC",
       "DELAY\x0199", "TRAN_MSG\x01true", "{", "null", "C0A8010100002A9F0000000000000000"]
BODIES = [
    b"", b"x", b"{}", b"[]", b"null", b"\x00" * 50, bytes(range(256)), b"\xff\xfe",
    b'{"topicConfigTable":{}}', b'[{"topic":"T","brokerName":"broker-a","queueId":0}]',
    b'{"clientID":"c","producerDataSet":[],"consumerDataSet":[{"groupName":"g",'
    b'"subscriptionDataSet":[{"topic":"T","subString":"*"}]}]}',
    b'{"consumerGroup":"g","clientId":"c","mqSet":[{"topic":"T","brokerName":"broker-a",'
    b'"queueId":0}]}',
    b'{"groupName":"g","retryQueueNums":2}',
]
#: Java's ArithmeticException, answered SYSTEM_ERROR as Java does: a send with queueId < 0 to a
#: topic whose writeQueueNums was set to 0.
JAVA_ALIKE = (CodecError, ZeroDivisionError)


def _field_value(field, rng, offsets):
    kind = field.java_type.lower()
    kind = "int" if kind in ("integer", "long") else kind
    if rng.random() >= 0.85:
        return rng.choice(ODD + GOOD["string"])
    return rng.choice(GOOD[kind] + (offsets if kind == "int" else []))


def _request(rng, code, offsets):
    """A request of ``code``; ``offsets`` (commit-log offsets of stored records, as text) join
    the integers, so that send-back and VIEW_MESSAGE_BY_ID find messages."""
    cls = h.request_header_class(code)
    ext = {f.wire: _field_value(f, rng, offsets) for f in (cls.all_fields if cls else ())
           if rng.random() < 0.9}
    return RemotingCommand(int(code), opaque=7, ext_fields=ext or None, body=rng.choice(BODIES),
                           version=rng.choice([409, 0, 999]))


@pytest.mark.parametrize("seed", range(4))
def test_random_requests(tmp_path, stores, seed, monkeypatch):
    store = stores.open(maxMessageSize=4096)
    broker = BrokerController(broker_config(tmp_path, maxMessageSize=4096), store.reactor,
                              store=store)
    unexpected = []
    failed = dispatch.RequestDispatcher._failed

    def record_failure(self, failure, request):
        if not isinstance(failure.value, JAVA_ALIKE):
            unexpected.append((request.code, request.ext_fields, failure.getTraceback()))
        return failed(self, failure, request)

    monkeypatch.setattr(dispatch.RequestDispatcher, "_failed", record_failure)
    offsets = []
    for topic in TOPICS:
        header = h.CreateTopicRequestHeader(topic=topic, default_topic="TBW102", read_queue_nums=4,
                                            write_queue_nums=4, perm=6, order=False,
                                            topic_filter_type="SINGLE_TAG")
        broker.dispatcher.dispatch(RemotingCommand(int(RC.UPDATE_AND_CREATE_TOPIC), opaque=1,
                                                   ext_fields=header.to_ext_fields()),
                                   RequestContext(None, "10.0.0.9:1"))
        for queue_id in range(4):
            put = store.put_message(MessageRecord(topic, b"body", {"TAGS": "x", "KEYS": "k"},
                                                  queue_id=queue_id))
            put.addCallback(lambda result: offsets.append(str(result.append_result.wrote_offset)))
    rng = random.Random(seed)
    # deleting a topic leaves its records without consume queues by design (its own test is
    # in test_admin.py), which the store check below would report
    codes = sorted(set(broker.dispatcher._processors) - {int(RC.DELETE_TOPIC_IN_BROKER)})
    connections = [Connection("10.0.0.%d:1" % i) for i in range(3)]
    answers = []
    for i in range(3000):
        request = _request(rng, rng.choice(codes), offsets)
        connection = rng.choice(connections)
        answer = broker.dispatcher.dispatch(request, RequestContext(connection, connection.peer))
        if isinstance(answer, defer.Deferred):
            answer.addCallback(answers.append)
        elif answer is not None:
            answers.append(answer)
        if i % 100 == 0:
            store.reactor.advance(1)
    store.reactor.advance(60)  # parked pulls and delayed deliveries run out
    assert not unexpected, unexpected[0]
    assert all(decode_frame(a[4:]).code in set(R) | {0} for a in answers if a is not None)
    store.shutdown()
    check = check_store(tmp_path / "store", SMALL["mappedFileSizeCommitLog"],
                        SMALL["mappedFileSizeConsumeQueue"])
    assert not check.problems
