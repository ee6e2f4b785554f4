"""The producer and the lite pull consumer over Twisted: every call returns a Deferred
(from ``async def`` code, wrap it with ``await`` and run the coroutine with
``Deferred.fromCoroutine``). Only bytes and time move here; the rules are the cores' (:mod:`rmqproto.client.producer`,
:mod:`rmqproto.client.consumer`)."""

from twisted.internet import defer, task
from twisted.logger import Logger

from rmqproto.acl.signature import signed_fields
from rmqproto.client import transaction
from rmqproto.client.admin import AdminConfig, AdminCore
from rmqproto.client.config import ConsumerConfig, ProducerConfig
from rmqproto.client.offsetfile import local_offsets_path, read_local_offsets, write_local_offsets
from rmqproto.client.consumer import IDLE_PULL_WAIT_MS, LitePullCore, this_client_id
from rmqproto.client.errors import ClientError
from rmqproto.client.message import UniqueIds
from rmqproto.client.lookup import Reply
from rmqproto.client.producer import ASYNC, ONEWAY, SYNC, ProducerCore, selecting
from rmqproto.client.push import CONSUME_LATER_MS, MAINTAIN_TICK_MS, SERVED, PushCore, PushSetup
from rmqproto.codec.codes import RequestCode
from rmqproto.remoting import RemotingClient
from rmqproto.remoting.dispatch import RequestDispatcher
from rmqproto.remoting.errors import RemotingError

__all__ = ["Admin", "Producer", "TransactionProducer", "LitePullConsumer", "PushConsumer"]

log = Logger()


class _Transport:
    """The connections of one client on ``reactor``, the running of its core's generators
    and the requests brokers send it (answered by the processors put in :attr:`dispatcher`)."""

    def __init__(self, reactor, core):
        self.reactor = reactor
        self.core = core
        self.dispatcher = RequestDispatcher()
        self.client = RemotingClient(reactor, self.dispatcher)

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

    def _run(self, steps):
        """Run the core generator ``steps``; a Deferred of its return value."""
        try:
            call = steps.send(None)
        except StopIteration as done:
            return defer.succeed(done.value)
        except Exception:
            return defer.fail()
        return self._perform(call).addCallback(self._step, steps)

    def _step(self, reply, steps):
        """The rest of ``steps`` after ``reply``: its return value, or a Deferred of it
        (one Deferred a call, none at the end)."""
        try:
            call = steps.send(reply)
        except StopIteration as done:
            return done.value
        return self._perform(call).addCallback(self._step, steps)


def _looping(reactor, function, interval_ms, now=False):
    loop = task.LoopingCall(function)
    loop.clock = reactor
    loop.start(interval_ms / 1000, now=now)
    return loop


class Producer(_Transport):
    """A producer (``DefaultMQProducer``) on ``reactor``; settings are Java's property names.

    :meth:`send` keeps the sync send's rules (retries on another broker, also after the
    broker codes Java retries), :meth:`send_async` the async send's (retries after
    transport errors only, ``retryTimesWhenSendAsyncFailed``). Every
    ``pollNameServerInterval`` the routes held are fetched again, as Java's timer does;
    the masters get a heartbeat with the producer group every ``heartbeatBrokerInterval``
    and as soon as a route names a new one; :meth:`close` unregisters the group.
    """

    def __init__(self, reactor, config=None, **settings):
        self.config = config or ProducerConfig(**settings)
        super().__init__(reactor, ProducerCore(self.config, ids=UniqueIds.for_this_host(),
                                               client_id=this_client_id(self.config)))
        self._heartbeating = None
        self._loops = [_looping(reactor, self._refresh_routes, self.config.pollNameServerInterval),
                       _looping(reactor, self._heartbeat, self.config.heartbeatBrokerInterval)]

    def _refresh_routes(self):
        return self._run(self.core.refresh_routes(self._now())).addErrback(
            lambda failure: log.failure("route refresh failed", failure))

    def _heartbeat(self):
        if self._heartbeating is None:
            self._heartbeating = self._run(self.core.heartbeat(self._now()))
            self._heartbeating.addErrback(lambda failure: log.failure("heartbeat failed", failure))
            self._heartbeating.addBoth(lambda _: setattr(self, "_heartbeating", None))
        return self._heartbeating

    def _send(self, prepare, what, mode, choose=None):
        now = self._now()
        try:
            outgoing = prepare(what, now)
        except Exception:
            return defer.fail()

        def sent(result):
            if self.core.heartbeat_due(self._now()):
                self._heartbeat()
            return result

        return self._run(self.core.send(outgoing, mode, now, choose)).addBoth(sent)

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
        """Stop the timers, unregister the producer group from the brokers and close every
        connection; a Deferred fired once they are closed."""
        for loop in self._loops:
            if loop.running:
                loop.stop()
        done = self._run(self.core.shutdown(self._now()))
        done.addErrback(lambda failure: log.failure("unregister failed", failure))
        return done.addCallback(lambda _: self.client.close())


class TransactionProducer(Producer):
    """A transactional producer (``TransactionMQProducer``) on ``reactor``. ``listener``
    has ``execute_local_transaction(message, arg)`` and ``check_local_transaction(message)``
    (a :class:`~rmqproto.client.ReceivedMessage`), each returning a
    :class:`~rmqproto.client.transaction.LocalTransactionState` (or its name), or a
    Deferred of one; they run in the reactor thread. An exception means UNKNOW."""

    def __init__(self, reactor, listener, config=None, **settings):
        super().__init__(reactor, config, **settings)
        self.listener = listener
        self.dispatcher.register(int(RequestCode.CHECK_TRANSACTION_STATE), self._check)

    def send_message_in_transaction(self, message, arg=None):
        """Send ``message`` as a half message, run the local transaction, commit or roll
        back (END_TRANSACTION, oneway); a Deferred of the
        :class:`~rmqproto.client.transaction.TransactionSendResult`."""
        return defer.Deferred.fromCoroutine(self._in_transaction(message, arg))

    async def _in_transaction(self, message, arg):
        result = await self._send(self.core.prepare_half, message, SYNC)
        state, error = transaction.state_without_listener(result), None
        if state is None:
            state, error = await _decided(self.listener.execute_local_transaction, message, arg)
        route, now = await self._run(self.core.route(message.topic, self._now()))
        call = transaction.end_transaction(route, self.config.producerGroup, result, state, error)
        if call is not None:
            await self._perform(call)
        return transaction.TransactionSendResult.of(result, state)

    def _check(self, request, context):
        message = transaction.checked_message(request, self.config.producerGroup)
        if message is not None:
            decided = defer.Deferred.fromCoroutine(_decided(
                self.listener.check_local_transaction, message))
            decided.addCallback(lambda found: self._perform(transaction.check_answer(
                request, context.peer, self.config.producerGroup, message, *found)))
            decided.addErrback(lambda failure: log.failure("check-back failed", failure))


async def _decided(function, *args):
    """``(LocalTransactionState, error)`` of the user's ``function(*args)``: UNKNOW with the
    error when it raises."""
    try:
        return transaction.as_state(await defer.maybeDeferred(function, *args)), None
    except Exception as exc:
        return transaction.LocalTransactionState.UNKNOW, exc


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


class PushConsumer(PushSetup, _Transport):
    """A push consumer (``DefaultMQPushConsumer``) on ``reactor``: :meth:`subscribe`,
    :meth:`register_message_listener`, then :meth:`start`. The listener is called in the
    reactor thread with a list of :class:`~rmqproto.client.ReceivedMessage` and returns a
    :class:`~rmqproto.client.push.ConsumeStatus` (or its name), or a Deferred of one; an
    exception is a failure. Settings are Java's property names (``PushConsumerConfig``)."""

    def __init__(self, reactor, config=None, **settings):
        self._set_up(config, settings)
        self._loops, self._pulling, self._maintaining = [], set(), None
        super().__init__(reactor, None)
        for code in SERVED:
            self.dispatcher.register(int(code), self._serve)

    def start(self):
        """Join the group and start consuming; a Deferred fired after the first rebalance."""
        if self.listener is None:
            return defer.fail(ClientError("messageListener is null"))
        self.core = PushCore(self.config, self._client_id, orderly=self.orderly)
        for topic, expression, expression_type in self._subscriptions:
            self.core.subscribe(topic, expression, self._now(), expression_type)
        if self.core.broadcasting:
            self.offsets_path = local_offsets_path(self.config, self._client_id)
            self.core.offsets.update(read_local_offsets(self.offsets_path))
        self._loops.append(_looping(self.reactor, self._maintain, MAINTAIN_TICK_MS))
        return self._maintain()

    def _serve(self, request, context):
        return self.core.serve(request, self._now())

    def _maintain(self):
        if self._maintaining is None and self.core.next_due() <= self._now():
            self._maintaining = self._run(self.core.maintain(self._now()))
            self._maintaining.addCallback(lambda _: self._after_maintain())
            self._maintaining.addErrback(lambda failure: log.failure("upkeep failed", failure))
            self._maintaining.addBoth(lambda _: setattr(self, "_maintaining", None))
        return self._maintaining

    def _after_maintain(self):
        if self.core.broadcasting:
            write_local_offsets(self.offsets_path, self.core.local_offsets())
        for queue in self.core.assigned:
            if queue not in self._pulling:
                self._pulling.add(queue)
                defer.Deferred.fromCoroutine(self._pull_loop(queue)).addErrback(
                    lambda failure: log.failure("pulling failed", failure))

    async def _pull_loop(self, queue):
        try:
            while True:
                messages, wait = await self._run(self.core.pull_once(queue, self._now()))
                if wait is None:
                    return
                if messages:
                    if self.orderly:
                        self._consume_orderly(queue)
                    else:
                        for batch in self.core.batches(messages):
                            self._consume(queue, batch)
                if wait:
                    await task.deferLater(self.reactor, wait / 1000)
        finally:
            self._pulling.discard(queue)

    async def _call_listener(self, messages):
        try:
            return await defer.maybeDeferred(self.listener, messages)
        except Exception:
            log.failure("the listener failed")
            return None

    def _consume(self, queue, batch):
        async def consume():
            status = await self._call_listener(batch)
            again, _ = await self._run(self.core.consumed(queue, batch, status, self._now()))
            if again:
                self.reactor.callLater(CONSUME_LATER_MS / 1000, self._consume, queue, again)
        defer.Deferred.fromCoroutine(consume()).addErrback(
            lambda failure: log.failure("consuming failed", failure))

    def _consume_orderly(self, queue):
        async def consume():
            while True:
                batch = self.core.take_orderly(queue, self._now())
                if batch is None:
                    return
                status = await self._call_listener(batch)
                suspend, _ = await self._run(self.core.orderly_done(queue, batch, status, self._now()))
                if suspend:
                    await task.deferLater(self.reactor, suspend / 1000)
        defer.Deferred.fromCoroutine(consume()).addErrback(
            lambda failure: log.failure("consuming failed", failure))

    def shutdown(self):
        """Commit the consumed offsets, unlock (orderly), leave the group, close every
        connection; a Deferred."""
        for loop in self._loops:
            if loop.running:
                loop.stop()
        done = self._run(self.core.shutdown(self._now()))
        done.addErrback(lambda failure: log.failure("shutdown failed", failure))
        if self.core.broadcasting:
            done.addCallback(lambda _: write_local_offsets(self.offsets_path, self.core.local_offsets()))
        return done.addCallback(lambda _: self.client.close())
