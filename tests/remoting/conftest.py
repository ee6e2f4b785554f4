"""Helpers for the remoting tests: a protocol on an in-memory transport and a fake clock."""

import pytest
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from rmqproto.codec.frame import FrameDecoder, RemotingCommand, decode_frame, encode_frame
from rmqproto.remoting import RemotingFactory, RequestDispatcher


class RecordingTransport(StringTransport):
    """A StringTransport that also remembers each ``write`` call separately."""

    def __init__(self):
        super().__init__()
        self.writes = []

    def write(self, data):
        self.writes.append(bytes(data))
        super().write(data)


class Wire:
    """One connection of a :class:`RemotingFactory` on a fake transport and clock."""

    def __init__(self, dispatcher=None, **factory_args):
        self.clock = Clock()
        self.dispatcher = dispatcher or RequestDispatcher()
        self.factory = RemotingFactory(self.dispatcher, self.clock, **factory_args)
        self.transport = RecordingTransport()
        self.protocol = self.factory.buildProtocol(None)
        self.protocol.makeConnection(self.transport)
        self._decoder = FrameDecoder()

    def receive(self, *commands):
        """Deliver ``commands`` to the protocol in one chunk."""
        self.protocol.dataReceived(b"".join(encode_frame(c) for c in commands))

    def sent(self):
        """The commands written since the last call."""
        data = self.transport.value()
        self.transport.clear()
        return [decode_frame(f) for f in self._decoder.feed(data)]


def request(code, opaque=0, **kwargs):
    return RemotingCommand(code, opaque=opaque, **kwargs)


@pytest.fixture
def wire():
    return Wire()


def run_reactor(scenario, timeout=10.0):
    """Run ``scenario(reactor)`` (may return a Deferred) on a fresh real reactor.

    Each call gets its own reactor, so tests stay independent; a scenario still
    running after ``timeout`` seconds fails the test instead of hanging it.
    """
    from twisted.internet.defer import maybeDeferred
    from twisted.internet.epollreactor import EPollReactor
    from twisted.python.failure import Failure

    reactor = EPollReactor()
    outcome = []

    def start():
        done = maybeDeferred(scenario, reactor)
        done.addBoth(outcome.append)
        done.addBoth(lambda _: reactor.stop())

    reactor.callWhenRunning(start)
    watchdog = reactor.callLater(timeout, reactor.stop)
    reactor.run(installSignalHandlers=False)
    if watchdog.active():
        watchdog.cancel()
    if not outcome:
        raise AssertionError("scenario did not finish within %s s" % timeout)
    if isinstance(outcome[0], Failure):
        outcome[0].raiseException()
    return outcome[0]
