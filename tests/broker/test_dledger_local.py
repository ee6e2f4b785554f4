"""``twistd -n rmq-local --dledger``: one command starts a NameServer and three brokers on a
DLedger commit log; they elect a master, a real Java 4.9.8 producer and consumer use it
through the NameServer alone, and SIGTERM stops all four cleanly."""

import shutil
import signal

import pytest

from rmqproto.codec.bodies.route import TopicRouteData
from rmqproto.codec.codes import RequestCode, ResponseCode
from support.daemons import Daemon
from support.interop import java_available
from support.javapeers import JavaPeers
from support.processes import free_port, wait_for_port
from support.syncclient import call, wait_until

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")


def broker_addrs(namesrv_addr):
    """``{brokerId: address}`` of TBW102's route once it has a master and two slaves."""
    answer = call(namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
    if answer.code != ResponseCode.SUCCESS:
        return None
    (broker,) = TopicRouteData.from_json(answer.body).broker_datas
    addrs = broker.broker_addrs
    return addrs if len(addrs) == 3 and 0 in addrs else None


def test_one_command_runs_a_dledger_group_a_java_client_uses(tmp_path, request):
    # DLedger reserves its segments whole: the data goes whatever the outcome
    request.addfinalizer(lambda: shutil.rmtree(tmp_path / "data", ignore_errors=True))
    base = free_port(30) + 2      # brokers on base, +10, +20; members on +2, +12, +22
    ports = dict(listenPort=base, namesrvPort=base + 26, metricsPort=0)
    conf = tmp_path / "broker.conf"
    conf.write_text("mappedFileSizeCommitLog=%d\nmappedFileSizeConsumeQueue=6000\n"
                    % (16 * 1024 * 1024))
    daemon = Daemon(tmp_path, "rmq-local", "--dledger", "--dataDir", tmp_path / "data", "-c", conf,
                    *("--%s=%d" % item for item in ports.items()), port=ports["namesrvPort"])
    try:
        for i in range(3):
            wait_for_port(base + 10 * i, 30, daemon)
        namesrv_addr = "127.0.0.1:%d" % ports["namesrvPort"]
        addrs = wait_until(lambda: broker_addrs(namesrv_addr), timeout=60)
        members = {"127.0.0.1:%d" % (base + 10 * i): i for i in range(3)}
        assert set(addrs.values()) == set(members)
        assert {members[a] + 1 for broker_id, a in addrs.items() if broker_id} == \
            {broker_id for broker_id in addrs if broker_id}

        result = JavaPeers(tmp_path).run_client("rmqproto.peers.ProduceConsume", namesrv_addr,
                                                "LocalDLedgerTopic", 100, "LocalGroup", 60)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        assert "SENT 100" in result.stdout and "RECEIVED 100" in result.stdout
    finally:
        code = daemon.stop()
    assert code in (0, -signal.SIGTERM), daemon.output()[-3000:]
    log = daemon.output()
    assert log.count("unregisterBroker OK") == 3, log[-3000:]
    for member in ("n0", "n1", "n2"):  # each line says which broker wrote it
        assert "[%s rmqproto.broker.dledgerbroker#info]" % member in log
        assert not (tmp_path / "data" / member / "abort").exists()

