"""The Twisted protocol speaking RocketMQ remoting on one connection (``docs/remoting.md``).

One :class:`RemotingProtocol` serves both directions of a connection: it answers
the peer's requests through a :class:`~rmqproto.remoting.dispatch.RequestDispatcher`
and correlates the peer's responses with its own outgoing requests by opaque
(the broker calls its clients back on the connection they opened).

Every frame of one ``dataReceived`` is decoded in turn. The first thing written meanwhile
(an answer made at once, a request sent from a handler) is sent straight away
(:func:`~rmqproto.remoting.sendnow.send_now`), so the peer can go on while we handle the
rest; what follows in that read is gathered and sent in one go at its end. A peer with
many requests in flight so costs two sends per read instead of one per request (on
loopback a send costs as much as handling a small request), without the two sides
falling into lockstep. Anything written later (an answer after a flush or replica wait, a
request of our own) is sent as soon as it is made, unless made within
:class:`gathered_writes` (a replica's ack answering several waiting sends), where each
connection's writes are sent together on leaving it. A peer whose bytes do not decode
loses its connection, with one log line saying why, after the answers to its frames before
the bad one are sent.

Flow control (docs/remoting.md, "Flow control"): the protocol is the streaming producer of its
transport. When what waits to be sent passes ``writeBufferHighWaterMark`` (the transport's
``bufferSize``), or anything waits while the factory's
:class:`~rmqproto.remoting.backpressure.WriteBudget` is over, the protocol is paused: it stops
reading and keeps the frames of the read being handled that it has not handled yet; once
everything is sent the transport resumes it, and it handles them and reads again. A read's
gathered answers are sent as soon as they pass the high water mark, so one read cannot pile
up more than that plus one answer. Each write costs O(1) checks.

TLS (docs/security.md): with a server policy in its factory the first bytes of a connection
choose between plain remoting and a TLS handshake, as Java's ``NettyRemotingServer``'s
``HandshakeHandler``; with a client policy the connection starts TLS at once.
"""

import itertools

from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.interfaces import IPushProducer
from twisted.internet.protocol import Protocol
from twisted.logger import Logger
from zope.interface import implementer

from rmqproto.codec.frame import (
    FLAG_ONEWAY, FLAG_RESPONSE, MAX_FRAME_LENGTH, FrameDecoder, decode_frame, encode_frame,
)
from rmqproto.errors import CodecError
from rmqproto.remoting.address import format_address
from rmqproto.remoting.backpressure import WriteBudget
from rmqproto.remoting.dispatch import RequestContext
from rmqproto.remoting.errors import RemotingConnectionError, RemotingTimeoutError
from rmqproto.remoting.sendnow import pause_producer, send_now, unsent_bytes
from rmqproto.remoting.serversettings import NETTY_HIGH_WATER_MARK
from rmqproto.remoting.tls import PLAIN, TLS

__all__ = ["RemotingProtocol", "DEFAULT_TIMEOUT", "next_opaque", "format_address",
           "gathered_writes"]

#: Seconds an outgoing request waits for its response unless told otherwise.
DEFAULT_TIMEOUT = 3.0

log = Logger()

_opaques = itertools.count()

#: The budget of connections without a factory: never over.
_NEVER_OVER = WriteBudget(NETTY_HIGH_WATER_MARK, float("inf"))

#: While :class:`gathered_writes` runs: the protocols that gather because of it.
_gathering = None


class gathered_writes:
    """Within: each connection gathers its writes and sends them in one go on leaving. For
    code that answers many requests at once outside a read of their connections: the answers
    are ready together, so unlike a read's, the first is not worth a send of its own. Nested,
    the outer one sends."""

    __slots__ = ("_outer",)

    def __enter__(self):
        global _gathering
        self._outer = _gathering is not None
        if not self._outer:
            _gathering = []

    def __exit__(self, *exc_info):
        global _gathering
        if not self._outer:
            gathering, _gathering = _gathering, None
            for protocol in gathering:
                protocol._send_gathered()
        return False


def next_opaque():
    """The next request id: process-wide, from 0, wrapping like a Java ``int`` (``RemotingCommand.requestId``)."""
    return ((next(_opaques) + 0x80000000) & 0xFFFFFFFF) - 0x80000000


@implementer(IPushProducer)
class RemotingProtocol(Protocol):
    """Requests in and out, responses in and out, on one connection.

    ``dispatcher`` answers incoming requests; its ``version`` is also stamped on
    outgoing requests. ``reactor`` schedules request timeouts. When built by a
    :class:`~rmqproto.remoting.factory.RemotingFactory` the factory is told when
    the connection is made and lost.
    """

    factory = None

    def __init__(self, dispatcher, reactor, max_frame_length=MAX_FRAME_LENGTH):
        self.dispatcher = dispatcher
        self.reactor = reactor
        self.peer = None
        self.context = None
        self._decoder = FrameDecoder(max_frame_length)
        self._pending = {}  # opaque -> (Deferred, IDelayedCall)
        self._open = False
        self._gathered = None  # while a read is handled: [marker of the first write, …]
        self._high_water_mark = NETTY_HIGH_WATER_MARK  # unsent bytes after which reading pauses
        self._gather_room = NETTY_HIGH_WATER_MARK  # bytes _gathered may take before a send
        self._paused = False  # by the transport: too much unsent
        self._held = None  # while paused: (frames read and not handled, their read's error)
        self._budget = _NEVER_OVER  # the factory's WriteBudget
        self._charged = 0  # bytes charged to it while paused
        self.last_activity = reactor.seconds()  # last read or write, for idle-connection reaping

    # ------------------------------------------------------------ connection

    def connectionMade(self):
        self._open = True
        # TCP_NODELAY, as Java's NettyRemotingServer and NettyRemotingClient set it
        set_no_delay = getattr(self.transport, "setTcpNoDelay", None)
        if set_no_delay is not None:
            set_no_delay(True)
        self.peer = format_address(self.transport.getPeer())
        self.context = RequestContext(self, self.peer, self._write)
        self.transport.registerProducer(self, True)
        factory = self.factory
        if factory is not None:
            self._budget = budget = factory.budget
            # Twisted pauses its streaming producer past bufferSize (also its read size)
            self._high_water_mark = self._gather_room = budget.high_water_mark
            self.transport.bufferSize = budget.high_water_mark
            tls = factory.tls
            if tls is not None:
                if tls.server:  # the first read decides; the method is back after it
                    self.dataReceived = self._first_read
                else:
                    self.transport.startTLS(tls.context)
            factory.connection_made(self)

    def connectionLost(self, reason):
        self._open = False
        self._held = None
        self._release()
        pending, self._pending = self._pending, {}
        for deferred, timer in pending.values():
            timer.cancel()
            deferred.errback(RemotingConnectionError(
                "connection to %s lost: %s" % (self.peer, reason.getErrorMessage())))
        if self.factory is not None:
            self.factory.connection_lost(self, reason)

    @property
    def is_open(self):
        """Whether requests can still be sent on this connection."""
        return self._open

    @property
    def pending_count(self):
        """How many outgoing requests await their response."""
        return len(self._pending)

    def close(self):
        """Close the connection once what was written (and gathered) is sent; at once if it
        is stopped (its peer does not read: what waits would keep it open for ever)."""
        self._send_gathered()
        self._open = False
        self._held = None
        if self._paused:
            self.transport.abortConnection()
            return
        self.transport.unregisterProducer()
        self.transport.loseConnection()

    # ------------------------------------------------------------ flow control

    def pauseProducing(self):
        """Too much waits to be sent: stop reading (the transport calls this).

        Through TLS it is also called while the handshake is under way, with nothing of ours
        waiting: then reading goes on (the handshake needs it; no request can come before it).
        """
        if self._paused:
            return
        unsent = unsent_bytes(self.transport)
        if getattr(self.transport, "TLS", False) and unsent <= self._pause_above():
            return
        self._paused = True
        self.transport.pauseProducing()
        self._charged = unsent
        self._budget.charge(unsent)

    def resumeProducing(self):
        """All is sent: handle the frames held back, then read again (the transport calls
        this)."""
        if not self._paused or not self._open:
            return
        self._paused = False
        self._release()
        held, self._held = self._held, None
        if held is not None:
            self._handle(*held)
        if not self._paused and self._open:
            self.transport.resumeProducing()

    def stopProducing(self):
        """The connection is going: nothing to stop (:meth:`connectionLost` cleans up)."""

    def _release(self):
        charged, self._charged = self._charged, 0
        if charged:
            self._budget.release(charged)

    def _pause_above(self):
        """The unsent bytes past which reading pauses: none while the budget is over."""
        return 0 if self._budget.over else self._high_water_mark

    def _unsent(self):
        """A write left bytes to the transport while the budget is over: pause now if some
        really wait (the transport resumes us once it has sent them)."""
        if unsent_bytes(self.transport):
            pause_producer(self.transport)

    # ------------------------------------------------------------ TLS

    def _first_read(self, data):
        """The first bytes: plain remoting, a TLS handshake or refused, by the factory's
        TLS policy (Java's ``HandshakeHandler``)."""
        del self.dataReceived
        tls = self.factory.tls
        verdict = tls.classify(data[0])
        if verdict is PLAIN:
            self.dataReceived(data)
        elif verdict is TLS:
            self.transport.startTLS(tls.context)
            self.transport.protocol.dataReceived(data)  # the TLS layer, now in front of us
        else:
            log.warn("closing connection from {peer}: {why}", peer=self.peer, why=verdict)
            self.close()

    # ------------------------------------------------------------ incoming

    def dataReceived(self, data):
        if not self._open:
            return
        frames, error = self._decoder.take(data)
        if self._paused:  # bytes the transport had before it stopped reading
            held = self._held
            if held is None:
                self._held = (frames, error)
            elif held[1] is None:  # (after a bad frame nothing counts)
                self._held = (held[0] + frames, error)
            return
        self._handle(frames, error)

    def _handle(self, frames, error):
        """Handle the frames of a read, then raise its ``error``; stops, keeping the rest,
        when the transport pauses us."""
        if self._gathered is None:  # else gathering already (gathered_writes): keep it
            self._gathered = []
        try:
            context = self.context
            write = context.write
            frames = iter(frames)
            for frame in frames:
                command = decode_frame(frame)
                if command.flag & FLAG_RESPONSE:
                    self._response_received(command)
                    continue
                # a request, answered here (a method of its own would cost a call a request);
                # an answer that comes later is written by the dispatcher's callback
                answer = self.dispatcher.dispatch(command, context, write)
                if answer is not None:
                    write(answer)
                if self._paused:
                    self._held = (list(frames), error)
                    return
            if error is not None:
                raise error
        except CodecError as exc:
            log.warn("closing connection from {peer}: malformed frame: {error}",
                     peer=self.peer, error=exc)
            self.close()
        finally:
            self._send_gathered()
            self.last_activity = self.reactor.seconds()  # the read's writes are done too

    def _response_received(self, command):
        entry = self._pending.pop(command.opaque, None)
        if entry is None:
            log.warn("response from {peer} matches no request: {command!r}",
                     peer=self.peer, command=command)
            return
        deferred, timer = entry
        timer.cancel()
        deferred.callback(command)

    # ------------------------------------------------------------ outgoing

    def send_request(self, request, timeout=DEFAULT_TIMEOUT):
        """Send ``request``; a Deferred firing with the response command.

        ``request`` gets a fresh opaque and the dispatcher's version. The Deferred
        fails with :class:`RemotingTimeoutError` after ``timeout`` seconds and with
        :class:`RemotingConnectionError` if the connection is or becomes closed;
        cancelling it forgets the request.
        """
        if not self._open:
            return fail(RemotingConnectionError("connection to %s is closed" % (self.peer,)))
        request.opaque = opaque = next_opaque()
        request.version = self.dispatcher.version
        try:
            frame = encode_frame(request)
        except CodecError:
            return fail()
        deferred = Deferred(lambda _: self._forget(opaque))
        timer = self.reactor.callLater(timeout, self._timed_out, opaque, timeout)
        self._pending[opaque] = (deferred, timer)
        self._write(frame)
        return deferred

    def send_oneway(self, request):
        """Send ``request`` with the oneway flag; a Deferred firing with ``None`` once written."""
        if not self._open:
            return fail(RemotingConnectionError("connection to %s is closed" % (self.peer,)))
        request.opaque = next_opaque()
        request.version = self.dispatcher.version
        request.flag |= FLAG_ONEWAY
        try:
            self._write(encode_frame(request))
        except CodecError:
            return fail()
        return succeed(None)

    def _forget(self, opaque):
        entry = self._pending.pop(opaque, None)
        if entry is not None:
            entry[1].cancel()

    def _timed_out(self, opaque, timeout):
        entry = self._pending.pop(opaque, None)
        if entry is not None:
            entry[0].errback(RemotingTimeoutError(
                "wait response on the channel <%s> timeout, %d(ms)" % (self.peer, timeout * 1000)))

    # ------------------------------------------------------------ writing

    def _write(self, frame):
        if self._open:
            if self._gathered is None:  # else the read being handled sets last_activity
                self.last_activity = self.reactor.seconds()
                if _gathering is not None:  # within gathered_writes: all of it on leaving
                    _gathering.append(self)
                    self._gathered = [b""]
            if self._gathered:  # a later write of the read being handled, or gathered_writes
                self._gathered.append(frame)
                self._gather_room -= len(frame)
                if self._gather_room < 0:  # past the high water mark: send them now
                    self._send_gathered()
                    self._gathered = [b""]  # and gather on
            else:
                if not send_now(self.transport, frame) and self._budget.over:
                    self._unsent()
                if self._gathered is not None:  # the first: gather what follows
                    self._gathered.append(b"")

    def _send_gathered(self):
        """Send what was gathered during the read being handled, and stop gathering."""
        gathered, self._gathered = self._gathered, None
        self._gather_room = self._high_water_mark
        if gathered is not None and len(gathered) > 1 and self._open:
            data = gathered[1] if len(gathered) == 2 else b"".join(gathered)
            if not send_now(self.transport, data) and self._budget.over:
                self._unsent()
