"""The event loop the services run on (``rmqproto.eventloop``): Twisted's epoll reactor
without the legacy logging context around each event."""

import os
import subprocess
import sys

from twisted.internet import protocol
from twisted.logger import capturedLogs

from rmqproto import eventloop
from support.daemons import start_nameserver

class Echo(protocol.Protocol):
    def dataReceived(self, data):
        self.transport.write(data)


class Collect(protocol.Protocol):
    def __init__(self, expected, reactor):
        self.expected, self.reactor, self.received = expected, reactor, b""

    def connectionMade(self):
        self.transport.write(self.expected)

    def dataReceived(self, data):
        self.received += data
        if len(self.received) >= len(self.expected):
            self.transport.loseConnection()
            self.reactor.stop()


def test_a_tcp_round_trip():
    reactor = eventloop.LeanEPollReactor()
    port = reactor.listenTCP(0, protocol.Factory.forProtocol(Echo), interface="127.0.0.1")
    client = Collect(b"ping" * 10_000, reactor)
    protocol.ClientCreator(reactor, lambda: client).connectTCP("127.0.0.1", port.getHost().port)
    reactor.callLater(10, reactor.stop)  # a failure must not hang the suite
    reactor.run(installSignalHandlers=False)
    assert client.received == b"ping" * 10_000


class Readable:
    """A reader on a pipe with a byte in it; ``fails``: its handling raises past the
    reactor's own checks (its connectionLost raises after its doRead failed)."""

    def __init__(self, fails, handled):
        self.read_fd, self.write_fd = os.pipe()
        os.write(self.write_fd, b"x")
        self.fails, self.handled = fails, handled

    def fileno(self):
        return self.read_fd

    def logPrefix(self):
        return "Readable"

    def doRead(self):
        self.handled.append(self)
        os.read(self.read_fd, 1)
        if self.fails:
            raise ValueError("doRead failed")

    def connectionLost(self, reason):
        if self.fails:
            raise RuntimeError("connectionLost failed")

    def close(self):
        os.close(self.read_fd)
        os.close(self.write_fd)


def test_an_event_whose_handling_raises_is_logged_and_the_polls_other_events_are_handled():
    reactor = eventloop.LeanEPollReactor()
    handled = []
    failing, fine = Readable(True, handled), Readable(False, handled)
    try:
        reactor.addReader(failing)
        reactor.addReader(fine)
        with capturedLogs() as events:
            reactor.doIteration(1)
        assert set(handled) == {failing, fine}
        failures = [e for e in events if "log_failure" in e]
        assert any(e["log_failure"].check(RuntimeError) for e in failures)
    finally:
        reactor.removeAll()
        failing.close()
        fine.close()


def _reactor_after(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60).stdout.split()


def test_install_default_installs_it_only_when_no_reactor_was_chosen():
    assert _reactor_after(
        "from rmqproto import eventloop; print(eventloop.install_default());"
        "from twisted.internet import reactor; print(type(reactor).__name__);"
        "print(eventloop.install_default())") == ["True", "LeanEPollReactor", "False"]
    assert _reactor_after(
        "from twisted.internet import reactor; from rmqproto import eventloop;"
        "print(eventloop.install_default()); print(type(reactor).__name__)"
    ) == ["False", "EPollReactor"]


def test_without_epoll_install_says_so_and_install_default_leaves_the_reactor():
    assert _reactor_after(
        "from rmqproto import eventloop; eventloop.LeanEPollReactor = None\n"
        "try:\n    eventloop.install()\nexcept ImportError as e:\n    print('epoll' in str(e))\n"
        "print(eventloop.install_default())\n"
        "import sys; print('twisted.internet.reactor' in sys.modules)"
    ) == ["True", "False", "False"]


def test_twistd_runs_the_services_on_it(tmp_path):
    daemon, _ = start_nameserver(tmp_path)
    daemon.stop()
    log = (tmp_path / "rmq-nameserver.log").read_text()
    assert "reactor class: rmqproto.eventloop.LeanEPollReactor" in log
