"""Transactional messages from the real Java 4.9.8 and 5.3.3 ``TransactionMQProducer``,
against our broker and a Java 4.9.7 broker at once, with the same outcome.

One NameServer (ours), two brokers of one cluster: ``broker-java`` serves topics
``TxOnJava`` (the 4.9.8 client's) and ``TxOnJava5`` (the 5.3.3 client's), ``broker-ours``
(``twistd rmq-master``) ``TxOnOurs`` and ``TxOnOurs5``; both check back every second, after
1 s, at most twice. ``Transactions.java``, run with each client side by side, sends five
transactional messages to each of its two topics: COMMIT and ROLLBACK at once, and three UNKNOW answered at the check-back
with COMMIT, ROLLBACK and UNKNOW (every time). A push consumer of each topic must get the
same messages with the same properties from both, each check-back must have come, the
always-unknown message exactly ``transactionCheckMax`` times before both brokers moved it
to ``TRANS_CHECK_MAX_TIME_TOPIC``; RESUME_CHECK_HALF_MESSAGE puts it back in the half topic on
both.
"""

import collections
from concurrent.futures import ThreadPoolExecutor

import pytest

from rmqproto.broker.transaction.records import CHECK_GROUP
from rmqproto.codec.bodies.route import TopicRouteData
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.message import create_message_id, iter_records
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
CLIENTS = {"4.9.8": "", "5.3.3": "5"}  # a client's topics: TOPICS with this suffix
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


def outcome(stdout, topic):
    """What ``Transactions`` printed of ``topic``: its sends, check counts, the views of its
    checks and the messages consumed, with the topic's name (also in the producer group's)
    replaced, as it is all that differs between the brokers."""
    lines = [[word.replace(topic, "TOPIC") for word in line.split()]
             for line in stdout.splitlines() if line.split()[1:2] == [topic]]
    sends = sorted(tuple(line[2:]) for line in lines if line[0] == "SEND")
    checks = collections.Counter(line[2] for line in lines if line[0] == "CHECK")
    # what the producer is shown on a check: the real topic and the count so far
    check_views = sorted(tuple(line[2:]) for line in lines if line[0] == "CHECK")
    received = sorted(tuple(line[2:]) for line in lines if line[0] == "RECEIVED")
    return sends, checks, check_views, received


def test_java_transaction_producers_same_outcome_on_both_brokers(brokers):
    namesrv_addr, addrs, peers = brokers
    topics = {(client, name): topic + suffix for client, suffix in CLIENTS.items()
              for name, topic in TOPICS.items()}
    for (_, name), topic in topics.items():
        create_topic(addrs[name], topic)  # one queue: REAL_QID is 0 on both
    for topic in topics.values():
        wait_until(lambda t=topic: routed(namesrv_addr, t), timeout=30)
    classpaths = {"4.9.8": peers.client_cp, "5.3.3": peers.client5_cp}
    with ThreadPoolExecutor(len(CLIENTS)) as pool:  # the two clients side by side
        runs = {client: pool.submit(
            peers.run_client, "rmqproto.peers.Transactions", namesrv_addr, CHECK_MAX, 90,
            *(topics[client, name] for name in TOPICS), classpath=classpaths[client])
            for client in CLIENTS}
    for client, run in runs.items():
        result = run.result()
        assert result.returncode == 0, (client, result.stdout[-4000:] + result.stderr[-4000:])
        java, ours = (outcome(result.stdout, topics[client, name]) for name in ("java", "ours"))
        assert java[0] == ours[0] == sorted([
            ("commit", "SEND_OK", "COMMIT_MESSAGE"), ("rollback", "SEND_OK", "ROLLBACK_MESSAGE"),
            ("check-commit", "SEND_OK", "UNKNOW"), ("check-rollback", "SEND_OK", "UNKNOW"),
            ("check-unknown", "SEND_OK", "UNKNOW")]), client
        assert java[1] == ours[1] == {"check-commit": 1, "check-rollback": 1,
                                      "check-unknown": CHECK_MAX}, client
        assert java[2] == ours[2], client
        assert ("check-unknown", str(CHECK_MAX), "TOPIC", str(CHECK_MAX)) in ours[2], client
        # the consumer gets the two committed messages, with TRAN_MSG, REAL_TOPIC, REAL_QID
        # and PGROUP left in their properties as Java leaves them
        assert ours[3] == java[3], client
        assert [line[0] for line in ours[3]] == ["check-commit", "commit"], client
    clients = len(CLIENTS)
    for name, addr in addrs.items():
        # each client's always-unknown message was moved aside; its five half messages and
        # their four copies (one per check) are all settled, by the four op records (two
        # ended at once, two at their check) or by the discard
        assert max_offset(addr, "TRANS_CHECK_MAX_TIME_TOPIC") == clients, name
        assert (max_offset(addr, HALF), max_offset(addr, OP)) == (9 * clients, 4 * clients), name
        wait_until(lambda a=addr: (checked(a, HALF), checked(a, OP))
                   == (9 * clients, 4 * clients), timeout=10)
    # RESUME_CHECK_HALF_MESSAGE: a discarded message goes back to the half topic, its check
    # count at 0, on both
    for name, addr in addrs.items():
        discarded = query_message(addr, "TRANS_CHECK_MAX_TIME_TOPIC", "key-check-unknown")[0]
        msg_id = create_message_id(discarded.store_host, discarded.commit_log_offset)
        answer = call(addr, RC.RESUME_CHECK_HALF_MESSAGE, {"msgId": msg_id})
        assert (answer.code, answer.remark) == (R.SUCCESS, None), name
        [resumed] = [r for r in query_message(addr, HALF, "key-check-unknown")
                     if r.properties.get("TRANSACTION_CHECK_TIMES") == "0"
                     and r.commit_log_offset > discarded.commit_log_offset]
        assert (resumed.body, resumed.queue_id) == (discarded.body, 0), name
        assert resumed.properties["REAL_TOPIC"] == discarded.properties["REAL_TOPIC"], name


def query_message(addr, topic, key):
    answer = call(addr, RC.QUERY_MESSAGE, {"topic": topic, "key": key, "maxNum": "32",
                                           "beginTimestamp": "0", "endTimestamp": str(2 ** 62)})
    assert answer.code == R.SUCCESS, answer.remark
    return sorted(iter_records(answer.body), key=lambda r: r.commit_log_offset)


def checked(addr, topic):
    """How far the broker's check-back has come in ``topic`` (the system group's offset)."""
    answer = call(addr, RC.QUERY_CONSUMER_OFFSET, {
        "consumerGroup": CHECK_GROUP, "topic": topic, "queueId": "0"})
    return int(answer.ext_fields["offset"]) if answer.code == R.SUCCESS else None
