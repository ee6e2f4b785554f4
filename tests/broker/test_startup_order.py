"""Starting next to a live broker, and the listen backlog of every port (issue 43, item 9)."""

import subprocess

from twisted.internet.testing import MemoryReactorClock

from rmqproto.broker.config import SETTINGS, apply_startup_rules
from rmqproto.services import namesrv
from rmqproto.services.broker import BrokerService
from support.daemons import Daemon, start_nameserver
from support.processes import free_port
from support.syncclient import wait_until
from brokerkit import start_broker


def test_a_second_broker_on_a_live_store_exits_before_recovering_it(tmp_path):
    nameserver, namesrv_addr = start_nameserver(tmp_path)
    first, first_addr = start_broker(tmp_path, namesrv_addr)
    second = None
    try:
        port = free_port(3)
        workdir = tmp_path / "second"
        workdir.mkdir()
        second = Daemon(workdir, "rmq-master", "--listenPort", port, "--bindAddress", "127.0.0.1",
                        "--namesrvAddr", namesrv_addr, "--storePathRootDir", tmp_path / "store")
        wait_until(lambda: second.poll() is not None, timeout=30)
        output = second.output()
        assert second.returncode != 0
        assert "the store in %s is locked by another process" % (tmp_path / "store") in output
        assert "give this broker its own storePathRootDir" in output
        assert "Traceback" not in output
        assert "recovery" not in output and "last shutdown" not in output
        assert first.poll() is None
    finally:
        if second is not None:
            second.stop()
        first.stop()
        nameserver.stop()


def _listened(reactor):
    """``{port: backlog}`` of what ``reactor`` (a MemoryReactor) was asked to listen on."""
    return {port: backlog for port, _, backlog, _ in reactor.tcpServers}


def test_every_port_listens_with_the_java_backlog(tmp_path):
    reactor = MemoryReactorClock()
    values, _ = namesrv.SETTINGS.resolve({"listenPort": "19876",
                                          "kvConfigPath": str(tmp_path / "kv.json")})
    namesrv.NameServerService(values, reactor).startService()
    assert _listened(reactor) == {19876: 1024}  # NettySystemConfig.socketBacklog

    reactor = MemoryReactorClock()
    config, _ = SETTINGS.resolve({"listenPort": "20911", "serverSocketBacklog": "4096",
                                  "storePathRootDir": str(tmp_path / "store")})
    service = BrokerService(apply_startup_rules(config), reactor)
    service.listener.startService()
    service.vip_listener.startService()
    service.ha.startService()
    try:
        assert _listened(reactor) == {20911: 4096, 20909: 4096, 20912: 4096}
    finally:
        service.ha.stopService()


def test_the_backlog_is_the_kernel_s(tmp_path):
    # ss shows a listening socket's backlog in Send-Q
    nameserver, address = start_nameserver(tmp_path, "--serverSocketBacklog", "777")
    try:
        port = address.rsplit(":", 1)[1]
        out = subprocess.run(["ss", "-ltnH", "sport = :%s" % port], capture_output=True,
                             text=True, check=True).stdout.split()
        assert out[2] == "777"
    finally:
        nameserver.stop()
