"""Helpers for the remoting tests: a protocol on an in-memory transport and a fake clock."""

import pytest
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from rmqproto.codec.frame import FrameDecoder, RemotingCommand, decode_frame, encode_frame
from rmqproto.remoting import RemotingFactory, RequestDispatcher
from rmqproto.codec.codes import ResponseCode as R


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


def peer_dispatcher():
    """Processors mirroring the Java ``RemotingPeer server`` (codes 7, 8, 9, 10, 30).

    7 echoes ext fields and body, 8 records oneway requests in ``dispatcher.sunk``,
    9 answers how many arrived, 10 raises, 30 calls the caller back with code 40 on
    the same connection and answers with the callback's body.
    """
    dispatcher = RequestDispatcher()
    dispatcher.sunk = []

    def sink(req, ctx):
        dispatcher.sunk.append(req)

    def fail(req, ctx):
        raise RuntimeError("boom")

    def call_back(req, ctx):
        return ctx.connection.send_request(RemotingCommand(40, body=req.body)).addCallback(
            lambda answer: req.response(answer.code, remark=answer.remark, body=answer.body))

    dispatcher.register(7, lambda req, ctx: req.response(
        R.SUCCESS, ext_fields=req.ext_fields, body=req.body))
    dispatcher.register(8, sink)
    dispatcher.register(9, lambda req, ctx: req.response(R.SUCCESS, body=b"%d" % len(dispatcher.sunk)))
    dispatcher.register(10, fail)
    dispatcher.register(30, call_back)
    return dispatcher


def serve(reactor, dispatcher):
    """Listen on a free port of 127.0.0.1; (factory, listening port, "host:port")."""
    factory = RemotingFactory(dispatcher, reactor)
    port = reactor.listenTCP(0, factory, interface="127.0.0.1")
    return factory, port, "127.0.0.1:%d" % port.getHost().port
