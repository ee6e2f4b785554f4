"""The connection protocol on an in-memory transport with a fake clock."""

import struct

import pytest
from twisted.internet.defer import CancelledError, Deferred, succeed
from twisted.internet.error import ConnectionDone
from twisted.logger import LogLevel, capturedLogs
from twisted.python.failure import Failure

from rmqproto.codec.frame import (
    FLAG_ONEWAY, FLAG_RESPONSE, SERIALIZE_ROCKETMQ, RemotingCommand, encode_frame)
from rmqproto.remoting import RemotingConnectionError, RemotingTimeoutError
from rmqproto.remoting.protocol import gathered_writes
from rmqproto.codec.codes import ResponseCode as R

from conftest import RecordingTransport, Wire, request


def echo(req, context):
    return req.response(R.SUCCESS, ext_fields=req.ext_fields, body=req.body)


def results_of(deferred):
    box = []
    deferred.addBoth(box.append)
    return box


def answer_later(wire, waiting):
    """Code 7 is answered by a Deferred, kept with its request in ``waiting``."""
    wire.dispatcher.register(7, lambda req, context: waiting.append((req, Deferred()))
                             or waiting[-1][1])


def answer(waiting):
    """Fire the Deferreds of ``waiting`` with SUCCESS answers, in order."""
    for req, deferred in waiting:
        deferred.callback(req.response(R.SUCCESS))


def lose(wire):
    wire.protocol.connectionLost(Failure(ConnectionDone()))


def test_pipelined_requests_in_one_chunk_are_answered_in_order_in_two_sends():
    wire = Wire()
    wire.dispatcher.register(7, echo)
    wire.receive(*(request(7, opaque=n, body=b"%d" % n) for n in range(200)),
                 request(99, opaque=500))
    assert len(wire.transport.writes) == 2  # the first answer, then the rest of the read
    answers = wire.sent()
    assert [a.opaque for a in answers] == list(range(200)) + [500]
    assert all(a.body == b"%d" % a.opaque and a.flag == FLAG_RESPONSE for a in answers[:200])
    assert answers[200].code == R.REQUEST_CODE_NOT_SUPPORTED


def test_the_first_answer_of_a_read_goes_out_before_the_next_request_is_handled():
    wire = Wire()
    writes_seen = []

    def note(req, context):
        writes_seen.append(len(wire.transport.writes))
        return echo(req, context)

    wire.dispatcher.register(7, note)
    wire.receive(*(request(7, opaque=n) for n in range(3)))
    assert writes_seen == [0, 1, 1]
    assert len(wire.transport.writes) == 2


def test_answers_made_after_the_read_go_out_at_once():
    wire = Wire()
    waiting = []
    wire.dispatcher.register(7, lambda req, context: waiting.append(Deferred()) or waiting[0])
    wire.dispatcher.register(8, echo)
    wire.receive(request(7, opaque=1), request(8, opaque=2), request(8, opaque=3))
    assert len(wire.transport.writes) == 2
    assert [a.opaque for a in wire.sent()] == [2, 3]
    waiting[0].callback(request(7, opaque=1).response(R.SUCCESS))
    assert len(wire.transport.writes) == 3
    assert [a.opaque for a in wire.sent()] == [1]
    wire.protocol.send_oneway(request(9))  # a request of our own, outside any read
    assert len(wire.transport.writes) == 4


def test_a_processor_writes_a_later_answer_through_its_context():
    """``context.write`` is the connection's: an answer a processor hands to
    ``write_answer`` after the read goes out as a Deferred's would."""
    wire = Wire()
    kept = []
    wire.dispatcher.register(7, lambda req, context: kept.append((req, context.write)))
    wire.receive(request(7, opaque=1))
    assert wire.transport.writes == []
    (req, write), = kept
    wire.dispatcher.write_answer(req, write, req.response, R.SUCCESS)
    assert [(a.opaque, a.code) for a in wire.sent()] == [(1, R.SUCCESS)]


def test_answers_made_together_within_gathered_writes_go_out_in_one_send_a_connection():
    wires = [Wire(), Wire()]
    waiting = []
    for wire in wires:
        answer_later(wire, waiting)
        wire.receive(*(request(7, opaque=n) for n in range(4)))
    with gathered_writes():
        with gathered_writes():  # nested: the outer one sends
            answer(waiting[:3])
        assert len(wires[0].transport.writes) == 0  # all wait for the end
        answer(waiting[3:5])
    assert [len(w.transport.writes) for w in wires] == [1, 1]
    assert [[a.opaque for a in w.sent()] for w in wires] == [[0, 1, 2, 3], [0]]
    answer(waiting[5:6])  # after it: at once again
    assert len(wires[1].transport.writes) == 2
    assert [a.opaque for a in wires[1].sent()] == [1]


def test_a_connection_closed_within_gathered_writes_sends_what_it_gathered_first():
    wire = Wire()
    waiting = []
    answer_later(wire, waiting)
    wire.receive(request(7, opaque=1), request(7, opaque=2), request(7, opaque=3))
    with gathered_writes():
        answer(waiting[:2])
        wire.protocol.close()
        answer(waiting[2:])  # after the close: not sent
    assert [a.opaque for a in wire.sent()] == [1, 2]


def test_frames_split_across_reads():
    wire = Wire()
    wire.dispatcher.register(7, echo)
    data = b"".join(encode_frame(request(7, opaque=n, body=b"x" * n)) for n in range(5))
    for i in range(0, len(data), 3):
        wire.protocol.dataReceived(data[i:i + 3])
    assert [a.opaque for a in wire.sent()] == list(range(5))


def test_oneway_and_exceptions():
    wire = Wire()

    def broken(req, context):
        raise RuntimeError("disk full")

    wire.dispatcher.register(1, broken)
    wire.receive(request(1, opaque=1, flag=FLAG_ONEWAY), request(1, opaque=2),
                 request(99, opaque=3, flag=FLAG_ONEWAY))
    (answer,) = wire.sent()
    assert (answer.opaque, answer.code) == (2, R.SYSTEM_ERROR)
    assert answer.remark.startswith("RuntimeError: disk full, broken(")


def test_deferred_responses_in_any_order():
    wire = Wire()
    waiting = {}

    def parked(req, context):
        waiting[req.opaque] = d = Deferred()
        return d

    wire.dispatcher.register(11, parked)
    wire.dispatcher.register(12, lambda req, context: succeed(req.response(R.SUCCESS)))
    wire.receive(*(request(11, opaque=n) for n in range(4)), request(12, opaque=9))
    assert [a.opaque for a in wire.sent()] == [9]  # already-fired Deferreds join the batch
    for n in (2, 0, 3, 1):
        waiting[n].callback(RemotingCommand(R.SUCCESS, body=b"%d" % n))
    assert [(a.opaque, a.body) for a in wire.sent()] == [(2, b"2"), (0, b"0"), (3, b"3"), (1, b"1")]


def test_deferred_response_after_connection_lost_is_dropped():
    wire = Wire()
    parked = Deferred()
    wire.dispatcher.register(11, lambda req, context: parked)
    wire.receive(request(11, opaque=1))
    lose(wire)
    wire.transport.clear()
    parked.callback(RemotingCommand(R.SUCCESS))
    assert wire.transport.value() == b""


def test_request_response_correlation_and_process_wide_opaques():
    first, second = Wire(), Wire()
    d1 = first.protocol.send_request(request(105, ext_fields={"topic": "T"}, serialize_type=SERIALIZE_ROCKETMQ))
    d2 = second.protocol.send_request(request(105))
    (sent1,), (sent2,) = first.sent(), second.sent()
    assert sent2.opaque == sent1.opaque + 1
    assert (sent1.flag, sent1.version, sent1.serialize_type) == (0, 409, SERIALIZE_ROCKETMQ)
    got = results_of(d1)
    first.receive(sent1.response(R.SUCCESS, body=b"route"))
    assert got[0].body == b"route" and first.protocol.pending_count == 0
    d2.cancel()
    assert isinstance(results_of(d2)[0].value, CancelledError)
    assert second.protocol.pending_count == 0 and not second.clock.getDelayedCalls()


def test_timeout_uses_the_given_clock():
    wire = Wire()
    got = results_of(wire.protocol.send_request(request(105), timeout=2.5))
    (sent,) = wire.sent()
    wire.clock.advance(2.4)
    assert got == []
    wire.clock.advance(0.2)
    assert isinstance(got[0].value, RemotingTimeoutError)
    assert "2500(ms)" in str(got[0].value)
    with capturedLogs() as events:
        wire.receive(sent.response(R.SUCCESS))  # too late: logged and ignored
    assert [e["log_level"] for e in events] == [LogLevel.warn]


def test_connection_loss_fails_pending_and_later_requests():
    wire = Wire()
    pending = [results_of(wire.protocol.send_request(request(105))) for _ in range(3)]
    lose(wire)
    assert all(isinstance(p[0].value, RemotingConnectionError) for p in pending)
    assert not wire.clock.getDelayedCalls()
    late = results_of(wire.protocol.send_request(request(105)))
    assert isinstance(late[0].value, RemotingConnectionError)
    assert isinstance(results_of(wire.protocol.send_oneway(request(105)))[0].value,
                      RemotingConnectionError)


def test_oneway_sends_flag_and_expects_nothing():
    wire = Wire()
    assert results_of(wire.protocol.send_oneway(request(34))) == [None]
    (sent,) = wire.sent()
    assert sent.flag == FLAG_ONEWAY and wire.protocol.pending_count == 0


def test_both_directions_on_one_connection():
    """The peer may call us back while our own request waits (broker → client callbacks)."""
    wire = Wire()
    wire.dispatcher.register(40, echo)  # e.g. NOTIFY_CONSUMER_IDS_CHANGED
    got = results_of(wire.protocol.send_request(request(35)))
    (ours,) = wire.sent()
    wire.receive(request(40, opaque=ours.opaque, body=b"callback"), ours.response(R.SUCCESS))
    (callback_answer,) = wire.sent()
    assert (callback_answer.opaque, callback_answer.body) == (ours.opaque, b"callback")
    assert got[0].code == R.SUCCESS


def test_processor_can_call_the_peer_back():
    wire = Wire()
    replies = []

    def ask_back(req, context):
        context.connection.send_request(request(40)).addCallback(replies.append)
        return req.response(R.SUCCESS)

    wire.dispatcher.register(30, ask_back)
    wire.receive(request(30, opaque=3))
    callback, answer = wire.sent()  # the request made while answering goes out first
    assert (callback.code, answer.opaque) == (40, 3)
    wire.receive(callback.response(R.SUCCESS, remark="done"))
    assert replies[0].remark == "done"


BAD_FRAMES = {
    "too large": struct.pack(">i", 16 * 1024 * 1024),
    "length below 4": struct.pack(">i", 2) + b"\0\0",
    "bad header length": struct.pack(">iI", 8, 200) + b"{}{}",
    "bad json": struct.pack(">iI", 9, 5) + b"{nope",
    "unknown serialize type": struct.pack(">iI", 6, (7 << 24) | 2) + b"{}",
}


@pytest.mark.parametrize("garbage", list(BAD_FRAMES.values()), ids=list(BAD_FRAMES))
def test_malformed_frame_closes_only_that_connection(garbage):
    wire = Wire()
    wire.dispatcher.register(7, echo)
    other = wire.factory.buildProtocol(None)
    other_transport = RecordingTransport()
    other.makeConnection(other_transport)
    pending = results_of(wire.protocol.send_request(request(105)))
    wire.sent()
    with capturedLogs() as events:
        wire.protocol.dataReceived(encode_frame(request(7, opaque=1)))
        wire.protocol.dataReceived(encode_frame(request(7, opaque=2)) + garbage)
        wire.protocol.dataReceived(encode_frame(request(7, opaque=3)))
    assert len(events) == 1 and events[0]["log_level"] == LogLevel.warn
    assert "malformed frame" in events[0]["log_format"]
    assert wire.transport.disconnecting and not other_transport.disconnecting
    answered = [a.opaque for a in wire.sent()]
    assert answered[0] == 1 and 3 not in answered  # nothing is read after the garbage
    lose(wire)
    assert isinstance(pending[0].value, RemotingConnectionError)
    other.dataReceived(encode_frame(request(7, opaque=4)))
    assert other_transport.value()
    assert wire.factory.connections == {other}


def test_factory_tracks_connections_and_runs_hooks():
    wire = Wire()
    events = []
    wire.factory.connection_made_hooks.append(lambda c: events.append(("made", c)))
    wire.factory.connection_lost_hooks.append(lambda c, reason: 1 / 0)
    wire.factory.connection_lost_hooks.append(lambda c, reason: events.append(("lost", c)))
    second = wire.factory.buildProtocol(None)
    second.makeConnection(RecordingTransport())
    assert wire.factory.connections == {wire.protocol, second}
    with capturedLogs() as logged:
        second.connectionLost(Failure(ConnectionDone()))
    assert events == [("made", second), ("lost", second)]
    assert len(logged) == 1  # the failing hook is logged, the next still runs
    assert wire.factory.connections == {wire.protocol}
    assert second.context.peer == "192.168.1.1:54321"



def test_opaques_wrap_like_a_java_int(monkeypatch):
    import itertools

    from rmqproto.remoting import protocol

    monkeypatch.setattr(protocol, "_opaques", itertools.count(2**31 - 1))
    assert [protocol.next_opaque() for _ in range(3)] == [2**31 - 1, -2**31, -2**31 + 1]


def test_client_rejects_a_bad_address():
    from twisted.internet.task import Clock

    from rmqproto.remoting import RemotingClient, parse_address

    assert parse_address("10.0.0.1:9876") == ("10.0.0.1", 9876)
    failed = results_of(RemotingClient(Clock()).invoke("no-port", request(105)))
    assert isinstance(failed[0].value, RemotingConnectionError)


def test_requests_before_a_bad_length_prefix_in_the_same_read_are_answered():
    """Netty passes on the frames it completed before the bad prefix, then closes."""
    from rmqproto.codec.frame import RemotingCommand, decode_frame, encode_frame
    from rmqproto.remoting import RequestDispatcher
    from rmqproto.remoting.protocol import RemotingProtocol
    from twisted.internet.task import Clock
    from twisted.internet.testing import StringTransport

    dispatcher = RequestDispatcher()
    dispatcher.register(1, lambda request, context: request.response(0))
    protocol = RemotingProtocol(dispatcher, Clock())
    transport = StringTransport()
    protocol.makeConnection(transport)
    protocol.dataReceived(encode_frame(RemotingCommand(1, opaque=5)) + b"\x7f\xff\xff\xff")
    answer = decode_frame(transport.value()[4:])
    assert (answer.opaque, answer.code) == (5, 0)
    assert transport.disconnecting


def test_connections_turn_nagle_off_as_java_does():
    """``NettyRemotingServer`` and ``NettyRemotingClient`` set TCP_NODELAY on every channel."""
    from rmqproto.remoting import RequestDispatcher
    from rmqproto.remoting.protocol import RemotingProtocol
    from twisted.internet.task import Clock
    from twisted.internet.testing import StringTransport

    class TCPTransport(StringTransport):
        no_delay = False

        def setTcpNoDelay(self, enabled):
            self.no_delay = enabled

    transport = TCPTransport()
    RemotingProtocol(RequestDispatcher(), Clock()).makeConnection(transport)
    assert transport.no_delay is True
    RemotingProtocol(RequestDispatcher(), Clock()).makeConnection(StringTransport())  # no TCP: fine


def test_a_read_handled_within_gathered_writes_keeps_what_was_gathered():
    """A read delivered while the connection gathers (an in-memory transport can do that)
    sends what was gathered before it, in order, with its own answers."""
    wire = Wire()
    wire.dispatcher.register(8, echo)
    waiting = []
    answer_later(wire, waiting)
    wire.receive(request(7, opaque=1), request(7, opaque=2))
    with gathered_writes():
        answer(waiting)
        wire.receive(request(8, opaque=3))
    assert [a.opaque for a in wire.sent()] == [1, 2, 3]
