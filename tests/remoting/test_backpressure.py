"""Flow control: a connection whose answers are not taken stops being read (issue 43, item 8).

In memory: the transport's pause and resume are called by hand, as Twisted's would. Against
a real broker: a client that never reads cannot grow the broker, and others are served.
"""

import socket
import struct
import time

from twisted.internet import defer

from rmqproto.codec import headers as h
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.frame import RemotingCommand, encode_frame
from rmqproto.remoting import RemotingFactory, RequestDispatcher, connect
from rmqproto.remoting import protocol as protocol_module
from rmqproto.remoting.backpressure import WriteBudget
from rmqproto.remoting.factory import write_budget

from support.daemons import start_nameserver
from support.realreactor import poll_until, run_reactor
from support.syncclient import SyncClient, call
from broker.brokerkit import start_broker
from conftest import Wire, request


def echo(req, context):
    return req.response(R.SUCCESS, body=req.body)


def test_a_paused_connection_holds_the_rest_of_its_read_and_handles_it_on_resume():
    wire = Wire()
    handled = []

    def pausing(req, context):
        handled.append(req.opaque)
        if req.opaque == 2:
            wire.protocol.pauseProducing()  # as the transport does once too much is unsent
        return req.response(R.SUCCESS)

    wire.dispatcher.register(7, pausing)
    wire.receive(*(request(7, opaque=n) for n in range(6)))
    assert handled == [0, 1, 2] and wire.transport.producerState == "paused"
    assert [a.opaque for a in wire.sent()] == [0, 1, 2]
    wire.receive(request(7, opaque=6))  # what the transport had read before pausing
    assert handled == [0, 1, 2]
    wire.protocol.resumeProducing()
    assert handled == list(range(7)) and wire.transport.producerState == "producing"
    assert [a.opaque for a in wire.sent()] == [3, 4, 5, 6]


def test_a_bad_frame_held_back_still_closes_the_connection_after_the_answers():
    wire = Wire()
    wire.dispatcher.register(7, echo)
    wire.protocol.pauseProducing()
    wire.receive(request(7, opaque=1))
    wire.protocol.dataReceived(b"\x7f\xff\xff\xff")  # a length no frame may have
    wire.receive(request(7, opaque=2))  # after the bad frame: never handled
    assert not wire.transport.disconnecting and wire.sent() == []
    wire.protocol.resumeProducing()
    assert [a.opaque for a in wire.sent()] == [1] and wire.transport.disconnecting


def test_a_read_sends_its_gathered_answers_once_they_pass_the_write_limit():
    wire = Wire(budget=WriteBudget(1000, 10**9))
    assert wire.transport.bufferSize == 1000
    wire.dispatcher.register(7, echo)
    wire.receive(*(request(7, opaque=n, body=b"x" * 300) for n in range(10)))
    # the first answer at once, then a send each time the gathered ones pass 1000 bytes
    assert len(wire.transport.writes) == 4
    assert [a.opaque for a in wire.sent()] == list(range(10))


def test_closing_unregisters_the_producer_so_that_the_transport_can_close():
    wire = Wire()
    wire.protocol.close()
    assert wire.transport.producer is None and wire.transport.disconnecting


def test_a_paused_connection_is_closed_at_once_as_its_peer_does_not_read():
    wire = Wire()
    wire.protocol.pauseProducing()
    wire.protocol.close()  # the idle reaper, after serverChannelMaxIdleTimeSeconds
    assert wire.transport.disconnected
    wire.protocol.resumeProducing()  # a late call does nothing
    assert wire.transport.producerState == "paused"


def test_the_budget_sums_stopped_connections_and_is_over_past_its_total():
    budget = WriteBudget(100, 1000)
    budget.charge(600)
    assert not budget.over
    budget.charge(600)
    assert budget.over  # 1200 > 1000
    budget.release(600)
    assert budget.over  # 600 > 500: until half of it
    budget.release(600)
    assert not budget.over and budget.charged == 0


def test_while_the_budget_is_over_anything_unsent_pauses_the_connection(monkeypatch):
    budget = WriteBudget(100, 10)
    wire = Wire(budget=budget)
    wire.dispatcher.register(7, echo)
    # a StringTransport queues every write: say that one byte waits, as a TCP transport would
    monkeypatch.setattr(protocol_module, "unsent_bytes", lambda transport: 1)
    wire.receive(request(7, opaque=1))
    assert wire.transport.producerState == "producing"
    budget.charge(50)  # other connections, stopped
    wire.receive(request(7, opaque=2), request(7, opaque=3))
    assert wire.transport.producerState == "paused" and wire.transport.producerPaused
    wire.transport.producerPaused = False  # as the transport does once all is sent
    wire.protocol.resumeProducing()
    assert [a.opaque for a in wire.sent()] == [1, 2, 3]


def test_the_budget_takes_netty_s_default_for_0():
    assert write_budget({}).high_water_mark == 64 * 1024
    assert write_budget({"writeBufferHighWaterMark": 5000}).high_water_mark == 5000


# ---------------------------------------------------------------- a real broker


BODY = 4_000_000  # under maxMessageSize (4 MiB) with its properties


def _rss(pid):
    with open("/proc/%d/status" % pid) as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS for %d" % pid)


def _send_big_message(address):
    header = h.SendMessageRequestHeader(
        producer_group="PG", topic="BigTopic", default_topic="TBW102", default_topic_queue_nums=4,
        queue_id=0, sys_flag=0, born_timestamp=int(time.time() * 1000), flag=0,
        properties="", reconsume_times=0, unit_mode=False)
    answer = call(address, RC.SEND_MESSAGE, header.to_ext_fields(), b"b" * BODY)
    assert answer.code == R.SUCCESS, answer
    return int(answer.ext_fields["queueOffset"])


def _read_answers(sock, count):
    """Read ``count`` frames off ``sock``; their sizes."""
    sizes = []
    sock.settimeout(30)
    pending = b""
    while len(sizes) < count:
        while len(pending) < 4:
            pending += sock.recv(4 - len(pending))
        length = struct.unpack(">i", pending[:4])[0]
        left = length - (len(pending) - 4)
        pending = b""
        while left > 0:
            chunk = sock.recv(min(left, 1 << 20))
            assert chunk, "the broker closed the connection"
            left -= len(chunk)
        sizes.append(length)
    return sizes


def test_a_client_that_does_not_read_cannot_grow_the_broker(tmp_path):
    nameserver, namesrv_addr = start_nameserver(tmp_path)
    broker, address = start_broker(tmp_path, namesrv_addr)
    host, port = address.rsplit(":", 1)
    try:
        _send_big_message(address)
        view = {"offset": "0"}
        assert len(call(address, RC.VIEW_MESSAGE_BY_ID, view).body) > BODY  # pages mapped in
        before = _rss(broker.popen.pid)
        lazy = socket.socket()
        lazy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        lazy.connect((host, int(port)))
        requests = 100
        lazy.sendall(b"".join(encode_frame(RemotingCommand(
            int(RC.VIEW_MESSAGE_BY_ID), opaque=n, ext_fields=view)) for n in range(requests)))
        other = SyncClient(address)
        slowest, grown = 0.0, 0
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            started = time.monotonic()
            assert other.call(RC.GET_BROKER_RUNTIME_INFO).code == R.SUCCESS
            slowest = max(slowest, time.monotonic() - started)
            grown = max(grown, _rss(broker.popen.pid) - before)
            time.sleep(0.05)
        # unlimited, the answers piled up (390 MB in 4 s) and the other waited 3 s
        assert grown < 64 * 1024 * 1024, grown
        assert slowest < 1.0, slowest
        # once the client reads, answers come again: the broker handles the held requests
        assert min(_read_answers(lazy, 10)) > BODY
        lazy.close()
        other.close()
    finally:
        broker.stop()
        nameserver.stop()



# ---------------------------------------------------------------- real sockets, in process


def test_stopped_connections_past_the_total_stop_everyone_with_something_unsent():
    budget = WriteBudget(64 * 1024, 256 * 1024)
    lazy = []

    @defer.inlineCallbacks
    def scenario(reactor):
        dispatcher = RequestDispatcher()
        dispatcher.register(7, lambda req, context: req.response(R.SUCCESS, body=b"a" * 2**20))
        dispatcher.register(9, lambda req, context: req.response(R.SUCCESS))
        factory = RemotingFactory(dispatcher, reactor, budget=budget)
        port = reactor.listenTCP(0, factory, interface="127.0.0.1")
        try:
            for _ in range(2):  # each leaves 300 KB or more unsent: together past the total
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.connect(("127.0.0.1", port.getHost().port))
                sock.sendall(b"".join(encode_frame(RemotingCommand(7, opaque=n))
                                      for n in range(30)))
                lazy.append(sock)
            yield poll_until(reactor, lambda: budget.over)
            assert budget.charged > budget.total
            # a client that reads is still served: nothing of its own waits to be sent
            connection = yield connect(reactor, "127.0.0.1:%d" % port.getHost().port,
                                       RemotingFactory(RequestDispatcher(), reactor))
            answer = yield connection.send_request(RemotingCommand(9))
            assert answer.code == R.SUCCESS
            connection.close()
            for sock in lazy:
                sock.close()
            yield poll_until(reactor, lambda: len(factory.connections) == 0)
            assert budget.charged == 0 and not budget.over
        finally:
            for sock in lazy:
                sock.close()
            yield port.stopListening()

    run_reactor(scenario, timeout=20)
