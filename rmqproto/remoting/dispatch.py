"""Request dispatch by code and the generic server behaviour (``NettyRemotingAbstract#processRequestCommand``).

A *processor* is any callable ``processor(request, context)`` taking the request
:class:`~rmqproto.codec.frame.RemotingCommand` and a :class:`RequestContext`, and
returning a response command, a ``Deferred`` firing with one (long polling,
replication waits), or ``None`` (no answer, or one it hands to
:meth:`RequestDispatcher.write_answer` later with its context's ``write``). A response
may also come as the whole frame (``bytes``), written by the processor under the rules
below (a :class:`~rmqproto.codec.frame.JsonResponseTemplate` with the dispatcher's
``version`` and the request's opaque): it is sent as it is. A processor may also have a
``reject_request()`` method (looked up when it is registered); when it returns true the
request is refused with ``SYSTEM_BUSY`` (Java's ``NettyRequestProcessor.rejectRequest``).

:class:`RequestDispatcher` applies the rules every RocketMQ server shares:

* no processor for the code → ``REQUEST_CODE_NOT_SUPPORTED`` with remark
  ``" request type <code> not supported"``;
* the processor raises (or its Deferred fails) → ``SYSTEM_ERROR`` with the
  exception's text;
* a response gets the request's opaque and serialize type, the response flag,
  language ``JAVA`` and the dispatcher's ``version``;
* a oneway request is never answered.

No sockets and no reactor here: the protocol feeds requests in and writes out the
frames that come back.
"""

import collections
import traceback

from twisted.internet.defer import Deferred
from twisted.logger import Logger
from twisted.python.failure import Failure

from rmqproto.codec.codes import CURRENT_VERSION, ResponseCode
from rmqproto.codec.frame import FLAG_ONEWAY, FLAG_RESPONSE, RemotingCommand, encode_frame
from rmqproto.remoting.address import parse_address

__all__ = ["REJECT_REQUEST_REMARK", "RequestContext", "RequestDispatcher", "GuardedDispatcher",
           "exception_remark"]

REJECT_REQUEST_REMARK = "[REJECTREQUEST]system busy, start flow control for a while"

log = Logger()


#: The entry of a code without a processor.
_NO_ENTRY = (None, None)


def _entry(processor):
    """``(processor, its reject_request or None)``."""
    return processor, getattr(processor, "reject_request", None)


def _parsed(peer):
    """``parse_address(peer)``, or None when ``peer`` is not ``host:port``."""
    try:
        return parse_address(peer)
    except ValueError:
        return None


class RequestContext:
    """What a processor knows about where a request came from.

    ``connection`` is the :class:`~rmqproto.remoting.protocol.RemotingProtocol` the
    request arrived on (use it to call the peer back or to close it); ``peer`` is the
    peer's address as ``"host:port"``; ``write``, when not None, writes a frame to the
    connection, for an answer a processor hands to
    :meth:`RequestDispatcher.write_answer` later instead of returning a Deferred. A
    connection keeps one context for all its requests.
    """

    __slots__ = ("connection", "peer", "address", "write")

    def __init__(self, connection, peer, write=None):
        self.connection = connection
        self.peer = peer
        self.write = write
        #: ``peer`` as ``(host, port)``, or None if it is not ``host:port`` (parsed here:
        #: every send reads it, and a connection keeps its context)
        self.address = _parsed(peer)

    def __repr__(self):
        return "RequestContext(peer=%r)" % (self.peer,)


def exception_remark(exc):
    """The remark of a ``SYSTEM_ERROR`` response: the exception and where it was raised.

    Java writes ``e.toString()`` and the top stack frame (``RemotingHelper.exceptionSimpleDesc``);
    this writes ``Type: message`` and the innermost frame, ``function(file:line)``.
    """
    kind = type(exc)
    name = kind.__qualname__ if kind.__module__ == "builtins" else "%s.%s" % (
        kind.__module__, kind.__qualname__)
    message = str(exc)
    text = "%s: %s" % (name, message) if message else name
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else None
    if frames:
        top = frames[-1]
        text += ", %s(%s:%d)" % (top.name, top.filename.rsplit("/", 1)[-1], top.lineno)
    return text


class RequestDispatcher:
    """The processor table of one server or client (Java's ``processorTable``).

    :meth:`dispatch` turns a request into the encoded response frame, a ``Deferred``
    firing with one (or ``None``), or ``None`` when nothing is to be sent.
    """

    def __init__(self, version=CURRENT_VERSION):
        self.version = version
        self._processors = {}  # code -> _entry(processor)
        self._default = _NO_ENTRY
        #: request code -> requests dispatched, response code -> error answers made here
        #: (not by processors): for the metrics
        self.request_counts = {}
        self.error_counts = collections.Counter()

    def register(self, code, processor):
        """Route requests with ``code`` to ``processor`` (replacing any earlier one)."""
        self._processors[code] = _entry(processor)

    def codes(self):
        """The codes routed to a processor of their own."""
        return set(self._processors)

    def register_default(self, processor):
        """Route every code without its own processor to ``processor``."""
        self._default = _entry(processor)

    @property
    def default_processor(self):
        """The processor of every code without its own, or ``None``."""
        return self._default[0]

    def processor_for(self, code):
        """The processor ``code`` is routed to, or ``None``."""
        return self._entry_for(code)[0]

    def _entry_for(self, code):
        return self._processors.get(code, self._default)

    def excluding(self, *codes):
        """A view of this dispatcher that does not support ``codes`` (as a broker's VIP
        channel serves no pulls); later registrations here show through it."""
        return _ExcludingDispatcher(self, codes)

    def dispatch(self, request, context, write=None):
        """Process ``request``; the response frame (bytes), a Deferred of it, or ``None``.

        With ``write`` (a callable taking a frame), a response that comes later is handed to
        it and None is returned instead of the Deferred: one callback less on every
        Deferred answer (a SYNC_MASTER's or a SYNC_FLUSH's send, a long poll)."""
        code = request.code
        counts = self.request_counts
        counts[code] = counts.get(code, 0) + 1
        processor, reject = self._processors.get(code, self._default)  # _entry_for's
        if processor is None:
            return self._not_supported(request, context)
        if reject is not None and reject():
            return self._answer(request, ResponseCode.SYSTEM_BUSY, REJECT_REQUEST_REMARK)
        try:
            result = processor(request, context)
            if type(result) is bytes:  # the usual answer: a whole frame
                return None if request.flag & FLAG_ONEWAY else result
            if result is None:  # answered later without a Deferred (write_answer), or never
                return None
            if not isinstance(result, Deferred):  # an ABC, slow to isinstance
                return self._finish(request, result)
        except Exception:
            return self._failed(Failure(), request)
        # one entry in the Deferred's chain (a sync send's answer comes this way)
        if write is None:
            return result.addCallbacks(self._finish_later, self._failed, callbackArgs=(request,),
                                       errbackArgs=(request,))
        result.addCallbacks(self._write_later, self._write_failed, callbackArgs=(request, write),
                            errbackArgs=(request, write))
        return None

    def _not_supported(self, request, context):
        remark = " request type %d not supported" % request.code
        log.warn("{peer}{remark}", peer=context.peer, remark=remark)
        return self._answer(request, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark)

    def _finish(self, request, response):
        if response is None or request.flag & FLAG_ONEWAY:
            return None
        if type(response) is bytes:  # the whole frame, written by the processor
            return response
        if not isinstance(response, RemotingCommand):
            raise TypeError("processor for request code %d returned %r, not a RemotingCommand "
                            "or a frame" % (request.code, response))
        response.opaque = request.opaque
        response.flag |= FLAG_RESPONSE
        response.serialize_type = request.serialize_type
        response.language = "JAVA"
        response.version = self.version
        return encode_frame(response)

    def _finish_later(self, response, request):
        """:meth:`_finish` of a Deferred's ``response``; SYSTEM_ERROR when that raises."""
        try:
            return self._finish(request, response)
        except Exception:
            return self._failed(Failure(), request)

    def write_answer(self, request, write, answer, *args):
        """For a processor that answers ``request`` later without a Deferred: the response
        ``answer(*args)`` makes (what a processor returns), finished as :meth:`dispatch`
        finishes one and handed to ``write`` (a :class:`RequestContext`'s); SYSTEM_ERROR
        when ``answer`` raises, nothing for a oneway request."""
        try:
            response = answer(*args)
        except Exception:
            self._write_failed(Failure(), request, write)
            return
        if type(response) is bytes:  # the usual answer, a whole frame: _finish's, in place
            if not request.flag & FLAG_ONEWAY:
                write(response)
        else:
            self._write_later(response, request, write)

    def _write_later(self, response, request, write):
        """:meth:`_finish_later`, its frame (if any) handed to ``write``."""
        frame = self._finish_later(response, request)
        if frame is not None:
            write(frame)

    def _write_failed(self, failure, request, write):
        """:meth:`_failed`, its frame (if any) handed to ``write``."""
        frame = self._failed(failure, request)
        if frame is not None:
            write(frame)

    def _failed(self, failure, request):
        log.failure("process request exception, code {code}", failure, code=request.code)
        return self._answer(request, ResponseCode.SYSTEM_ERROR, exception_remark(failure.value))

    def _answer(self, request, code, remark):
        self.error_counts[int(code)] += 1
        if request.flag & FLAG_ONEWAY:
            return None
        return encode_frame(request.response(int(code), remark=remark, version=self.version))


class GuardedDispatcher(RequestDispatcher):
    """A :class:`RequestDispatcher` that first asks ``guard(request, context)`` about each request
    it has a processor for (after ``reject_request``): ``None`` lets it through, a refusal
    ``(code, remark)`` is answered instead (Java's server ``RPCHook.doBeforeRequest``, where
    the broker's ACL check runs). A plain dispatcher pays nothing for this."""

    def __init__(self, guard, version=CURRENT_VERSION):
        super().__init__(version)
        self.guard = guard

    def dispatch(self, request, context, write=None):
        """:meth:`RequestDispatcher.dispatch` of what the guard lets through."""
        processor, reject = self._processors.get(request.code, self._default)
        if processor is not None and (reject is None or not reject()):
            try:
                refusal = self.guard(request, context)
            except Exception:
                return self._failed(Failure(), request)
            if refusal is not None:
                return self._answer(request, *refusal)
        return super().dispatch(request, context, write)


class _ExcludingDispatcher(RequestDispatcher):
    """:meth:`RequestDispatcher.excluding`: ``base``'s processors except for ``codes``."""

    def __init__(self, base, codes):
        super().__init__(base.version)
        self._base = base
        self._excluded = frozenset(int(code) for code in codes)

    def _entry_for(self, code):
        return _NO_ENTRY if code in self._excluded else self._base._entry_for(code)

    def dispatch(self, request, context, write=None):
        """The base's :meth:`~RequestDispatcher.dispatch` (the same version: this view's is
        the base's), ``codes`` refused."""
        if request.code in self._excluded:
            return self._not_supported(request, context)
        return self._base.dispatch(request, context, write)
