"""The transactional producer and the producer's heartbeats, against our NameServer and
two masters and against the Java 4.9.7 ones, in the same tests.

Five transactional messages as ``Transactions.java`` sends them with the Java 4.9.8
``TransactionMQProducer`` (tests/broker/test_transactions_java.py): COMMIT and ROLLBACK at
once, and three UNKNOW decided at the check-back (COMMIT, ROLLBACK, UNKNOW every time).
The outcome must be Java's: the sends, one check of each decided message,
``transactionCheckMax`` checks of the undecided one, and only the two committed messages
consumed. A producer's heartbeat makes it a connection of its group on the masters, and
closing it unregisters it."""

import collections
import json
import time

import pytest

from twisted.internet import defer

from rmqproto.client import Message, deferred
from rmqproto.client.blocking import LitePullConsumer, Producer, TransactionProducer
from rmqproto.client.transaction import LocalTransactionState as State
from rmqproto.codec.codes import RequestCode, ResponseCode
from support.realreactor import run_reactor
from support.syncclient import call, wait_until
from client.clusters import cluster_for

pytestmark = pytest.mark.java
CHECK_MAX = 2
KINDS = ("commit", "rollback", "check-commit", "check-rollback", "check-unknown")
TOPICS = ("TxBlocking", "TxTwisted")


@pytest.fixture(scope="module", params=["ours", "java"])
def cluster(request, tmp_path_factory):
    # a half message is checked once 3 s old: the ones decided at once never are, even on a
    # busy machine (the broker checks a copy that an END_TRANSACTION for the original misses)
    with cluster_for(request.param, tmp_path_factory, TOPICS, transactionCheckInterval=1000,
                     transactionTimeOut=3000, transactionCheckMax=CHECK_MAX) as cluster:
        yield cluster


class Listener:
    """``Transactions.java``'s listener: decides by the message's ``kind`` property."""

    def __init__(self):
        self.checks = collections.Counter()

    def done(self):
        return self.checks["check-unknown"] >= CHECK_MAX and self.checks["check-rollback"] >= 2

    def execute_local_transaction(self, message, arg):
        assert arg == "arg" and len(message.transaction_id) == 32
        return {"commit": State.COMMIT_MESSAGE, "rollback": "ROLLBACK_MESSAGE"}.get(
            message.properties["kind"], State.UNKNOW)

    def check_local_transaction(self, message):
        kind = message.user_properties["kind"]
        self.checks[kind] += 1
        if kind == "check-rollback":
            raise RuntimeError("an exception is UNKNOW, then the next check rolls it back")
        return {"check-commit": State.COMMIT_MESSAGE, "check-rollback": State.ROLLBACK_MESSAGE
                }.get(kind, State.UNKNOW) if self.checks[kind] > 1 or kind != "check-rollback" \
            else State.UNKNOW


def messages(topic):
    return [Message(topic, kind + " body", tags="TagTx", keys="key-" + kind,
                    properties={"kind": kind}) for kind in KINDS]


def check_outcome(cluster, topic, results, listener):
    assert [(r.status.name, r.local_transaction_state.name) for r in results] == [
        ("SEND_OK", "COMMIT_MESSAGE"), ("SEND_OK", "ROLLBACK_MESSAGE"), ("SEND_OK", "UNKNOW"),
        ("SEND_OK", "UNKNOW"), ("SEND_OK", "UNKNOW")]
    wait_until(listener.done, timeout=40)
    got = []
    with LitePullConsumer(namesrvAddr=cluster.namesrv_addr, consumerGroup="cg_" + topic,
                          consumeFromWhere="CONSUME_FROM_FIRST_OFFSET") as consumer:
        consumer.subscribe(topic)
        deadline = time.monotonic() + 3  # a check or a message too many would come now
        while time.monotonic() < deadline:
            got += consumer.poll(0.5)
    assert sorted(m.user_properties["kind"] for m in got) == ["check-commit", "commit"]
    for m in got:  # as Java leaves them
        assert (m.properties["TRAN_MSG"], m.properties["REAL_TOPIC"]) == ("true", topic)
    assert listener.checks == {"check-commit": 1, "check-rollback": 2, "check-unknown": CHECK_MAX}


def producer_connections(cluster, group):
    found = set()
    for address in cluster.addresses.values():
        answer = call(address, RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": group})
        if answer.code == ResponseCode.SUCCESS:
            found |= {c["clientId"] for c in json.loads(answer.body)["connectionSet"]}
    return found


def test_blocking_transactions_as_java(cluster):
    listener = Listener()
    with TransactionProducer(listener, namesrvAddr=cluster.namesrv_addr,
                             producerGroup="TxProducer-blocking") as producer:
        results = [producer.send_message_in_transaction(m, "arg") for m in messages(TOPICS[0])]
        check_outcome(cluster, TOPICS[0], results, listener)


def test_twisted_transactions_as_java(cluster):
    listener = Listener()
    outcome = {}

    async def scenario(reactor):
        producer = deferred.TransactionProducer(reactor, listener, namesrvAddr=cluster.namesrv_addr,
                                                producerGroup="TxProducer-twisted")
        try:
            outcome["results"] = [await producer.send_message_in_transaction(m, "arg")
                                  for m in messages(TOPICS[1])]
            while not listener.done():  # the producer answers the checks until closed
                await deferred.task.deferLater(reactor, 0.2)
        finally:
            await producer.close()

    run_reactor(lambda reactor: defer.Deferred.fromCoroutine(scenario(reactor)), timeout=40)
    check_outcome(cluster, TOPICS[1], outcome["results"], listener)


def test_heartbeat_then_unregister(cluster):
    producer = Producer(namesrvAddr=cluster.namesrv_addr, producerGroup="pg_heartbeat")
    try:
        producer.send(Message(TOPICS[0], "hello"))
        assert producer_connections(cluster, "pg_heartbeat") == {producer.core.client_id}
    finally:
        producer.close()
    wait_until(lambda: producer_connections(cluster, "pg_heartbeat") == set(), timeout=10)
