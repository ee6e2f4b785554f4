"""``twistd -n rmq-local --metricsPort …``: ``/metrics`` parses with prometheus_client's own
parser and, with the cluster idle, its figures equal what ``mqadmin brokerStatus`` (4.9.8)
and ``mqadmin haStatus`` (5.3.3) print for the same broker, before and after the mqadmin
calls; each slave's ack offset is the one the master's HA state reports
(``slaveAckOffset_<addr>``)."""

import re

import pytest

from support.daemons import Daemon
from support.hapair import runtime_info
from support.interop import java_available
from support.javapeers import JavaPeers
from support.processes import free_port, wait_for_port
from support.scrape import scrape, value
from support.syncclient import wait_until

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

TOPIC, GROUP = "MetricsTopic", "MetricsGroup"


@pytest.fixture
def local(tmp_path):
    # master: VIP base, base + 2, HA + 3; NameServer + 6; metrics + 8; slave: + 10 to + 13
    base = free_port(14)
    ports = dict(listenPort=base + 2, namesrvPort=base + 6, metricsPort=base + 8, consolePort=0)
    conf = tmp_path / "broker.conf"
    conf.write_text("mappedFileSizeCommitLog=%d\nmappedFileSizeConsumeQueue=6000\n" % (4 << 20))
    daemon = Daemon(tmp_path, "rmq-local", "--dataDir", tmp_path / "data", "-c", conf,
                    *("--%s=%d" % item for item in ports.items()), port=ports["namesrvPort"])
    for port in (ports["listenPort"], ports["listenPort"] + 10, ports["metricsPort"]):
        wait_for_port(port, 30, daemon)
    yield daemon, ports
    daemon.stop()


def brokers(samples, name):
    """``{brokerId: value}`` of a broker metric."""
    return {labels["brokerId"]: v for labels, v in samples[name]}


def test_metrics_equal_mqadmin_broker_status_and_the_ha_state(local, tmp_path):
    daemon, ports = local
    namesrv = "127.0.0.1:%d" % ports["namesrvPort"]
    master = "127.0.0.1:%d" % ports["listenPort"]
    wait_until(lambda: runtime_info(master).get("inSyncSlaveNums") == "1", timeout=30)
    peers = JavaPeers(tmp_path)
    result = peers.run_client("rmqproto.peers.ProduceConsume", namesrv, TOPIC, 100, GROUP, 60)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]

    def settled():
        samples = scrape(ports["metricsPort"])
        top = value(samples, "rmqproto_ha_master_max_offset")
        offsets = brokers(samples, "rocketmq_brokeruntime_commitlog_maxoffset")
        acks = [v for _, v in samples["rmqproto_ha_slave_ack_offset"]]
        return top > 0 and offsets == {"0": top, "1": top} and acks == [top]

    wait_until(settled, timeout=30)
    before = scrape(ports["metricsPort"])
    out = peers.mqadmin("brokerStatus", "-b", master, "-n", namesrv)
    ha = peers.mqadmin5("haStatus", "-b", master, "-n", namesrv)
    after = scrape(ports["metricsPort"])
    # "key<padding>: value"; a slave's keys hold its "host:port"
    status = dict(re.findall(r"^(\S+?)\s*:\s(.*?)\s*$", out, re.M))
    assert int(status["msgPutTotalTodayNow"]) >= 100, out
    for samples in (before, after):
        master_only = dict(brokerId="0")
        for key, name in (("commitLogMaxOffset", "rocketmq_brokeruntime_commitlog_maxoffset"),
                          ("commitLogMinOffset", "rocketmq_brokeruntime_commitlog_minoffset"),
                          ("msgPutTotalTodayNow", "rocketmq_brokeruntime_msg_put_total_today_now"),
                          ("putMessageSizeTotal", "rocketmq_brokeruntime_put_message_size_total"),
                          ("masterCommitLogMaxOffset", "rmqproto_ha_master_max_offset"),
                          ("push2SlaveMaxOffset", "rmqproto_ha_push2slave_max_offset")):
            assert value(samples, name, **master_only) == int(status[key]), (key, out)
        (slave_addr,) = [key[len("slaveAckOffset_"):] for key in status
                         if key.startswith("slaveAckOffset_")]
        assert value(samples, "rmqproto_ha_slave_ack_offset", slave=slave_addr) == int(
            status["slaveAckOffset_" + slave_addr])
        assert value(samples, "rmqproto_ha_slave_lag_bytes", slave=slave_addr) == 0
        assert value(samples, "rmqproto_ha_slave_lag_seconds", slave=slave_addr) == 0
        assert value(samples, "rmqproto_ha_slave_in_sync", slave=slave_addr) == 1
        # mqadmin 5.3.3 haStatus: the master's offset and its slave's row
        top = value(samples, "rmqproto_ha_master_max_offset")
        assert "#MasterCommitLogMaxOffset\t%d" % top in ha, ha
        assert "#InSyncSlaveNum\t1" in ha, ha
        (row,) = [line.split() for line in ha.splitlines() if line.startswith(slave_addr + " ")]
        assert int(row[1]) == value(samples, "rmqproto_ha_slave_ack_offset", slave=slave_addr), ha
        assert int(row[2]) == value(samples, "rmqproto_ha_slave_lag_bytes", slave=slave_addr), ha
        assert value(samples, "rmqproto_ha_group_transfer_waits") == 0

    # the per-topic and per-group statistics, the consumer lag, the NameServer, connections
    assert value(after, "rocketmq_producer_tps", brokerId="0", topic=TOPIC) >= 0
    assert value(after, "rocketmq_consumer_tps", brokerId="0", topic=TOPIC, group=GROUP) >= 0
    assert value(after, "rocketmq_group_diff", brokerId="0", topic=TOPIC, group=GROUP) == 0
    assert value(after, "rmqproto_namesrv_brokers") == 2
    assert value(after, "rmqproto_store_flushes_total", brokerId="0") > 0
    assert 0 <= value(after, "rocketmq_brokeruntime_commitlog_disk_ratio", brokerId="0") <= 1
    connections = after["rmqproto_remoting_connections"]
    assert {labels.get("brokerId", "ns") for labels, _ in connections} == {"0", "1", "ns"}
