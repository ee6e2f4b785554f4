"""The slave's HA service on a memory reactor (``docs/ha-slave.md``): the master's HA
address comes from the registration (or ``haMasterAddress``), the connection is made,
reported on, fed, kept alive, closed on silence and made again; metadata sync follows
the master's remoting address; the runtime info shows the client's state."""

import pytest
from twisted.internet.error import ConnectionRefusedError
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.python.failure import Failure

from rmqproto.broker.config import SETTINGS, apply_startup_rules
from rmqproto.broker.controller import BrokerController
from rmqproto.codec.ha import encode_slave_report, encode_transfer
from rmqproto.ha import ha_service
from rmqproto.ha.slave import READ_SIZE, SMALL_READ_SIZE, HASlaveService
from rmqproto.store.defaultstore import DefaultMessageStore

from support.recordstream import record, segment

SEGMENT = 64 * 1024


def slave_controller(tmp_path, **overrides):
    reactor = MemoryReactorClock()
    reactor.advance(1_700_000_000)
    values, unknown = SETTINGS.resolve(dict(
        brokerName="broker-a", brokerIP1="127.0.0.1", brokerIP2="127.0.0.1", namesrvAddr="",
        brokerRole="SLAVE", brokerId=1, storePathRootDir=str(tmp_path / "slave"),
        mappedFileSizeCommitLog=SEGMENT, mappedFileSizeConsumeQueue=1000), overrides)
    assert not unknown
    values = apply_startup_rules(values)
    store = DefaultMessageStore(values, reactor)
    store.load()
    store.start()
    return BrokerController(values, reactor, store=store)


@pytest.fixture
def slave(tmp_path):
    controller = slave_controller(tmp_path)
    service = ha_service(controller)
    assert isinstance(service, HASlaveService)
    service.startService()
    yield controller, service
    if service.running:
        service.stopService()
    controller.store.shutdown()


def connect(reactor, host="10.0.0.1", port=10912):
    """Complete the newest connection attempt to ``host:port``; its transport."""
    attempt_host, attempt_port, factory = reactor.tcpClients[-1][:3]
    assert (attempt_host, attempt_port) == (host, port)
    protocol = factory.buildProtocol(None)
    transport = StringTransport()
    protocol.makeConnection(transport)
    return protocol, transport


def test_connects_to_the_registered_ha_address_and_reports_at_once(slave):
    controller, service = slave
    assert controller.reactor.tcpClients == []
    controller.registration.master_listeners[-1]("10.0.0.1:10911", "10.0.0.1:10912")
    assert service.slave_sync.master_addr == "10.0.0.1:10911"
    _, transport = connect(controller.reactor)
    assert transport.value() == encode_slave_report(0)
    assert service.client.state.name == "TRANSFER"


def test_ha_status_is_the_clients_while_the_service_runs(slave):
    controller, service = slave
    service.master_changed("10.0.0.1:10911", "10.0.0.1:10912")
    connect(controller.reactor)
    info = controller.ha_runtime_info()
    assert not info.master and info.ha_connection_info == []
    assert info.ha_client_runtime_info.master_addr == "10.0.0.1:10912"
    assert info.ha_client_runtime_info.last_write_timestamp == int(controller.reactor.seconds() * 1000)
    service.stopService()
    assert controller.ha_runtime_info is None


def test_the_connection_reads_a_mebibyte_at_once_while_reads_fill_the_buffer(slave):
    controller, service = slave
    service.master_changed("10.0.0.1:10911", "10.0.0.1:10912")
    protocol = controller.reactor.tcpClients[-1][2].buildProtocol(None)
    transport = StringTransport()
    transport.bufferSize = 4096  # a TCP transport's, what its doRead asks recv for
    protocol.makeConnection(transport)
    assert transport.bufferSize == SMALL_READ_SIZE == 1 << 16
    half = SEGMENT // 2  # transfers never cross a segment
    log = b"".join(segment(SEGMENT, seed=seed) for seed in range(3))
    stream = b"".join(encode_transfer(offset, log[offset:offset + half])
                      for offset in range(0, 6 * half, half))
    protocol.dataReceived(stream[:100])  # a short read keeps the small buffer
    assert transport.bufferSize == SMALL_READ_SIZE
    protocol.dataReceived(stream[100:100 + SMALL_READ_SIZE])  # a full one: catching up
    assert transport.bufferSize == READ_SIZE == 1 << 20
    protocol.dataReceived(stream[100 + SMALL_READ_SIZE:140_000])  # not full: stays large
    assert transport.bufferSize == READ_SIZE
    protocol.dataReceived(stream[140_000:])  # shorter than the small buffer: back to it
    assert transport.bufferSize == SMALL_READ_SIZE
    assert controller.store.get_max_phy_offset() == 6 * half


def test_replicates_reports_heartbeats_and_housekeeping(slave):
    controller, service = slave
    reactor = controller.reactor
    service.master_changed("10.0.0.1:10911", "10.0.0.1:10912")
    protocol, transport = connect(reactor)
    transport.clear()
    one = record(b"\0" * 100)
    end = SEGMENT + len(one)
    protocol.dataReceived(encode_transfer(SEGMENT, one)[:50])
    # 38 bytes of a record: the log starts at SEGMENT, nothing whole after it to acknowledge
    assert transport.value() == encode_slave_report(SEGMENT)
    transport.clear()
    protocol.dataReceived(encode_transfer(SEGMENT, one)[50:])
    assert controller.store.get_max_phy_offset() == end
    assert transport.value() == encode_slave_report(end)
    transport.clear()
    reactor.advance(5.0)
    assert transport.value() == encode_slave_report(end)
    for _ in range(3):
        reactor.advance(5.0)
    assert transport.disconnecting  # 20 s without a byte from the master
    assert service.client.state.name == "READY"
    protocol.connectionLost(Failure(ConnectionRefusedError()))
    attempts = len(reactor.tcpClients)
    reactor.advance(1.0)
    assert len(reactor.tcpClients) == attempts + 1
    _, again = connect(reactor)
    assert again.value() == encode_slave_report(end)


def test_mismatch_closes_the_connection(slave):
    controller, service = slave
    service.master_changed("10.0.0.1:10911", "10.0.0.1:10912")
    protocol, transport = connect(controller.reactor)
    one = record()
    protocol.dataReceived(encode_transfer(0, one))
    protocol.dataReceived(encode_transfer(5, one))
    assert transport.disconnecting
    assert controller.store.get_max_phy_offset() == len(one)


def test_failed_connections_are_retried_with_backoff(slave):
    controller, service = slave
    reactor = controller.reactor
    service.master_changed("10.0.0.1:10911", "10.0.0.1:10912")
    waits = []
    for _ in range(5):
        factory = reactor.tcpClients[-1][2]
        factory.clientConnectionFailed(None, Failure(ConnectionRefusedError()))
        before, waited = len(reactor.tcpClients), 0.0
        while len(reactor.tcpClients) == before:
            reactor.advance(0.5)
            waited += 0.5
        waits.append(waited)
    assert waits == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_configured_ha_master_address_wins(tmp_path):
    controller = slave_controller(tmp_path, haMasterAddress="10.9.9.9:20912")
    service = HASlaveService(controller)
    service.startService()
    try:
        connect(controller.reactor, "10.9.9.9", 20912)
        service.master_changed("10.0.0.1:10911", None)  # what registration passes then
        assert service.client.master_ha_address == "10.9.9.9:20912"
    finally:
        service.stopService()
        controller.store.shutdown()


def test_runtime_info_and_stop(slave):
    controller, service = slave
    service.master_changed("10.0.0.1:10911", "10.0.0.1:10912")
    protocol, transport = connect(controller.reactor)
    info = controller.store.runtime_info()
    assert info["haClientState"] == "TRANSFER"
    assert info["haClientMasterAddr"] == "10.0.0.1:10912"
    assert info["masterAddr"] == "10.0.0.1:10911"
    assert info["haClientMaxOffset"] == "0"
    service.stopService()
    assert transport.disconnecting
    assert service.client.state.name == "SHUTDOWN"
    assert "haClientState" not in controller.store.runtime_info()
    assert service.master_changed not in controller.registration.master_listeners
    protocol.connectionLost(Failure(ConnectionRefusedError()))
    controller.reactor.advance(30)
    assert len(controller.reactor.tcpClients) == 1


def test_rmq_slave_options_have_the_slaves_defaults(tmp_path):
    from rmqproto.services import slave as tap
    options = tap.Options()
    options.parseOptions([])
    assert options.values["brokerRole"] == "SLAVE" and options.values["brokerId"] == 1
    assert options.values["listenPort"] == 10911  # otherwise Java's defaults
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerId=2\nbrokerName=broker-b\nhaMasterAddress=10.0.0.1:10912\n")
    options = tap.Options()
    options.parseOptions(["-c", str(conf)])
    assert (options.values["brokerId"], options.values["brokerName"]) == (2, "broker-b")
    assert options.values["haMasterAddress"] == "10.0.0.1:10912"
    options = tap.Options()
    options.parseOptions(["--brokerId", "0"])
    with pytest.raises(SystemExit, match="Slave's brokerId must be > 0"):
        tap.makeService(options)


def test_twistd_lists_rmq_slave():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", "from twisted.scripts.twistd import run; run()",
                          "--help"], capture_output=True, text=True, timeout=120).stdout
    assert "rmq-slave" in out
