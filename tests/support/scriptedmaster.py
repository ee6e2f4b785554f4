"""A scripted HA master on a real reactor and a slave (a real store, the HA client and its
connector, with or without the receive thread) connected to it; for tests/ha and the
hostile-peer suite (tests/hostile)."""

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

__all__ = ["SEGMENT", "MODES", "Master", "Slave", "with_slave", "until"]

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
    """A slave store with an HA client on ``reactor``, connected to a scripted master;
    ``check_records`` as the HA client takes it (on, as in production; off when the
    bytes are arbitrary)."""

    def __init__(self, reactor, tmp_path, receive_thread, heartbeat_ms=5000, check_records=True):
        self.reactor = reactor
        values, unknown = SETTINGS.resolve(dict(
            brokerRole="SLAVE", brokerId=1, storePathRootDir=str(tmp_path),
            mappedFileSizeCommitLog=SEGMENT, haSendHeartbeatInterval=heartbeat_ms))
        assert not unknown
        self.store = DefaultMessageStore(apply_startup_rules(values), reactor)
        self.store.load()
        self.store.start()
        self.client = HAClient(self.store, values, check_records)
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
