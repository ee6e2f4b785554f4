"""Transactional messages from the real Java 4.9.8 ``TransactionMQProducer``, against our
broker and a Java 4.9.7 broker at once, with the same outcome.

One NameServer (ours), two brokers of one cluster: ``broker-java`` serves topic
``TxOnJava``, ``broker-ours`` (``twistd rmq-master``) ``TxOnOurs``; both check back every
second, after 1 s, at most twice. ``Transactions.java`` sends five transactional messages
to each topic: COMMIT and ROLLBACK at once, and three UNKNOW answered at the check-back
with COMMIT, ROLLBACK and UNKNOW (every time). A push consumer of each topic must get the
same messages with the same properties from both, each check-back must have come, the
always-unknown message exactly ``transactionCheckMax`` times before both brokers moved it
to ``TRANS_CHECK_MAX_TIME_TOPIC``.
"""

import collections

import pytest

from rmqproto.broker.transaction.records import CHECK_GROUP
from rmqproto.codec.bodies.route import TopicRouteData
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from support.daemons import start_nameserver
from support.interop import java_available
from support.javapeers import JavaPeers, broker_port
from support.syncclient import call, create_topic, wait_until
from brokerkit import start_broker

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

CHECK_MAX = 2
TRANSACTIONS = dict(transactionCheckInterval=1000, transactionTimeOut=1000,
                    transactionCheckMax=CHECK_MAX)
TOPICS = {"java": "TxOnJava", "ours": "TxOnOurs"}
HALF, OP = "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC"


@pytest.fixture(scope="module")
def brokers(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("transactions-java")
    namesrv, namesrv_addr = start_nameserver(workdir)
    peers = ours = None
    try:
        peers = JavaPeers(workdir)
        java_port = broker_port()
        peers.broker("java", brokerName="broker-java", listenPort=java_port,
                     namesrvAddr=namesrv_addr, **TRANSACTIONS)
        ours_dir = workdir / "ours"
        ours_dir.mkdir()
        ours, ours_addr = start_broker(ours_dir, namesrv_addr, brokerName="broker-ours",
                                       **TRANSACTIONS)
        addrs = {"java": "127.0.0.1:%d" % java_port, "ours": ours_addr}
        yield namesrv_addr, addrs, peers
    finally:
        if peers is not None:
            peers.stop_all()
        if ours is not None:
            ours.kill()
        namesrv.stop()


def routed(namesrv_addr, topic):
    answer = call(namesrv_addr, RC.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    return answer.code == R.SUCCESS and bool(TopicRouteData.from_json(answer.body).broker_datas)


def max_offset(addr, topic, queue_id=0):
    answer = call(addr, RC.GET_MAX_OFFSET, {"topic": topic, "queueId": str(queue_id)})
    return int(answer.ext_fields["offset"]) if answer.code == R.SUCCESS else None


def test_java_transaction_producer_same_outcome_on_both_brokers(brokers):
    namesrv_addr, addrs, peers = brokers
    for name, topic in TOPICS.items():
        create_topic(addrs[name], topic)  # one queue: REAL_QID is 0 on both
        wait_until(lambda t=topic: routed(namesrv_addr, t), timeout=30)
    result = peers.run_client("rmqproto.peers.Transactions", namesrv_addr, CHECK_MAX, 60,
                              *TOPICS.values())
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    outcome = {}
    for name, topic in TOPICS.items():
        # the topic's name (also in the producer group's) is all that differs
        lines = [[word.replace(topic, "TOPIC") for word in line.split()]
                 for line in result.stdout.splitlines() if line.split()[1:2] == [topic]]
        sends = sorted(tuple(line[2:]) for line in lines if line[0] == "SEND")
        checks = collections.Counter(line[2] for line in lines if line[0] == "CHECK")
        # what the producer is shown on a check: the real topic and the count so far
        check_views = sorted(tuple(line[2:]) for line in lines if line[0] == "CHECK")
        received = sorted(tuple(line[2:]) for line in lines if line[0] == "RECEIVED")
        outcome[name] = sends, checks, check_views, received
    java, ours = outcome["java"], outcome["ours"]
    assert java[0] == ours[0] == sorted([
        ("commit", "SEND_OK", "COMMIT_MESSAGE"), ("rollback", "SEND_OK", "ROLLBACK_MESSAGE"),
        ("check-commit", "SEND_OK", "UNKNOW"), ("check-rollback", "SEND_OK", "UNKNOW"),
        ("check-unknown", "SEND_OK", "UNKNOW")])
    assert java[1] == ours[1] == {"check-commit": 1, "check-rollback": 1,
                                  "check-unknown": CHECK_MAX}
    assert java[2] == ours[2]
    assert ("check-unknown", str(CHECK_MAX), "TOPIC", str(CHECK_MAX)) in ours[2]
    # the consumer gets the two committed messages, with TRAN_MSG, REAL_TOPIC, REAL_QID
    # and PGROUP left in their properties as Java leaves them
    assert ours[3] == java[3]
    assert [line[0] for line in ours[3]] == ["check-commit", "commit"]
    for name, addr in addrs.items():
        # the always-unknown message was moved aside; the five half messages and their four
        # copies (one per check) are all settled, by the four op records (two ended at
        # once, two at their check) or by the discard
        assert max_offset(addr, "TRANS_CHECK_MAX_TIME_TOPIC") == 1, name
        assert (max_offset(addr, HALF), max_offset(addr, OP)) == (9, 4), name
        wait_until(lambda a=addr: (checked(a, HALF), checked(a, OP)) == (9, 4), timeout=10)


def checked(addr, topic):
    """How far the broker's check-back has come in ``topic`` (the system group's offset)."""
    answer = call(addr, RC.QUERY_CONSUMER_OFFSET, {
        "consumerGroup": CHECK_GROUP, "topic": topic, "queueId": "0"})
    return int(answer.ext_fields["offset"]) if answer.code == R.SUCCESS else None
