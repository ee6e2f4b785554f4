"""What one read event costs the reactor: Twisted's epoll reactor against
:class:`rmqproto.eventloop.LeanEPollReactor`, the one our services run on.

An echo server on each reactor in turn answers a client in another process that keeps one
100-byte message in flight over loopback (the shape of a lone send or a slave's ack). For
each reactor: the server's CPU a round trip (``getrusage``, user and kernel), and the
Python calls a round trip (``sys.setprofile``, in a separate run: profiling slows it).
With two CPUs or more the server is pinned to CPU 0 and the client to CPU 1.

    python benchmarks/eventloop.py [--round-trips 20000] [--repeat 3]
"""

import argparse
import collections
import os
import resource
import subprocess
import sys

from twisted.internet import epollreactor, protocol

from rmqproto.eventloop import LeanEPollReactor
from rmqproto.remoting.sendnow import send_now

REACTORS = {"epoll (Twisted)": epollreactor.EPollReactor, "lean epoll (rmqproto)": LeanEPollReactor}

#: The client: connects, then sends and waits for each echo in turn.
_CLIENT = """
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
message = b"x" * 100
for _ in range(int(sys.argv[2])):
    s.sendall(message)
    got = 0
    while got < len(message):
        got += len(s.recv(4096))
"""


class Echo(protocol.Protocol):
    def dataReceived(self, data):
        send_now(self.transport, data)  # as our protocols answer

    def connectionLost(self, reason):
        self.factory.reactor.stop()


def _pin(cpu):
    if len(os.sched_getaffinity(0)) > 1:
        os.sched_setaffinity(0, {cpu})


def serve(reactor_type, round_trips, calls=None):
    """Serve one client of ``round_trips``; the server's CPU seconds (user, kernel). With
    ``calls`` (a Counter), the Python calls made meanwhile are counted into it."""
    reactor = reactor_type()
    factory = protocol.Factory.forProtocol(Echo)
    factory.reactor = reactor
    port = reactor.listenTCP(0, factory, interface="127.0.0.1")
    client = subprocess.Popen([sys.executable, "-c", _CLIENT, str(port.getHost().port),
                               str(round_trips)], preexec_fn=lambda: _pin(1))
    before = resource.getrusage(resource.RUSAGE_SELF)
    if calls is not None:
        sys.setprofile(lambda frame, event, arg: calls.update((event,)) if event == "call"
                       else None)
    try:
        reactor.run(installSignalHandlers=False)
    finally:
        sys.setprofile(None)
        client.wait(timeout=60)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--round-trips", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    n = args.round_trips
    _pin(0)
    print("%-22s %14s %14s %14s" % ("reactor", "calls a trip", "user µs", "kernel µs"))
    for _ in range(args.repeat):
        for name, reactor_type in REACTORS.items():
            calls = collections.Counter()
            serve(reactor_type, n // 10, calls)
            user, kernel = serve(reactor_type, n)
            print("%-22s %14.1f %14.1f %14.1f" % (name, calls["call"] / (n // 10),
                                                 user / n * 1e6, kernel / n * 1e6))


if __name__ == "__main__":
    main()
