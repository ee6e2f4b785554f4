"""Our NameServer against the real thing: Java 4.9.7 brokers, mqadmin 4.9.8, Java and C++ clients.

One cluster per module: our NameServer and a Java NameServer side by side, a Java master
and slave (broker-a) registered with both. Every mqadmin answer from ours must equal the
Java NameServer's (up to Java's own HashSet ordering and the NameServer address echoed).
"""

import re

import pytest

from rmqproto.codec import fastjson
from rmqproto.codec.bodies.route import ClusterInfo, TopicRouteData
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from support import cppclient
from support.daemons import start_nameserver
from support.interop import java_available
from support.javapeers import JavaPeers, broker_port, free_port
from support.syncclient import call, wait_until

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

TOPIC = "InteropTopic"
# A Java master creates this topic lazily on its first transaction check
# (``transactionCheckInterval`` after start, 60 s by default) and registers again; the
# fixture makes that happen at once and waits for it, so the topic set is settled
# before any test compares the two NameServers.
TRANSACTION_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"


class Cluster:
    def __init__(self, workdir):
        self.ours, self.ours_addr = start_nameserver(workdir)
        self.peers = JavaPeers(workdir)
        java_port = free_port()
        self.peers.namesrv(java_port)
        self.java_addr = "127.0.0.1:%d" % java_port
        both = "%s;%s" % (self.ours_addr, self.java_addr)
        self.master_port, self.slave_port = broker_port(), broker_port()
        self.master_addr = "127.0.0.1:%d" % self.master_port
        self.master = self.peers.broker("master", listenPort=self.master_port, namesrvAddr=both,
                                        transactionCheckInterval=1000)
        self.slave = self.peers.broker("slave", listenPort=self.slave_port, namesrvAddr=both,
                                       brokerId=1, brokerRole="SLAVE")
        wait_until(lambda: self.broker_ids(self.ours_addr) == {0, 1}, timeout=60)
        wait_until(lambda: self.broker_ids(self.java_addr) == {0, 1}, timeout=60)
        self.peers.mqadmin("updateTopic", "-b", self.master_addr, "-t", TOPIC, "-r", "4", "-w", "4")
        for address in (self.ours_addr, self.java_addr):
            for topic in (TOPIC, TRANSACTION_HALF_TOPIC):
                wait_until(lambda: call(address, RC.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}).code
                           == R.SUCCESS, timeout=30)

    @staticmethod
    def broker_ids(address):
        info = ClusterInfo.from_json(call(address, RC.GET_BROKER_CLUSTER_INFO).body)
        broker = (info.broker_addr_table or {}).get("broker-a")
        return set(broker.broker_addrs) if broker else set()

    def mqadmin_both(self, *args):
        """The command's output against ours and against Java, with the address made neutral."""
        return [self.peers.mqadmin(*args, "-n", address).replace(address, "<namesrv>")
                for address in (self.ours_addr, self.java_addr)]

    def stop(self):
        self.peers.stop_all()
        self.ours.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = Cluster(tmp_path_factory.mktemp("namesrv-interop"))
    yield cluster
    cluster.stop()


def answer_lines(output):
    """mqadmin's answer as its non-blank lines (its logs go to a file)."""
    return [line for line in output.splitlines() if line.strip()]


def test_slave_learns_master_ha_address_and_route_lists_both(cluster):
    route = TopicRouteData.from_json(call(cluster.ours_addr, RC.GET_ROUTEINFO_BY_TOPIC,
                                          {"topic": TOPIC}).body)
    assert set(route.broker_datas[0].broker_addrs) == {0, 1}
    # the slave only replicates if it learned the master's HA address from a NameServer
    result = cluster.peers.run_client("rmqproto.peers.ProduceConsume", cluster.ours_addr, TOPIC,
                                      20, "interop_group", 90)
    assert result.returncode == 0, result.stdout + result.stderr

    def replicated():
        status = {}
        for address in (cluster.master_addr, "127.0.0.1:%d" % cluster.slave_port):
            lines = answer_lines(cluster.peers.mqadmin("brokerStatus", "-b", address, "-n",
                                                       cluster.ours_addr))
            table = dict(re.split(r"\s*:\s*", line.strip(), 1) for line in lines if ":" in line)
            status[address] = int(table["commitLogMaxOffset"])
        master, slave = status.values()
        return master > 0 and master == slave
    wait_until(replicated, timeout=60, interval=2)


def test_cluster_list_matches_java(cluster):
    ours, java = cluster.mqadmin_both("clusterList")
    columns = lambda out: sorted(tuple(line.split()[:5]) for line in answer_lines(out))
    assert columns(ours) == columns(java)
    assert ("DefaultCluster", "broker-a", "1") in {c[:3] for c in columns(ours)}


def test_topic_list_matches_java(cluster):
    ours, java = cluster.mqadmin_both("topicList")
    assert sorted(answer_lines(ours)) == sorted(answer_lines(java))
    assert TOPIC in answer_lines(ours)


def test_topic_route_matches_java(cluster):
    ours, java = cluster.mqadmin_both("topicRoute", "-t", TOPIC)
    route = lambda out: TopicRouteData.from_json("\n".join(answer_lines(out)).encode())
    assert route(ours) == route(java)
    ours, java = cluster.mqadmin_both("topicRoute", "-t", "NoSuchTopic")
    for output in (ours, java):
        assert "CODE: 17  DESC: No topic route info in name server for the topic: NoSuchTopic" in output


def test_kv_config_commands_match_java(cluster):
    assert len(set(map(tuple, map(answer_lines, cluster.mqadmin_both(
        "updateKvConfig", "-s", "rmq-ns", "-k", "rmq-key", "-v", "rmq-value"))))) == 1
    values = [call(a, RC.GET_KV_CONFIG, {"namespace": "rmq-ns", "key": "rmq-key"})
              for a in (cluster.ours_addr, cluster.java_addr)]
    assert [(v.code, v.ext_fields) for v in values] == [(R.SUCCESS, {"value": "rmq-value"})] * 2
    ours, java = cluster.mqadmin_both("deleteKvConfig", "-s", "rmq-ns", "-k", "rmq-key")
    assert answer_lines(ours) == answer_lines(java) == ["delete kv config from namespace success."]
    values = [call(a, RC.GET_KV_CONFIG, {"namespace": "rmq-ns", "key": "rmq-key"})
              for a in (cluster.ours_addr, cluster.java_addr)]
    assert [(v.code, v.remark) for v in values] == [
        (R.QUERY_NOT_FOUND, "No config item, Namespace: rmq-ns Key: rmq-key")] * 2


def test_write_permission_commands_match_java(cluster):
    def perms(address):
        route = call(address, RC.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})
        return [q.perm for q in TopicRouteData.from_json(route.body).queue_datas]

    ours, java = cluster.mqadmin_both("wipeWritePerm", "-b", "broker-a")
    assert answer_lines(ours) == answer_lines(java)
    assert "wipe write perm of broker[broker-a] in name server[<namesrv>] OK" in ours
    assert perms(cluster.ours_addr) == perms(cluster.java_addr) == [4]
    ours, java = cluster.mqadmin_both("addWritePerm", "-b", "broker-a")
    assert answer_lines(ours) == answer_lines(java)
    assert perms(cluster.ours_addr) == perms(cluster.java_addr) == [6]


def test_route_json_bytes_match_java_for_old_and_new_clients(cluster):
    for version in (409, 100):
        ours, java = [call(a, RC.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC}, version=version)
                      for a in (cluster.ours_addr, cluster.java_addr)]
        assert fastjson.loads(ours.body) == fastjson.loads(java.body)
        assert (b'{"0":' in ours.body) == (b'{"0":' in java.body) == (version == 409)


@pytest.mark.skipif(not cppclient.available(), reason="the rocketmq C++ client is not installed")
def test_cpp_client_moves_messages_through_our_nameserver(cluster):
    report = cppclient.run(cluster.ours_addr, TOPIC, 10, "cpp_interop_group", timeout=90)
    assert report == {"sent": 10, "received": 10}


def test_killed_broker_leaves_routes_within_expiry_window(cluster):
    cluster.slave.kill()  # kill -9
    wait_until(lambda: cluster.broker_ids(cluster.ours_addr) == {0}, timeout=120)
    route = TopicRouteData.from_json(call(cluster.ours_addr, RC.GET_ROUTEINFO_BY_TOPIC,
                                          {"topic": TOPIC}).body)
    assert set(route.broker_datas[0].broker_addrs) == {0}
