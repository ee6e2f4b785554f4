"""Interop with the real Java remoting stack (rocketmq-remoting 4.9.8, ``RemotingPeer.java``).

The Java ``NettyRemotingClient`` calls our server (sync, async, oneway, both serialize
types, unknown codes, failing processors, 1,000 concurrent requests, a callback from
our server to the Java client), and our client calls a Java ``NettyRemotingServer``
(the same, plus Java calling our client back). Everything runs on 127.0.0.1 with
free ports and bounded waits.
"""

import json
import os
import select
import subprocess
import time

import pytest
from twisted.internet import task
from twisted.internet.defer import gatherResults, inlineCallbacks
from twisted.internet.threads import deferToThreadPool

from rmqproto.codec.frame import FLAG_ONEWAY, FLAG_RESPONSE, SERIALIZE_JSON, SERIALIZE_ROCKETMQ, RemotingCommand
from rmqproto.remoting import RemotingClient, RequestDispatcher
from rmqproto.codec.codes import ResponseCode as R
from support.interop import JAVA_FLAGS

from conftest import peer_dispatcher, serve
from support.realreactor import run_reactor

pytestmark = pytest.mark.java

SERIALIZE_NAMES = {SERIALIZE_JSON: "JSON", SERIALIZE_ROCKETMQ: "ROCKETMQ"}


class JavaPeer:
    """A ``RemotingPeer`` JVM driven by JSON lines, every read bounded by ``timeout``."""

    def __init__(self, classpath, mode, log_path, timeout=30.0):
        self.timeout = timeout
        self._log = open(log_path, "wb")
        self.process = subprocess.Popen(
            ["java", *JAVA_FLAGS, "-Drocketmq.remoting.version=409", "-cp", classpath,
             "rmqproto.interop.RemotingPeer", mode],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log)
        self._buffer = b""

    def read(self):
        deadline = time.monotonic() + self.timeout
        fd = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError("the Java peer did not answer within %s s" % self.timeout)
            chunk = os.read(fd, 65536)
            if not chunk:
                raise EOFError("the Java peer exited; see %s" % self._log.name)
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def ask(self, **command):
        self.process.stdin.write(json.dumps(command).encode() + b"\n")
        self.process.stdin.flush()
        return self.read()

    def close(self):
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()


@pytest.fixture(scope="module")
def java_client(java_interop, tmp_path_factory):
    peer = JavaPeer(java_interop.classpath, "client",
                    tmp_path_factory.mktemp("java") / "client.log")
    yield peer
    peer.close()


@pytest.fixture(scope="module")
def java_server(java_interop, tmp_path_factory):
    peer = JavaPeer(java_interop.classpath, "server",
                    tmp_path_factory.mktemp("java") / "server.log")
    peer.port = peer.read()["port"]
    yield peer
    peer.close()


@inlineCallbacks
def eventually(reactor, condition, timeout=5.0):
    """Wait until ``condition()`` holds, polling the reactor; fail after ``timeout`` s."""
    deadline = reactor.seconds() + timeout
    while not condition():
        assert reactor.seconds() < deadline, "condition not met within %s s" % timeout
        yield task.deferLater(reactor, 0.02, lambda: None)


def test_java_client_calls_our_server(java_client):
    @inlineCallbacks
    def scenario(reactor):
        dispatcher = peer_dispatcher()
        seen = []
        dispatcher.register(7, lambda req, ctx: seen.append(req) or req.response(
            R.SUCCESS, ext_fields=req.ext_fields, body=req.body))
        factory, port, address = serve(reactor, dispatcher)

        def ask(**command):
            return deferToThreadPool(reactor, reactor.getThreadPool(), java_client.ask,
                                     addr=address, timeout=5000, **command)

        try:
            for name in ("JSON", "ROCKETMQ"):
                for op in ("sync", "async"):
                    answer = yield ask(op=op, code=7, serialize=name,
                                       ext={"topic": "T", "queueId": "3"}, body="00ff")
                    assert answer["code"] == R.SUCCESS, answer
                    assert answer["opaque"] == answer["requestOpaque"] == seen[-1].opaque
                    assert (answer["flag"], answer["version"], answer["language"],
                            answer["serialize"]) == (FLAG_RESPONSE, 409, "JAVA", name)
                    assert (answer["ext"], answer["body"]) == ({"topic": "T", "queueId": "3"}, "00ff")
                    request = seen[-1]
                    assert (request.language, request.version, request.flag,
                            SERIALIZE_NAMES[request.serialize_type]) == ("JAVA", 409, 0, name)

                answer = yield ask(op="sync", code=4242, serialize=name)
                assert (answer["code"], answer["remark"]) == (
                    R.REQUEST_CODE_NOT_SUPPORTED, " request type 4242 not supported")
                answer = yield ask(op="sync", code=10, serialize=name)
                assert answer["code"] == R.SYSTEM_ERROR
                assert answer["remark"].startswith("RuntimeError: boom, fail(")

                answer = yield ask(op="oneway", code=8, serialize=name, body="01")
                yield eventually(reactor, lambda: len(dispatcher.sunk) == (2 if name == "ROCKETMQ" else 1))
                assert dispatcher.sunk[-1].flag == FLAG_ONEWAY
                assert dispatcher.sunk[-1].opaque == answer["requestOpaque"]

            answer = yield ask(op="sync", code=30, body=b"hello".hex())
            assert (answer["code"], bytes.fromhex(answer["body"])) == (R.SUCCESS, b"java:hello")

            answer = yield ask(op="many", code=7, count=1000)
            assert answer == {"ok": 1000, "failed": 0}
            assert len(factory.connections) == 1
        finally:
            yield port.stopListening()
            for connection in list(factory.connections):
                connection.close()

    run_reactor(scenario, timeout=60)


def test_our_client_calls_java_server(java_server):
    @inlineCallbacks
    def scenario(reactor):
        dispatcher = RequestDispatcher()
        dispatcher.register(40, lambda req, ctx: req.response(R.SUCCESS, body=b"py:" + req.body))
        client = RemotingClient(reactor, dispatcher)
        address = "127.0.0.1:%d" % java_server.port
        try:
            for serialize_type in (SERIALIZE_JSON, SERIALIZE_ROCKETMQ):
                request = RemotingCommand(7, ext_fields={"topic": "T"}, body=b"\x00\xff",
                                          serialize_type=serialize_type)
                answer = yield client.invoke(address, request)
                assert json.loads(answer.remark) == {
                    "opaque": request.opaque, "flag": 0, "version": 409, "language": "JAVA",
                    "serialize": SERIALIZE_NAMES[serialize_type]}
                assert (answer.code, answer.opaque, answer.flag, answer.serialize_type,
                        answer.language, answer.version) == (
                    R.SUCCESS, request.opaque, FLAG_RESPONSE, serialize_type, "JAVA", 409)
                assert (answer.ext_fields, answer.body) == ({"topic": "T"}, b"\x00\xff")

                answer = yield client.invoke(address, RemotingCommand(4242, serialize_type=serialize_type))
                assert (answer.code, answer.remark) == (
                    R.REQUEST_CODE_NOT_SUPPORTED, " request type 4242 not supported")
                answer = yield client.invoke(address, RemotingCommand(10, serialize_type=serialize_type))
                assert answer.code == R.SYSTEM_ERROR
                assert answer.remark.startswith("java.lang.IllegalStateException: boom, ")

            before = int((yield client.invoke(address, RemotingCommand(9))).body)
            for _ in range(3):
                yield client.invoke_oneway(address, RemotingCommand(8))
            counts = []

            def sunk_three():
                return counts and counts[-1] == before + 3

            while not sunk_three():
                answer = yield client.invoke(address, RemotingCommand(9))
                counts.append(int(answer.body))
                assert len(counts) < 100, counts

            answer = yield client.invoke(address, RemotingCommand(30, body=b"hi"))
            assert (answer.code, answer.body) == (R.SUCCESS, b"py:hi")

            answers = yield gatherResults([
                client.invoke(address, RemotingCommand(7, body=b"%d" % n, serialize_type=n % 2))
                for n in range(500)])
            assert [a.body for a in answers] == [b"%d" % n for n in range(500)]
        finally:
            yield client.close()

    run_reactor(scenario, timeout=60)
