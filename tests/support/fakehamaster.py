"""Fakes for the HA master's adapter tests: a store over a bytes log cut into small
segments, the service on ``MemoryReactorClock`` and one slave's connection on
``StringTransport`` (used by tests/ha and the hostile-peer suite, tests/hostile)."""

from types import SimpleNamespace

from twisted.internet.address import IPv4Address
from twisted.internet.testing import MemoryReactorClock, StringTransport

from rmqproto.codec.ha import TransferReader, encode_slave_report
from rmqproto.ha.master import HAMasterService
from rmqproto.store.config import STORE_SETTINGS

__all__ = ["FILE", "BATCH", "FakeHAStore", "make_service", "Slave", "data", "results"]

FILE = 1000  # bytes per commit-log segment
BATCH = 64


class FakeHAStore:
    """The store hooks the HA master uses, over a bytes log cut into ``file_size``-byte
    segments."""

    def __init__(self, reactor, file_size=FILE):
        self.reactor = reactor
        self.file_size = file_size
        self.log = bytearray()
        self.min_offset = 0
        self.replica_waiter = None
        self.runtime_info_providers = []
        self.append_listeners = []
        self.reads = 0
        self._turn_end = None

    def append(self, data):
        """Append ``data``; the listeners hear of the turn's appends at its end, once."""
        self.log += data
        if self._turn_end is None:
            self._turn_end = self.reactor.callLater(0, self._appended)
        return len(self.log)

    def _appended(self):
        self._turn_end = None
        for listener in self.append_listeners:
            listener()

    def get_max_phy_offset(self):
        return len(self.log)

    def get_min_phy_offset(self):
        return self.min_offset if self.log else -1

    def get_commit_log_data(self, offset, max_size):
        self.reads += 1
        if offset < self.min_offset or offset >= len(self.log):
            return b""
        size = self.file_size
        end = min(len(self.log), offset - offset % size + size, offset + max_size)
        return bytes(self.log[offset:end])


def make_service(**overrides):
    values, _ = STORE_SETTINGS.resolve()
    values.update(mappedFileSizeCommitLog=FILE, haTransferBatchSize=BATCH, haListenPort=10912,
                  bindAddress="127.0.0.1", brokerRole="SYNC_MASTER")
    values.update(overrides)
    reactor = MemoryReactorClock()
    reactor.advance(1000)
    store = FakeHAStore(reactor)
    ha = HAMasterService(SimpleNamespace(config=values, reactor=reactor, store=store))
    ha.startService()
    return ha, reactor, store


class Slave:
    """One connection of the service, seen from the slave's side."""

    def __init__(self, ha, host="10.0.0.5", port=40000):
        self.transport = StringTransport(peerAddress=IPv4Address("TCP", host, port))
        self.conn = ha.factory.buildProtocol(self.transport.getPeer())
        if self.conn is None:  # refused: Twisted would close the connection
            self.transport.loseConnection()
            return
        self.conn.makeConnection(self.transport)
        self.reader = TransferReader()

    def report(self, offset):
        self.conn.dataReceived(encode_slave_report(offset))

    def received(self):
        """The transfers received since the last call: ``[(offset, body), ...]``
        (a heartbeat is ``(offset, b"")``)."""
        data = self.transport.value()
        self.transport.clear()
        out = []
        for piece in self.reader.feed(data):
            if out and piece.data and out[-1][0] + len(out[-1][1]) == piece.offset \
                    and not out[-1][2]:
                out[-1] = (out[-1][0], out[-1][1] + piece.data, piece.complete)
            else:
                out.append((piece.offset, piece.data, piece.complete))
        return [(offset, body) for offset, body, _ in out]

    @property
    def closed(self):
        return self.conn.closed


def data(n, start=0):
    return bytes((start + i) % 251 for i in range(n))


def results(ha, next_offset):
    """The statuses ``ha.wait_for_replica(next_offset, …)`` gives: at once, or later."""
    out = []
    status = ha.wait_for_replica(next_offset, lambda later, token: token.append(later), out)
    if status is not None:
        out.append(status)
    return out
