"""Our server and our client over real TCP on 127.0.0.1."""

import random
import socket
import struct

import pytest
from twisted.internet import task
from twisted.internet.defer import gatherResults, inlineCallbacks

from rmqproto.codec.frame import SERIALIZE_ROCKETMQ, RemotingCommand
from rmqproto.remoting import (
    RemotingClient, RemotingConnectionError, RemotingTimeoutError, RequestDispatcher)
from rmqproto.codec.codes import ResponseCode as R

from conftest import peer_dispatcher, serve
from support.realreactor import run_reactor


def server_dispatcher(reactor):
    dispatcher = peer_dispatcher()

    def later(req, ctx):  # answers out of order, like long polling
        return task.deferLater(reactor, random.random() / 100,
                               lambda: req.response(R.SUCCESS, body=req.body[::-1]))

    dispatcher.register(11, later)
    dispatcher.register(31, lambda req, ctx: ctx.connection.close())
    return dispatcher


def test_thousand_concurrent_requests_and_callbacks():
    @inlineCallbacks
    def scenario(reactor):
        factory, port, address = serve(reactor, server_dispatcher(reactor))
        client_dispatcher = RequestDispatcher()
        client_dispatcher.register(40, lambda req, ctx: req.response(R.SUCCESS, body=req.body.upper()))
        client = RemotingClient(reactor, client_dispatcher)
        try:
            calls = []
            for n in range(1000):
                body = b"m%d" % n
                code = 7 if n % 2 else 11
                serialize_type = SERIALIZE_ROCKETMQ if n % 3 == 0 else 0
                expected = body if code == 7 else body[::-1]
                calls.append(client.invoke(
                    address, RemotingCommand(code, body=body, serialize_type=serialize_type),
                    timeout=5).addCallback(lambda resp, e=expected: resp.body == e))
            assert all((yield gatherResults(calls)))
            answer = yield client.invoke(address, RemotingCommand(30, body=b"hi"))
            assert answer.body == b"HI"
            assert len(factory.connections) == 1  # every call shared one connection
        finally:
            yield client.close()
            yield port.stopListening()

    run_reactor(scenario)


def test_connection_loss_timeout_and_reconnect():
    @inlineCallbacks
    def scenario(reactor):
        dispatcher = server_dispatcher(reactor)
        dispatcher.register(12, lambda req, ctx: None)  # never answers
        factory, port, address = serve(reactor, dispatcher)
        client = RemotingClient(reactor)
        try:
            with pytest.raises(RemotingTimeoutError):
                yield client.invoke(address, RemotingCommand(12), timeout=0.05)
            waiting = client.invoke(address, RemotingCommand(12), timeout=5)
            with pytest.raises(RemotingConnectionError):
                yield client.invoke(address, RemotingCommand(31))
            with pytest.raises(RemotingConnectionError):
                yield waiting
            answer = yield client.invoke(address, RemotingCommand(7, body=b"again"))
            assert answer.body == b"again"
        finally:
            yield client.close()
            yield port.stopListening()
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))
        free = closed.getsockname()[1]
        closed.close()
        with pytest.raises(RemotingConnectionError):
            yield RemotingClient(reactor).invoke("127.0.0.1:%d" % free, RemotingCommand(7))

    run_reactor(scenario)


def test_garbage_closes_only_the_sender():
    @inlineCallbacks
    def scenario(reactor):
        factory, port, address = serve(reactor, server_dispatcher(reactor))
        client = RemotingClient(reactor)
        raw = socket.create_connection(("127.0.0.1", port.getHost().port), timeout=5)
        try:
            yield client.invoke(address, RemotingCommand(7))
            raw.sendall(struct.pack(">iI", 9, 5) + b"{nope")
            raw.setblocking(False)
            for _ in range(200):
                yield task.deferLater(reactor, 0.01, lambda: None)
                try:
                    if raw.recv(1) == b"":
                        break
                except BlockingIOError:
                    continue
            else:
                raise AssertionError("the server kept the garbage connection open")
            answer = yield client.invoke(address, RemotingCommand(7, body=b"still here"))
            assert answer.body == b"still here" and len(factory.connections) == 1
        finally:
            raw.close()
            yield client.close()
            yield port.stopListening()

    run_reactor(scenario)
