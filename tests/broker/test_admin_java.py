"""``mqadmin`` 4.9.8 against our broker and the Java 4.9.7 broker, started with the same settings
in one cluster: ``getBrokerConfig`` / ``updateBrokerConfig``, ``producerConnection``,
``deleteSubGroup``, ``deleteTopic`` and ``resetOffsetByTime`` (with a live Java push consumer)
give the same answers from both."""

import re
import time

import pytest

from brokerkit import DaemonCluster
from rmqproto.codec.bodies.client import HeartbeatData, ProducerData
from rmqproto.codec.bodies.offsets import ConsumerOffsetSerializeWrapper
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.config import parse_properties
from support.javapeers import broker_port
from support.syncclient import SyncClient, call, wait_until

pytestmark = pytest.mark.java

#: What differs by nature between two brokers on one machine, or is not a setting of ours.
DIFFERENT = {"listenPort", "haListenPort", "namesrvAddr", "storePathRootDir", "storePathCommitLog",
             "rocketmqHome", "brokerName"}
SHARED = dict(brokerClusterName="DefaultCluster", brokerIP1="127.0.0.1", brokerIP2="127.0.0.1",
              mappedFileSizeCommitLog=16 * 1024 * 1024, mappedFileSizeConsumeQueue=6000)
QUEUES = 4


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """Our NameServer, our broker and a Java broker registered with it: ``(cluster, brokers)``
    with ``brokers = {"ours": addr, "java": addr}``."""
    cluster = DaemonCluster(tmp_path_factory.mktemp("admin-java"), **SHARED)
    port = broker_port()
    cluster.peers.broker("java", listenPort=port, namesrvAddr=cluster.namesrv_addr,
                         brokerName="broker-java", **SHARED)
    wait_until(lambda: cluster.route("TBW102") is not None
               and len(cluster.route("TBW102").broker_datas) == 2, timeout=60)
    yield cluster, {"ours": cluster.broker_addr, "java": "127.0.0.1:%d" % port}
    cluster.stop()


def mqadmin(cluster, *args):
    return cluster.peers.mqadmin(*args, "-n", cluster.namesrv_addr)


def broker_config(cluster, broker):
    out = mqadmin(cluster, "getBrokerConfig", "-b", broker)
    values = {}
    for line in out.splitlines():
        found = re.match(r"(\S+)\s+=  (.*)$", line)
        if found:
            values[found.group(1)] = found.group(2)
    assert values, out
    return values


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


def test_producer_connection_delete_sub_group_and_delete_topic(both):
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


def test_reset_offset_by_time_tells_the_live_consumer(both):
    cluster, brokers = both
    peers, namesrv = cluster.peers, cluster.namesrv_addr
    start = int(time.time() * 1000)
    for name, addr in brokers.items():
        topic = "Reset_" + name
        mqadmin(cluster, "updateTopic", "-b", addr, "-t", topic, "-r", QUEUES, "-w", QUEUES)
        sent = peers.run_client("rmqproto.peers.SyncSends", namesrv, topic, 12)
        assert sent.returncode == 0, sent.stdout + sent.stderr
        peers.start("consumer-" + name, peers.client_cp, "rmqproto.peers.ConsumeTopics",
                    namesrv, "G_" + name, topic, "1000", "120")
    for name, addr in brokers.items():
        assert stored(addr, "Reset_" + name) == 12
        wait_until(lambda: deliveries(cluster, "consumer-" + name) >= 12, timeout=60)
        wait_until(lambda: committed(addr, "G_" + name, "Reset_" + name), timeout=30)
    for name in brokers:
        out = mqadmin(cluster, "resetOffsetByTime", "-g", "G_" + name, "-t", "Reset_" + name,
                      "-s", start, "-f", "true")
        assert "rollback consumer offset by specified group" in out or "#brokerName" in out, out
    for name in brokers:  # every message once more
        wait_until(lambda: deliveries(cluster, "consumer-" + name) >= 24, timeout=60)


def test_get_and_update_broker_config(both):
    """Last: it changes both brokers' settings."""
    cluster, brokers = both
    ours, java = broker_config(cluster, brokers["ours"]), broker_config(cluster, brokers["java"])
    assert set(java) <= set(ours)
    assert {k: ours[k] for k in java if k not in DIFFERENT} == \
        {k: v for k, v in java.items() if k not in DIFFERENT}
    for key, value in (("maxMessageSize", "65536"), ("autoCreateTopicEnable", "false")):
        out = mqadmin(cluster, "updateBrokerConfig", "-c", "DefaultCluster", "-k", key, "-v", value)
        assert out.count("update broker config success") == 2, out  # both brokers
    ours, java = broker_config(cluster, brokers["ours"]), broker_config(cluster, brokers["java"])
    for key in ("maxMessageSize", "autoCreateTopicEnable"):
        assert ours[key] == java[key]
    saved = parse_properties((cluster.workdir / "store" / "config" / "broker.properties").read_text())
    assert (saved["maxMessageSize"], saved["autoCreateTopicEnable"]) == ("65536", "false")
    java_saved = parse_properties((cluster.workdir / "broker-java.properties").read_text())
    assert set(java_saved) <= set(saved)
