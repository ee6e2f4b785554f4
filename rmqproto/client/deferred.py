"""The producer over Twisted: every call returns a Deferred (from ``async def`` code, wrap
it with ``await`` and run the coroutine with ``Deferred.fromCoroutine``). Only bytes and
time move here; the rules are the core's (:mod:`rmqproto.client.producer`)."""

from twisted.internet import defer, task
from twisted.logger import Logger

from rmqproto.client.config import ProducerConfig
from rmqproto.client.message import UniqueIds
from rmqproto.client.producer import ASYNC, ONEWAY, SYNC, ProducerCore, Reply, selecting
from rmqproto.remoting import RemotingClient
from rmqproto.remoting.errors import RemotingError

__all__ = ["Producer"]

log = Logger()


class Producer:
    """A producer (``DefaultMQProducer``) on ``reactor``; settings are Java's property names.

    :meth:`send` keeps the sync send's rules (retries on another broker, also after the
    broker codes Java retries), :meth:`send_async` the async send's (retries after
    transport errors only, ``retryTimesWhenSendAsyncFailed``). Every
    ``pollNameServerInterval`` the routes held are fetched again, as Java's timer does.
    """

    def __init__(self, reactor, config=None, **settings):
        self.reactor = reactor
        self.config = config or ProducerConfig(**settings)
        self.core = ProducerCore(self.config, ids=UniqueIds.for_this_host())
        self.client = RemotingClient(reactor)
        self._poll = task.LoopingCall(self._refresh_routes)
        self._poll.clock = reactor
        self._poll.start(self.config.pollNameServerInterval / 1000, now=False)

    def _now(self):
        return int(self.reactor.seconds() * 1000)

    def _perform(self, call):
        if call.oneway:
            sent = self.client.invoke_oneway(call.address, call.request)
        else:
            sent = self.client.invoke(call.address, call.request, call.timeout_ms / 1000)

        def failed(failure):
            failure.trap(RemotingError)
            return Reply(None, failure.value, self._now())

        return sent.addCallbacks(lambda response: Reply(response, None, self._now()), failed)

    def _refresh_routes(self):
        return self._run(self.core.refresh_routes(self._now())).addErrback(
            lambda failure: log.failure("route refresh failed", failure))

    def _run(self, steps, reply=None):
        """Advance ``steps`` by one call; a Deferred of the call's return value."""
        try:
            call = steps.send(reply)
        except StopIteration as done:
            return defer.succeed(done.value)
        except Exception:
            return defer.fail()
        return self._perform(call).addCallback(lambda answer: self._run(steps, answer))

    def _send(self, prepare, what, mode, choose=None):
        now = self._now()
        try:
            outgoing = prepare(what, now)
        except Exception:
            return defer.fail()
        return self._run(self.core.send(outgoing, mode, now, choose))

    def send(self, message, selector=None, arg=None):
        """Send one :class:`~rmqproto.client.Message`; a Deferred of its :class:`SendResult`.
        With ``selector(queues, message, arg)`` the send goes to the queue it returns, tried
        once: an ordered send."""
        return self._send(self.core.prepare, message, SYNC, selecting(selector, message, arg))

    def send_async(self, message, selector=None, arg=None):
        """Send one message with the async send's retry rules; a Deferred of its result."""
        return self._send(self.core.prepare, message, ASYNC, selecting(selector, message, arg))

    def send_oneway(self, message, selector=None, arg=None):
        """Send one message without an answer (tried once); fires with ``None`` once written."""
        return self._send(self.core.prepare, message, ONEWAY, selecting(selector, message, arg))

    def send_batch(self, messages):
        """Send messages of one topic as one SEND_BATCH_MESSAGE; a Deferred of the result."""
        return self._send(self.core.prepare_batch, messages, SYNC)

    def close(self):
        """Stop the route refresh and close every connection; a Deferred fired once they are closed."""
        if self._poll.running:
            self._poll.stop()
        return self.client.close()
