"""The slave's HA connection on a real reactor and real TCP, with and without the receive
thread (``rmqproto/ha/receiver.py``): a scripted master on the same reactor sends
transfers split anywhere across segments; the slave's log, its reports, the hand-back to
the Python client at segment starts and mismatches, reconnection, heartbeats and shutdown
are the same either way."""

import random
import threading

import pytest
from twisted.internet import defer, protocol, task

from rmqproto.broker.config import SETTINGS, apply_startup_rules
from rmqproto.codec.ha import SlaveReportReader, encode_transfer
from rmqproto.ha import receiver
from rmqproto.ha.client import HAClient
from rmqproto.ha.slave import HAClientConnector
from rmqproto.store.defaultstore import DefaultMessageStore

from support.realreactor import run_reactor

SEGMENT = 64 * 1024
MODES = [pytest.param(True, id="thread"), pytest.param(False, id="python")]


class Master(protocol.Protocol):
    """The scripted master's side of one connection: keeps the reports it reads."""

    def connectionMade(self):
        self.reports = []
        self.reader = SlaveReportReader()
        self.closed = False
        self.factory.connections.append(self)

    def dataReceived(self, data):
        offset = self.reader.feed(data)
        if offset is not None:
            self.reports.append(offset)

    def connectionLost(self, reason):
        self.closed = True


class Slave:
    """A slave store with an HA client on ``reactor``, connected to a scripted master."""

    def __init__(self, reactor, tmp_path, receive_thread, heartbeat_ms=5000):
        self.reactor = reactor
        values, unknown = SETTINGS.resolve(dict(
            brokerRole="SLAVE", brokerId=1, storePathRootDir=str(tmp_path),
            mappedFileSizeCommitLog=SEGMENT, haSendHeartbeatInterval=heartbeat_ms))
        assert not unknown
        self.store = DefaultMessageStore(apply_startup_rules(values), reactor)
        self.store.load()
        self.store.start()
        self.client = HAClient(self.store, values, check_records=False)  # arbitrary bytes
        self.connector = HAClientConnector(self.client, reactor, receive_thread)
        self.factory = protocol.Factory.forProtocol(Master)
        self.factory.connections = []
        self.port = reactor.listenTCP(0, self.factory, interface="127.0.0.1")
        self.threads = 0
        if receive_thread:
            started = receiver.ReceiveThread.start

            def counted(thread):
                self.threads += 1
                started(thread)

            self._patch = (receiver.ReceiveThread, "start", started)
            receiver.ReceiveThread.start = counted

    @defer.inlineCallbacks
    def connect(self):
        self.connector.start()
        self.connector.update_master_address("127.0.0.1:%d" % self.port.getHost().port)
        yield until(self.reactor, lambda: self.factory.connections
                    and self.factory.connections[-1].reports)
        return self.factory.connections[-1]

    @defer.inlineCallbacks
    def replicating(self, size):
        """Connected, with a first transfer of ``size`` zeros at 0 reported: the master."""
        master = yield self.connect()
        master.transport.write(encode_transfer(0, b"\0" * size))
        yield until(self.reactor, lambda: master.reports[-1] == size)
        return master

    @defer.inlineCallbacks
    def stop(self):
        self.connector.shutdown()
        assert not any(t.name == "HAReceive" for t in threading.enumerate())
        self.store.shutdown()  # the mapping is no longer held: it closes
        if getattr(self, "_patch", None):
            setattr(*self._patch)
        yield self.port.stopListening()


def with_slave(tmp_path, receive_thread, steps, **options):
    """Run ``steps(reactor, slave)`` (a generator of Deferreds) against a fresh
    :class:`Slave` on a real reactor, and stop the slave after it, also on failure."""

    @defer.inlineCallbacks
    def scenario(reactor):
        slave = Slave(reactor, tmp_path, receive_thread, **options)
        try:
            yield defer.inlineCallbacks(steps)(reactor, slave)
        finally:
            yield slave.stop()

    run_reactor(scenario, timeout=30)


@defer.inlineCallbacks
def until(reactor, condition, timeout=10.0):
    waited = 0.0
    while not condition():
        assert waited < timeout, "timed out"
        yield task.deferLater(reactor, 0.005, lambda: None)
        waited += 0.005


@defer.inlineCallbacks
def send_split(reactor, master, stream, rng):
    """Write ``stream`` in random pieces, a reactor turn or a millisecond apart."""
    at = 0
    while at < len(stream):
        size = rng.choice([1, 7, 12, 13, 500, 4000, 40_000])
        master.transport.write(stream[at:at + size])
        at += size
        yield task.deferLater(reactor, rng.choice([0, 0.001]), lambda: None)


def transfers(start, end, rng):
    """Transfers of zeros from ``start`` to ``end`` of random sizes, none across a segment
    end (as a master's never are)."""
    out, offset = [], start
    while offset < end:
        size = min(rng.randint(0, 6000), end - offset, SEGMENT - offset % SEGMENT)
        out.append(encode_transfer(offset, b"\0" * size))
        offset += size
    return b"".join(out)


@pytest.mark.parametrize("receive_thread", MODES)
def test_any_split_across_segments_gives_the_same_log_and_reports(tmp_path, receive_thread):
    rng = random.Random(7)
    end = 2 * SEGMENT + 12_345

    def steps(reactor, slave):
        master = yield slave.connect()
        assert master.reports == [0]
        yield send_split(reactor, master, transfers(0, end, rng), rng)
        yield until(reactor, lambda: master.reports[-1] == end)
        assert slave.store.get_max_phy_offset() == end
        assert master.reports == sorted(master.reports)
        assert [m.file_from_offset for m in slave.store.commit_log.queue.files] == [
            0, SEGMENT, 2 * SEGMENT]
        if receive_thread:  # one after the first append, one a segment start at least
            assert slave.threads >= 3
        info = slave.client.runtime_info()
        assert info["haClientMaxOffset"] == info["haClientReportedOffset"] == str(end)
        assert int(info["haClientTransferredBytes"]) > end

    with_slave(tmp_path, receive_thread, steps)


@pytest.mark.parametrize("receive_thread", MODES)
def test_a_mismatch_closes_and_the_slave_comes_back_at_its_end(tmp_path, receive_thread):
    def steps(reactor, slave):
        master = yield slave.replicating(1000)
        master.transport.write(encode_transfer(1000, b"\0" * 10)
                               + encode_transfer(999, b"\0" * 10))
        yield until(reactor, lambda: master.closed)
        assert slave.store.get_max_phy_offset() == 1010
        yield until(reactor, lambda: len(slave.factory.connections) == 2
                    and slave.factory.connections[1].reports)
        assert slave.factory.connections[1].reports == [1010]

    with_slave(tmp_path, receive_thread, steps)


@pytest.mark.parametrize("receive_thread", MODES)
def test_heartbeats_while_the_master_sends_nothing(tmp_path, receive_thread):
    def steps(reactor, slave):
        master = yield slave.replicating(100)
        yield until(reactor, lambda: len(master.reports) >= 5)
        assert set(master.reports[1:]) == {100}
        assert not master.closed

    with_slave(tmp_path, receive_thread, steps, heartbeat_ms=50)


def test_the_master_closing_is_seen_and_retried(tmp_path):
    def steps(reactor, slave):
        master = yield slave.replicating(100)
        master.transport.loseConnection()
        yield until(reactor, lambda: len(slave.factory.connections) == 2
                    and slave.factory.connections[1].reports)
        assert slave.factory.connections[1].reports == [100]
        assert slave.threads == 2

    with_slave(tmp_path, True, steps)
