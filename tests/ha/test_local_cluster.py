"""``twistd -n rmq-local``: one command starts a NameServer, a SYNC_MASTER and
its slave; a real Java 4.9.8 producer and consumer use it through the NameServer alone.

The route names both brokers (ids 0 and 1); ProduceConsume gets SEND_OK for every message and
reads them all back; the slave's commit log equals the master's; SIGTERM stops all three
cleanly (both stores without ``abort``, the brokers unregistered first).
"""

import signal

import pytest

from rmqproto.codec.bodies.route import TopicRouteData
from rmqproto.codec.codes import RequestCode, ResponseCode
from support.daemons import Daemon
from support.hacheck import compare_commit_logs
from support.hapair import runtime_info
from support.interop import java_available
from support.javapeers import JavaPeers
from support.processes import free_port, wait_for_port
from support.syncclient import call, wait_until

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

TOPIC = "LocalTopic"
SEGMENT = 16 * 1024 * 1024


def broker_addrs(namesrv_addr):
    """The addresses by broker id the NameServer routes TBW102 to, once there are two."""
    answer = call(namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
    if answer.code != ResponseCode.SUCCESS:
        return None
    (broker,) = TopicRouteData.from_json(answer.body).broker_datas
    return broker.broker_addrs if len(broker.broker_addrs) == 2 else None


@pytest.fixture
def local(tmp_path):
    """``twistd -n rmq-local`` on free ports with its data under ``tmp_path / "data"``."""
    base = free_port(14)  # the master's port and HA port, the slave's (+10, +11), the NameServer
    ports = dict(listenPort=base + 2, namesrvPort=base + 6, metricsPort=0, consolePort=0)
    conf = tmp_path / "broker.conf"
    conf.write_text("mappedFileSizeCommitLog=%d\nmappedFileSizeConsumeQueue=6000\n" % SEGMENT)
    daemon = Daemon(tmp_path, "rmq-local", "--dataDir", tmp_path / "data", "-c", conf,
                    *("--%s=%d" % item for item in ports.items()), port=ports["namesrvPort"])
    for port in (ports["listenPort"], ports["listenPort"] + 10):
        wait_for_port(port, 30, daemon)
    yield daemon, ports
    daemon.stop()


def test_one_command_runs_a_replicating_pair_a_java_client_uses(local, tmp_path):
    daemon, ports = local
    namesrv_addr = "127.0.0.1:%d" % ports["namesrvPort"]
    master_addr = "127.0.0.1:%d" % ports["listenPort"]
    slave_addr = "127.0.0.1:%d" % (ports["listenPort"] + 10)
    addrs = wait_until(lambda: broker_addrs(namesrv_addr), timeout=30)
    assert addrs == {0: master_addr, 1: slave_addr}
    wait_until(lambda: runtime_info(master_addr).get("inSyncSlaveNums") == "1", timeout=30)

    peers = JavaPeers(tmp_path)
    result = peers.run_client("rmqproto.peers.ProduceConsume", namesrv_addr, TOPIC, 300,
                              "LocalGroup", 60)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "SENT 300" in result.stdout and "RECEIVED 300" in result.stdout

    master_max = int(runtime_info(master_addr)["commitLogMaxOffset"])
    wait_until(lambda: runtime_info(slave_addr)["commitLogMaxOffset"] == str(master_max),
               timeout=30)
    data = tmp_path / "data"
    assert compare_commit_logs(data / "master" / "commitlog", data / "slave" / "commitlog") == []

    assert daemon.stop() in (0, -signal.SIGTERM), daemon.output()[-3000:]
    assert not (data / "master" / "abort").exists() and not (data / "slave" / "abort").exists()
    log = daemon.output()
    assert log.count("unregisterBroker OK") == 2, log[-3000:]
    for name in ("master", "slave"):  # each line says which broker wrote it
        assert "[%s rmqproto.broker.registration#info] unregisterBroker OK" % name in log
