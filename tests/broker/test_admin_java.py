"""``mqadmin`` 4.9.8 ``producerConnection``, ``deleteSubGroup`` and ``deleteTopic`` against our
broker and the Java 4.9.7 broker in one cluster: the same answers from both."""

import re

import pytest

from brokerkit import DaemonCluster
from rmqproto.codec.bodies.client import HeartbeatData, ProducerData
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from support.javapeers import broker_port
from support.syncclient import SyncClient, call, wait_until

pytestmark = pytest.mark.java


@pytest.fixture
def both(tmp_path):
    cluster = DaemonCluster(tmp_path)
    port = broker_port()
    cluster.peers.broker("java", listenPort=port, namesrvAddr=cluster.namesrv_addr,
                         brokerName="broker-java", mappedFileSizeCommitLog=16 * 1024 * 1024)
    java_addr = "127.0.0.1:%d" % port
    wait_until(lambda: cluster.route("TBW102") is not None
               and len(cluster.route("TBW102").broker_datas) == 2, timeout=60)
    yield cluster, {"ours": cluster.broker_addr, "java": java_addr}
    cluster.stop()


def mqadmin(cluster, *args):
    return cluster.peers.mqadmin(*args, "-n", cluster.namesrv_addr)


def test_admin_commands_answer_as_java(both):
    cluster, brokers = both
    producers = []
    for name, addr in brokers.items():  # a topic on each broker alone, so routes pick it
        out = mqadmin(cluster, "updateTopic", "-b", addr, "-t", "Admin_" + name)
        assert "create topic to %s success" % addr in out, out
        client = SyncClient(addr)
        heartbeat = HeartbeatData("producer-" + name, [ProducerData("PG_admin")], [])
        assert client.call(RC.HEART_BEAT, body=heartbeat.to_json()).code == R.SUCCESS
        producers.append(client)
    for name in brokers:
        out = mqadmin(cluster, "producerConnection", "-g", "PG_admin", "-t", "Admin_" + name)
        assert re.search(r"producer-%s\s+127\.0\.0\.1:\d+\s+JAVA" % name, out), out
        missing = mqadmin(cluster, "producerConnection", "-g", "PG_nobody", "-t", "Admin_" + name)
        assert "the producer group[PG_nobody] not exist" in missing, missing
    for client in producers:
        client.close()

    for name, addr in brokers.items():
        mqadmin(cluster, "updateSubGroup", "-b", addr, "-g", "SG_admin")
        out = mqadmin(cluster, "deleteSubGroup", "-b", addr, "-g", "SG_admin", "-r", "true")
        assert "delete subscription group [SG_admin] from broker [%s] success" % addr in out, out
        groups = call(addr, RC.GET_ALL_SUBSCRIPTIONGROUP_CONFIG).body.decode()
        assert '"SG_admin"' not in groups

    out = mqadmin(cluster, "deleteTopic", "-c", "DefaultCluster", "-t", "Admin_ours")
    assert "delete topic [Admin_ours] from cluster [DefaultCluster] success" in out, out
    assert "Admin_ours" not in call(brokers["ours"], RC.GET_ALL_TOPIC_CONFIG).body.decode()
    wait_until(lambda: cluster.route("Admin_ours") is None, timeout=30)
    assert cluster.route("Admin_java") is not None
