"""``mqadmin resetOffsetByTime`` (4.9.8) with a live Java 4.9.8 push consumer, against our broker
and the Java 4.9.7 broker in one cluster: each consumer is told, and consumes everything again."""

import time

import pytest

from brokerkit import DaemonCluster
from rmqproto.codec.bodies.offsets import ConsumerOffsetSerializeWrapper
from rmqproto.codec.codes import RequestCode as RC
from support.javapeers import broker_port
from support.syncclient import call, wait_until

pytestmark = pytest.mark.java

QUEUES = 4


def deliveries(cluster, name):
    log = cluster.workdir / (name + ".log")
    return log.read_text(errors="replace").count("MSG ") if log.exists() else 0


def stored(addr, topic):
    return sum(int(call(addr, RC.GET_MAX_OFFSET, {"topic": topic, "queueId": str(q)})
                   .ext_fields["offset"]) for q in range(QUEUES))


def committed(addr, group, topic):
    """Whether the broker has stored the group's offset of every queue (what a reset needs)."""
    table = ConsumerOffsetSerializeWrapper.from_json(
        call(addr, RC.GET_ALL_CONSUMER_OFFSET).body).offset_table
    return len(table.get(topic + "@" + group, {})) == QUEUES


def test_reset_offset_by_time_as_java(tmp_path):
    cluster = DaemonCluster(tmp_path)
    try:
        peers, namesrv = cluster.peers, cluster.namesrv_addr
        port = broker_port()
        peers.broker("java", listenPort=port, namesrvAddr=namesrv, brokerName="broker-java",
                     mappedFileSizeCommitLog=16 * 1024 * 1024)
        brokers = {"ours": cluster.broker_addr, "java": "127.0.0.1:%d" % port}
        wait_until(lambda: cluster.route("TBW102") is not None
                   and len(cluster.route("TBW102").broker_datas) == 2, timeout=60)
        start = int(time.time() * 1000)
        for name, addr in brokers.items():
            topic = "Reset_" + name
            peers.mqadmin("updateTopic", "-b", addr, "-t", topic, "-r", QUEUES, "-w", QUEUES)
            sent = peers.run_client("rmqproto.peers.SyncSends", namesrv, topic, 12)
            assert sent.returncode == 0, sent.stdout + sent.stderr
            peers.start("consumer-" + name, peers.client_cp, "rmqproto.peers.ConsumeTopics",
                        namesrv, "G_" + name, topic, "1000", "120")
        for name, addr in brokers.items():
            count = stored(addr, "Reset_" + name)
            assert count == 12
            wait_until(lambda: deliveries(cluster, "consumer-" + name) >= count, timeout=60)
            wait_until(lambda: committed(addr, "G_" + name, "Reset_" + name), timeout=30)
        for name in brokers:
            out = peers.mqadmin("resetOffsetByTime", "-n", namesrv, "-g", "G_" + name,
                                "-t", "Reset_" + name, "-s", start, "-f", "true")
            assert "rollback consumer offset by specified group" in out or "#brokerName" in out, out
        for name in brokers:  # every message once more
            wait_until(lambda: deliveries(cluster, "consumer-" + name) >= 24, timeout=60)
    finally:
        cluster.stop()
