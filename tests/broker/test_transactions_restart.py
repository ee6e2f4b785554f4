"""A restart of ``twistd rmq-master`` in the middle of transactions from the real Java 4.9.8
``TransactionMQProducer``: the restarted broker checks on from the ``CID_RMQ_SYS_TRANS``
offsets and op records it stored, so the messages settled before the restart are not
checked again, and the always-unknown one gets exactly its remaining checks."""

import collections

import pytest

from support.interop import java_available
from support.syncclient import call, create_topic, wait_until
from brokerkit import DaemonCluster
from rmqproto.codec.codes import RequestCode as RC

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

TOPIC = "TxRestart"
CHECK_MAX = 3


@pytest.fixture
def cluster(tmp_path):
    cluster = DaemonCluster(tmp_path, transactionCheckInterval=1000, transactionTimeOut=2000,
                            transactionCheckMax=CHECK_MAX)
    yield cluster
    cluster.stop()


def lines(process, first):
    return [line.split()[2:] for line in process.output().splitlines()
            if line.split()[:2] == [first, TOPIC]]


def test_checks_go_on_after_a_restart(cluster):
    create_topic(cluster.broker_addr, TOPIC)
    wait_until(lambda: cluster.route(TOPIC) is not None, timeout=30)
    client = cluster.peers.start("transactions", cluster.peers.client_cp, "rmqproto.peers.Transactions",
                                 cluster.namesrv_addr, str(CHECK_MAX), "90", TOPIC)
    # the first check of each unknown message, answered: then a graceful restart
    wait_until(lambda: len(lines(client, "CHECK")) == 3, timeout=60)
    wait_until(lambda: call(cluster.broker_addr, RC.QUERY_CONSUMER_OFFSET, {
        "consumerGroup": "CID_RMQ_SYS_TRANS", "topic": "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "queueId": "0"}).ext_fields.get("offset") == "2", timeout=30)
    cluster.broker.stop()
    cluster.start_broker()
    assert client.popen.wait(timeout=90) == 0, client.output()[-4000:]
    checks = collections.Counter(line[0] for line in lines(client, "CHECK"))
    assert checks == {"check-commit": 1, "check-rollback": 1, "check-unknown": CHECK_MAX}
    received = collections.Counter(line[0] for line in lines(client, "RECEIVED"))
    assert received == {"commit": 1, "check-commit": 1}
