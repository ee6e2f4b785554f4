"""``send_now``: bytes reach the socket at once when nothing is queued, else keep their order."""

import socket

from twisted.internet import tcp
from twisted.internet.protocol import Protocol

from rmqproto.remoting.sendnow import send_now

from conftest import RecordingTransport


class WriterRecorder:
    """Just enough reactor for a ``tcp.Connection``: which descriptors want writing."""

    def __init__(self):
        self.writers = set()

    def addWriter(self, selectable):
        self.writers.add(selectable)

    def removeWriter(self, selectable):
        self.writers.discard(selectable)


def connection_pair():
    ours, peer = socket.socketpair()
    ours.setblocking(False)
    reactor = WriterRecorder()
    connection = tcp.Connection(ours, Protocol(), reactor)
    connection.connected = 1
    return connection, peer, reactor


def read_all(peer, size):
    data = b""
    while len(data) < size:
        data += peer.recv(size - len(data))
    return data


def test_sends_at_once_when_nothing_is_queued():
    connection, peer, reactor = connection_pair()
    send_now(connection, b"answer-1")
    send_now(connection, b"answer-2")
    assert reactor.writers == set()  # never waited for the reactor
    assert read_all(peer, 16) == b"answer-1answer-2"


def test_what_the_socket_does_not_take_is_queued_and_later_bytes_stay_behind_it():
    connection, peer, reactor = connection_pair()
    big = bytes(range(256)) * 40_000  # more than a socket pair's buffers hold
    send_now(connection, big)
    assert reactor.writers == {connection}
    queued = len(connection.dataBuffer) + connection._tempDataLen
    assert 0 < queued < len(big)
    send_now(connection, b"tail")  # must not overtake the queued rest
    assert connection._tempDataLen == queued + 4
    peer.setblocking(False)
    received = b""
    while connection in reactor.writers or len(received) < len(big) + 4:
        try:
            received += peer.recv(1 << 20)
        except BlockingIOError:
            connection.doWrite()
    assert received == big + b"tail"


def test_closed_peer_leaves_the_error_to_the_reactor_write():
    connection, peer, reactor = connection_pair()
    peer.close()
    send_now(connection, b"x" * 100)
    send_now(connection, b"y")
    assert reactor.writers == {connection}  # doWrite will see the loss and close


def test_other_transports_get_a_plain_write():
    transport = RecordingTransport()
    send_now(transport, b"abc")
    assert transport.writes == [b"abc"]
