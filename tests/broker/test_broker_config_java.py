"""``mqadmin getBrokerConfig`` and ``updateBrokerConfig`` (4.9.8) against our broker and the Java
4.9.7 broker started with the same settings: the same keys and values, the same updates."""

import re

import pytest

from brokerkit import DaemonCluster
from rmqproto.config import parse_properties
from support.javapeers import broker_port
from support.syncclient import wait_until

pytestmark = pytest.mark.java

#: What differs by nature between two brokers on one machine, or is not a setting of ours.
DIFFERENT = {"listenPort", "haListenPort", "namesrvAddr", "storePathRootDir", "storePathCommitLog",
             "rocketmqHome", "brokerName"}
SHARED = dict(brokerClusterName="DefaultCluster", brokerIP1="127.0.0.1", brokerIP2="127.0.0.1",
              mappedFileSizeCommitLog=16 * 1024 * 1024, mappedFileSizeConsumeQueue=6000)


def broker_config(peers, namesrv, broker):
    out = peers.mqadmin("getBrokerConfig", "-n", namesrv, "-b", broker)
    values = {}
    for line in out.splitlines():
        found = re.match(r"(\S+)\s+=  (.*)$", line)
        if found:
            values[found.group(1)] = found.group(2)
    assert values, out
    return values


@pytest.fixture
def both(tmp_path):
    cluster = DaemonCluster(tmp_path, **SHARED)
    port = broker_port()
    cluster.peers.broker("java", listenPort=port, namesrvAddr=cluster.namesrv_addr,
                         brokerName="broker-java", **SHARED)
    java_addr = "127.0.0.1:%d" % port
    wait_until(lambda: cluster.route("TBW102") is not None
               and len(cluster.route("TBW102").broker_datas) == 2, timeout=60)
    yield cluster, java_addr
    cluster.stop()


def test_get_and_update_broker_config_as_java(both):
    cluster, java_addr = both
    peers, namesrv = cluster.peers, cluster.namesrv_addr
    ours = broker_config(peers, namesrv, cluster.broker_addr)
    java = broker_config(peers, namesrv, java_addr)
    assert set(java) <= set(ours)
    assert {k: ours[k] for k in java if k not in DIFFERENT} == \
        {k: v for k, v in java.items() if k not in DIFFERENT}

    for key, value in (("maxMessageSize", "65536"), ("autoCreateTopicEnable", "false")):
        out = peers.mqadmin("updateBrokerConfig", "-n", namesrv, "-c", "DefaultCluster",
                            "-k", key, "-v", value)  # both brokers of the cluster
        assert out.count("update broker config success") == 2, out
    ours = broker_config(peers, namesrv, cluster.broker_addr)
    java = broker_config(peers, namesrv, java_addr)
    for key in ("maxMessageSize", "autoCreateTopicEnable"):
        assert ours[key] == java[key]
    saved = parse_properties((cluster.workdir / "store" / "config" / "broker.properties").read_text())
    assert (saved["maxMessageSize"], saved["autoCreateTopicEnable"]) == ("65536", "false")
    java_saved = parse_properties((cluster.workdir / "broker-java.properties").read_text())
    assert set(java_saved) <= set(saved)
