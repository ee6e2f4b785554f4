"""The producer and the lite pull consumer over Twisted: every call returns a Deferred
(from ``async def`` code, wrap it with ``await`` and run the coroutine with
``Deferred.fromCoroutine``). Only bytes and time move here; the rules are the cores' (:mod:`rmqproto.client.producer`,
:mod:`rmqproto.client.consumer`)."""

from twisted.internet import defer, task
from twisted.logger import Logger

from rmqproto.acl.signature import signed_fields
from rmqproto.client.admin import AdminConfig, AdminCore
from rmqproto.client.config import ConsumerConfig, ProducerConfig
from rmqproto.client.consumer import IDLE_PULL_WAIT_MS, LitePullCore, this_client_id
from rmqproto.client.errors import ClientError
from rmqproto.client.message import UniqueIds
from rmqproto.client.lookup import Reply
from rmqproto.client.producer import ASYNC, ONEWAY, SYNC, ProducerCore, selecting
from rmqproto.remoting import RemotingClient
from rmqproto.remoting.errors import RemotingError

__all__ = ["Admin", "Producer", "LitePullConsumer"]

log = Logger()


class _Transport:
    """The connections of one client on ``reactor`` and the running of its core's generators."""

    def __init__(self, reactor, core):
        self.reactor = reactor
        self.core = core
        self.client = RemotingClient(reactor)

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

    def _run(self, steps, reply=None):
        """Advance ``steps`` by one call; a Deferred of the call's return value."""
        try:
            call = steps.send(reply)
        except StopIteration as done:
            return defer.succeed(done.value)
        except Exception:
            return defer.fail()
        return self._perform(call).addCallback(lambda answer: self._run(steps, answer))


class Producer(_Transport):
    """A producer (``DefaultMQProducer``) on ``reactor``; settings are Java's property names.

    :meth:`send` keeps the sync send's rules (retries on another broker, also after the
    broker codes Java retries), :meth:`send_async` the async send's (retries after
    transport errors only, ``retryTimesWhenSendAsyncFailed``). Every
    ``pollNameServerInterval`` the routes held are fetched again, as Java's timer does.
    """

    def __init__(self, reactor, config=None, **settings):
        self.config = config or ProducerConfig(**settings)
        super().__init__(reactor, ProducerCore(self.config, ids=UniqueIds.for_this_host()))
        self._poll = task.LoopingCall(self._refresh_routes)
        self._poll.clock = reactor
        self._poll.start(self.config.pollNameServerInterval / 1000, now=False)

    def _refresh_routes(self):
        return self._run(self.core.refresh_routes(self._now())).addErrback(
            lambda failure: log.failure("route refresh failed", failure))

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


class LitePullConsumer(_Transport):
    """A lite pull consumer (``DefaultLitePullConsumer``) on ``reactor``: its calls return
    Deferreds and run one at a time, in the order made. Settings are Java's property names;
    see :class:`rmqproto.client.blocking.LitePullConsumer` for what each call does."""

    def __init__(self, reactor, config=None, **settings):
        self.config = config or ConsumerConfig(**settings)
        super().__init__(reactor, LitePullCore(self.config, this_client_id(self.config)))
        self._lock = defer.DeferredLock()

    def _call(self, operation, *args):
        return self._lock.run(lambda: self._run(operation(*args, self._now())))

    def assign(self, queues):
        self.core.assign(queues)

    def subscribe(self, topic, expression="*"):
        self.core.subscribe(topic, expression, self._now())

    def fetch_message_queues(self, topic):
        return self._call(self.core.route, topic).addCallback(lambda found: list(found[0].read_queues))

    def assignment(self):
        return list(self.core.assigned)

    def poll(self, timeout=None):
        """A Deferred of the next messages, waiting up to ``timeout`` seconds
        (``pollTimeoutMillis`` if ``None``); ``[]`` if none came."""
        timeout_ms = self.config.pollTimeoutMillis if timeout is None else timeout * 1000
        return defer.Deferred.fromCoroutine(self._poll(self._now() + timeout_ms))

    async def _poll(self, deadline):
        while True:
            messages, now = await self._call(self.core.poll)
            if messages or now >= deadline:
                return messages
            await task.deferLater(self.reactor, min(IDLE_PULL_WAIT_MS, deadline - now) / 1000)

    def seek(self, queue, offset):
        return self._call(self.core.seek, queue, offset)

    def seek_to_begin(self, queue):
        return self._call(self.core.seek_to, queue, False)

    def seek_to_end(self, queue):
        return self._call(self.core.seek_to, queue, True)

    def offset_for_timestamp(self, queue, timestamp):
        return self._call(self.core.offset_for_timestamp, queue, timestamp).addCallback(
            lambda found: found[0])

    def committed(self, queue):
        return self._call(self.core.committed_offset, queue).addCallback(lambda found: found[0])

    def commit_sync(self):
        return self._call(self.core.commit)

    def close(self):
        """Commit (with ``autoCommit``), leave the group, close every connection; a Deferred."""
        done = self._call(self.core.shutdown)
        done.addErrback(lambda failure: failure.trap(ClientError))
        return done.addCallback(lambda _: self.client.close())


class Admin(_Transport):
    """The admin core (:mod:`rmqproto.client.admin`) on ``reactor``:
    ``admin.run(admin.core.cluster_info())`` is a Deferred of the operation's answer. With
    ``credentials`` (access key, secret key) every request is signed as Java's
    ``AclClientRPCHook`` signs it."""

    def __init__(self, reactor, config=None, credentials=None, **settings):
        super().__init__(reactor, AdminCore(config or AdminConfig(**settings)))
        self.credentials = credentials

    def _perform(self, call):
        if self.credentials is not None:
            request = call.request
            request.ext_fields = signed_fields(request.ext_fields, request.body, *self.credentials)
        return super()._perform(call)

    def run(self, steps):
        """A Deferred of the return value of the core generator ``steps``."""
        return self._run(steps)

    def close(self):
        """Close every connection; a Deferred fired once they are closed."""
        return self.client.close()
