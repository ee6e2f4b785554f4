"""The producer and the lite pull consumer over plain blocking sockets, for scripts and
Spark executors: no reactor, no threads. Only bytes and time move here; the rules are the
cores' (:mod:`rmqproto.client.producer`, :mod:`rmqproto.client.consumer`)."""

import logging
import select
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from rmqproto.client import transaction
from rmqproto.client.config import ConsumerConfig, ProducerConfig
from rmqproto.client.offsetfile import local_offsets_path, read_local_offsets, write_local_offsets
from rmqproto.client.consumer import IDLE_PULL_WAIT_MS, LitePullCore, this_client_id
from rmqproto.client.errors import ClientError
from rmqproto.client.message import UniqueIds
from rmqproto.client.lookup import Reply, run
from rmqproto.client.producer import ONEWAY, SYNC, ProducerCore, selecting
from rmqproto.client.push import CONSUME_LATER_MS, MAINTAIN_TICK_MS, PushCore, PushSetup
from rmqproto.codec.codes import CURRENT_VERSION, RequestCode
from rmqproto.codec.frame import FLAG_RESPONSE, FrameDecoder, decode_frame, encode_frame
from rmqproto.errors import CodecError
from rmqproto.remoting.address import parse_address
from rmqproto.remoting.errors import RemotingConnectionError, RemotingTimeoutError

__all__ = ["Producer", "TransactionProducer", "LitePullConsumer", "PushConsumer", "Connection",
           "now_ms"]


def now_ms():
    """Wall-clock milliseconds (the born timestamp, as Java's ``System.currentTimeMillis``)."""
    return int(time.time() * 1000)


#: The most one read of a connection takes (a pull's answer is up to 256 KiB).
RECEIVE_SIZE = 256 * 1024


class Connection:
    """One TCP connection to a server: a request out, its response back (matched by
    opaque; late responses are dropped). Requests the server sends are kept in
    :attr:`requests` for the owner to serve (:meth:`answer`)."""

    def __init__(self, address, timeout):
        host, port = parse_address(address)
        self.address = address
        self.decoder = FrameDecoder()
        self.frames = []
        self.requests = []
        self.opaque = 0
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise RemotingConnectionError("connect to %s failed: %s" % (address, exc)) from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def call(self, request, timeout):
        """Send ``request``; its response (``None`` for a oneway request). Raises
        :class:`RemotingTimeoutError` after ``timeout`` seconds, :class:`RemotingConnectionError`
        when the connection fails (the connection is then closed)."""
        return self.call_many([request], timeout)[0]

    def call_many(self, requests, timeout):
        """Send ``requests`` in one write, all in flight at once; their responses, in
        order (``None`` for oneway ones), as :meth:`call`, within ``timeout`` seconds."""
        waiting = {}
        for index, request in enumerate(requests):
            self.opaque += 1
            request.opaque, request.version = self.opaque, CURRENT_VERSION
            if not request.is_oneway:
                waiting[request.opaque] = index
        responses = [None] * len(requests)
        deadline = time.monotonic() + timeout
        try:
            self.sock.settimeout(timeout)
            self.sock.sendall(b"".join(encode_frame(request) for request in requests))
            while waiting:
                for frame in self.frames:
                    response = decode_frame(frame)
                    if not response.is_response:
                        self.requests.append(response)
                    elif response.opaque in waiting:
                        responses[waiting.pop(response.opaque)] = response
                self.frames.clear()
                if not waiting:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise socket.timeout()
                self.sock.settimeout(left)
                data = self.sock.recv(RECEIVE_SIZE)
                if not data:
                    raise ConnectionError("closed by the peer")
                self.frames.extend(self.decoder.feed(data))
        except socket.timeout:
            raise RemotingTimeoutError("wait response on %s timeout %d ms" % (
                self.address, timeout * 1000)) from None
        except (OSError, CodecError) as exc:
            self.close()
            raise RemotingConnectionError("connection to %s failed: %s" % (
                self.address, exc)) from None
        return responses

    def receive(self):
        """Read what the server sent (the socket is readable): requests go to :attr:`requests`."""
        try:
            self.sock.settimeout(1)
            data = self.sock.recv(RECEIVE_SIZE)
            if not data:
                raise ConnectionError("closed by the peer")
            for frame in self.decoder.feed(data):
                command = decode_frame(frame)
                if not command.is_response:
                    self.requests.append(command)
        except (OSError, CodecError) as exc:
            self.close()
            raise RemotingConnectionError("connection to %s failed: %s" % (
                self.address, exc)) from None

    def answer(self, request, response):
        """Write ``response`` to the server's ``request``."""
        response.opaque, response.flag = request.opaque, response.flag | FLAG_RESPONSE
        try:
            self.sock.sendall(encode_frame(response))
        except OSError:
            self.close()

    def close(self):
        self.sock.close()


def run_locked(steps, perform, lock):
    """:func:`~rmqproto.client.lookup.run` with each step of ``steps`` taken under ``lock``
    (the core is shared between threads) and the calls made without it."""
    reply = None
    while True:
        with lock:
            try:
                call = steps.send(reply)
            except StopIteration as done:
                return done.value
        reply = perform(call)


class _Connections(dict):
    """Connections by address, opened on first use; :meth:`perform` runs a core's call."""

    def perform(self, call):
        connection = self.get(call.address)
        try:
            if connection is None:
                connection = self[call.address] = Connection(call.address, call.timeout_ms / 1000)
            response = connection.call(call.request, call.timeout_ms / 1000)
        except (RemotingConnectionError, RemotingTimeoutError) as exc:
            if isinstance(exc, RemotingConnectionError):
                self._drop(call.address)
            return Reply(None, exc, now_ms())
        return Reply(response, None, now_ms())

    def perform_many(self, calls):
        """The :class:`Reply` of each of ``calls`` (to one address, none oneway), all in flight
        at once on its connection."""
        address = calls[0].address
        connection = self.get(address)
        try:
            if connection is None:
                connection = self[address] = Connection(address, calls[0].timeout_ms / 1000)
            responses = connection.call_many([call.request for call in calls],
                                             max(call.timeout_ms for call in calls) / 1000)
        except (RemotingConnectionError, RemotingTimeoutError) as exc:
            if isinstance(exc, RemotingConnectionError):
                self._drop(address)
            return [Reply(None, exc, now_ms())] * len(calls)
        now = now_ms()
        return [Reply(response, None, now) for response in responses]

    def _drop(self, address):
        connection = self.pop(address, None)
        if connection is not None:
            connection.close()

    def prune(self, live):
        """Close the connections to addresses not in ``live`` (``cleanOfflineBroker``)."""
        for address in set(self) - live:
            self._drop(address)

    def close(self):
        """Close every connection."""
        for address in list(self):
            self._drop(address)


class _Service:
    """A thread of a client with connections of its own: it runs ``tick(perform)`` (which
    returns the seconds until it is due again) and answers the requests brokers send on
    those connections with ``serve(request, address, perform)`` (a response, or ``None``)."""

    def __init__(self, name, tick, serve):
        self.tick, self.serve = tick, serve
        self.connections = _Connections()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stopped.is_set():
            try:
                wait = min(max(self.tick(self.connections.perform), 0), 0.5)
            except Exception:  # a bug must not stop the heartbeats: logged, tried again
                logging.getLogger(__name__).exception("client upkeep failed")
                wait = 0.5
            self._serve_requests()
            readable = [c.sock for c in self.connections.values()]
            if not readable:
                self.stopped.wait(wait)
                continue
            readable, _, _ = select.select(readable, [], [], wait)
            for address, connection in list(self.connections.items()):
                if connection.sock in readable:
                    try:
                        connection.receive()
                    except RemotingConnectionError:
                        self.connections._drop(address)
            self._serve_requests()

    def _serve_requests(self):
        for address, connection in list(self.connections.items()):
            while connection.requests:
                request = connection.requests.pop(0)
                response = self.serve(request, address, self.connections.perform)
                if response is not None and not request.is_oneway:
                    connection.answer(request, response)

    def stop(self, last=None):
        """Stop the thread, run ``last(perform)`` on its connections (an unregister must
        go on the connection the heartbeats went on), close them."""
        self.stopped.set()
        self.thread.join()
        try:
            if last is not None:
                last(self.connections.perform)
        finally:
            self.connections.close()


class _Transport:
    """The connections of one client and the running of its core's generators."""

    def __init__(self, core):
        self.core = core
        self.connections = _Connections()
        self.lock = threading.Lock()

    def _perform(self, call):
        return self.connections.perform(call)

    def _prune(self):
        self.connections.prune(self.core.live_addresses())

    def close(self):
        """Close every connection."""
        self.connections.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


class Producer(_Transport):
    """A producer (``DefaultMQProducer``) whose calls block until they are done.

    Settings are Java's property names: ``Producer(namesrvAddr="127.0.0.1:9876",
    producerGroup="my_group")`` or ``Producer(config=ProducerConfig(...))``. Having no
    thread, it sends its heartbeats when one is due after a send; :meth:`close`
    unregisters the producer group.
    """

    def __init__(self, config=None, **settings):
        self.config = config or ProducerConfig(**settings)
        super().__init__(ProducerCore(self.config, ids=UniqueIds.for_this_host(),
                                      client_id=this_client_id(self.config)))

    def _run(self, steps, perform=None):
        return run_locked(steps, perform or self._perform, self.lock)

    def _send(self, prepare, what, mode, choose=None):
        now = now_ms()
        fetches = self.core.route_fetches
        try:
            result = self._run(self.core.send(prepare(what, now), mode, now, choose))
        finally:
            if self.core.route_fetches != fetches:
                self._prune()
        self._maintain()
        return result

    def _maintain(self):
        if self.core.heartbeat_due(now_ms()):
            self._run(self.core.heartbeat(now_ms()))

    def send(self, message, selector=None, arg=None):
        """Send one :class:`~rmqproto.client.Message`; its :class:`~rmqproto.client.SendResult`.
        With ``selector(queues, message, arg)`` (Java's ``MessageQueueSelector``) the send
        goes to the queue it returns, tried once: an ordered send."""
        return self._send(self.core.prepare, message, SYNC, selecting(selector, message, arg))

    def send_oneway(self, message, selector=None, arg=None):
        """Send one message without waiting for an answer (tried once)."""
        self._send(self.core.prepare, message, ONEWAY, selecting(selector, message, arg))

    def send_batch(self, messages):
        """Send messages of one topic as one SEND_BATCH_MESSAGE; one :class:`SendResult`."""
        return self._send(self.core.prepare_batch, messages, SYNC)

    def _shutdown(self, perform):
        self._run(self.core.shutdown(now_ms()), perform)

    def close(self):
        """Unregister the producer group and close every connection."""
        try:
            self._shutdown(self._perform)
        finally:
            super().close()


def _decided(function, *args):
    """``(LocalTransactionState, error)`` of the user's ``function(*args)``: UNKNOW with the
    error when it raises."""
    try:
        return transaction.as_state(function(*args)), None
    except Exception as exc:
        return transaction.LocalTransactionState.UNKNOW, exc


class TransactionProducer(Producer):
    """A transactional producer (``TransactionMQProducer``) whose calls block. ``listener``
    has ``execute_local_transaction(message, arg)`` and ``check_local_transaction(message)``
    (a :class:`~rmqproto.client.ReceivedMessage`), each returning a
    :class:`~rmqproto.client.transaction.LocalTransactionState` (or its name); an exception
    means UNKNOW. A thread of its own sends the heartbeats and answers the brokers'
    check-backs (calling ``check_local_transaction`` there)."""

    def __init__(self, listener, config=None, **settings):
        super().__init__(config, **settings)
        self.listener = listener
        self.service = _Service("rmq-transaction-checks", self._tick, self._serve)

    def _maintain(self):
        pass  # the service thread's connections take the heartbeats, so that checks come there

    def _tick(self, perform):
        now = now_ms()
        if self.core.heartbeat_due(now):
            now = self._run(self.core.heartbeat(now), perform)
        return (self.core.next_heartbeat - now) / 1000

    def _serve(self, request, address, perform):
        if request.code == RequestCode.CHECK_TRANSACTION_STATE:
            message = transaction.checked_message(request, self.config.producerGroup)
            if message is not None:
                found = _decided(self.listener.check_local_transaction, message)
                perform(transaction.check_answer(request, address, self.config.producerGroup,
                                                 message, *found))
        return None

    def send_message_in_transaction(self, message, arg=None):
        """Send ``message`` as a half message, run the local transaction, commit or roll
        back (END_TRANSACTION, oneway); the
        :class:`~rmqproto.client.transaction.TransactionSendResult`."""
        result = self._send(self.core.prepare_half, message, SYNC)
        state, error = transaction.state_without_listener(result), None
        if state is None:
            state, error = _decided(self.listener.execute_local_transaction, message, arg)
        route, _ = self._run(self.core.route(message.topic, now_ms()))
        call = transaction.end_transaction(route, self.config.producerGroup, result, state, error)
        if call is not None:
            self._perform(call)
        return transaction.TransactionSendResult.of(result, state)

    def close(self):
        """Stop the thread, unregister the producer group, close every connection."""
        try:
            self.service.stop(self._shutdown)
        finally:
            _Transport.close(self)


class LitePullConsumer(_Transport):
    """A lite pull consumer (``DefaultLitePullConsumer``) whose calls block until done.

    ``assign(queues)`` or ``subscribe(topic, "TagA || TagB")``, then ``poll()`` (or iterate:
    each step is one non-empty batch); positions are committed every
    ``autoCommitIntervalMillis`` from within ``poll``, by :meth:`commit_sync`, and on
    :meth:`close` (with ``autoCommit``). Settings are Java's property names.
    """

    def __init__(self, config=None, **settings):
        self.config = config or ConsumerConfig(**settings)
        super().__init__(LitePullCore(self.config, this_client_id(self.config)))

    def _run(self, operation, *args):
        try:
            return run(operation(*args, now_ms()), self._perform)
        finally:
            self._prune()

    def assign(self, queues):
        """Pull exactly ``queues`` (:class:`~rmqproto.client.MessageQueue`), no rebalancing."""
        self.core.assign(queues)

    def subscribe(self, topic, expression="*"):
        """Take part in the group's share of ``topic``'s queues; ``expression`` is tags
        (``"TagA || TagB"``) or ``"*"``."""
        self.core.subscribe(topic, expression, now_ms())

    def fetch_message_queues(self, topic):
        """``fetchMessageQueues``: ``topic``'s readable queues."""
        route, _ = self._run(self.core.route, topic)
        return list(route.read_queues)

    def assignment(self):
        """The queues pulled now."""
        return list(self.core.assigned)

    def poll(self, timeout=None):
        """The next messages (a list of :class:`~rmqproto.client.ReceivedMessage`), waiting
        up to ``timeout`` seconds (``pollTimeoutMillis`` if ``None``); ``[]`` if none came."""
        timeout_ms = self.config.pollTimeoutMillis if timeout is None else timeout * 1000
        deadline = now_ms() + timeout_ms
        while True:
            messages, now = self._run(self.core.poll)
            if messages or now >= deadline:
                return messages
            time.sleep(min(IDLE_PULL_WAIT_MS, deadline - now) / 1000)

    def __iter__(self):
        while True:
            messages = self.poll()
            if messages:
                yield messages

    def seek(self, queue, offset):
        """Pull ``queue`` from ``offset`` next (within the queue's min and max offsets)."""
        self._run(self.core.seek, queue, offset)

    def seek_to_begin(self, queue):
        self._run(self.core.seek_to, queue, False)

    def seek_to_end(self, queue):
        self._run(self.core.seek_to, queue, True)

    def offset_for_timestamp(self, queue, timestamp, master_only=True):
        """``searchOffset``: the offset of ``queue``'s first message stored at or after
        ``timestamp`` (ms; SEARCH_OFFSET_BY_TIMESTAMP), as :meth:`min_offset`."""
        return self._queue_offset(self.core.offset_for_timestamp, queue, master_only, timestamp)

    def min_offset(self, queue, master_only=True):
        """``minOffset``: ``queue``'s first kept offset, asked of its master (else, unless
        ``master_only``, of another broker of its name when the master does not answer)."""
        return self._queue_offset(self.core.min_offset, queue, master_only)

    def max_offset(self, queue, master_only=True):
        """``maxOffset``: the offset after ``queue``'s last message, as :meth:`min_offset`."""
        return self._queue_offset(self.core.max_offset, queue, master_only)

    def _queue_offset(self, ask, queue, master_only, *args):
        try:
            return self._run(ask, queue, *args)[0]
        except ClientError:
            if master_only:
                raise
        return self._run(lambda *a: ask(*a, master_only=False), queue, *args)[0]

    def pull_many(self, queue, pulls):
        """PULL_MESSAGEs of ``queue``, one for each ``(offset, max_nums)`` of ``pulls``, all in
        flight at once on one connection (the queue's position is neither read nor moved):
        for each, ``(code, PullMessageResponseHeader, body)`` (the body's stored records
        undecoded) or the :class:`ClientError` it met, in order."""
        calls = [self._run(self.core.pull_call, queue, offset, max_nums)[0]
                 for offset, max_nums in pulls]
        replies = self.connections.perform_many(calls)
        answers = []
        for call, reply in zip(calls, replies):
            try:
                answers.append(self.core.pull_answer(queue, call, reply))
            except ClientError as exc:
                answers.append(exc)
        self._prune()
        return answers

    def committed(self, queue):
        """The offset the broker holds for this group on ``queue`` (-1: none)."""
        return self._run(self.core.committed_offset, queue)[0]

    def commit_sync(self):
        """Store every queue's position on its broker now; :class:`ClientError` if one failed."""
        self._run(self.core.commit)

    def close(self):
        """Commit (with ``autoCommit``), leave the group and close every connection."""
        try:
            self._run(self.core.shutdown)
        except ClientError:
            pass
        super().close()


#: How long :meth:`PushConsumer.start` waits for the first heartbeat and rebalance (s).
START_TIMEOUT = 30


class PushConsumer(PushSetup):
    """A push consumer (``DefaultMQPushConsumer``) for code without a reactor:
    :meth:`subscribe`, :meth:`register_message_listener`, :meth:`start`, and
    :meth:`shutdown` (or a ``with`` block). The listener is called on a pool of
    ``consumeThreadMax`` threads with a list of :class:`~rmqproto.client.ReceivedMessage`
    and returns a :class:`~rmqproto.client.push.ConsumeStatus` (or its name); an exception
    is a failure. Each queue is pulled (long polling) by a thread of its own, and one more
    thread does the upkeep and answers the brokers' requests."""

    def __init__(self, config=None, **settings):
        self._set_up(config, settings)
        self.core, self.service = None, None
        self._pullers, self._local = {}, threading.local()
        self._all_connections, self.lock, self.stopped = [], threading.Lock(), threading.Event()

    def start(self):
        """Join the group and start consuming (returns after the first rebalance)."""
        if self.listener is None:
            raise ClientError("messageListener is null")
        self.core = PushCore(self.config, self._client_id, orderly=self.orderly)
        for topic, expression, expression_type in self._subscriptions:
            self.core.subscribe(topic, expression, now_ms(), expression_type)
        if self.core.broadcasting:
            self.offsets_path = local_offsets_path(self.config, self._client_id)
            self.core.offsets.update(read_local_offsets(self.offsets_path))
        self.pool = ThreadPoolExecutor(self.config.consumeThreadMax, "rmq-consume")
        self._started = threading.Event()
        # the upkeep thread's connections take the heartbeats: the brokers' requests come there
        self.service = _Service("rmq-push-upkeep", self._tick, self._serve)
        if not self._started.wait(START_TIMEOUT):
            self.shutdown()
            raise ClientError("the push consumer could not join its group in %d s" % START_TIMEOUT)

    def _connections(self):
        """This thread's connections (a long poll holds its connection)."""
        connections = getattr(self._local, "connections", None)
        if connections is None:
            connections = self._local.connections = _Connections()
            self._all_connections.append(connections)
        return connections

    def _run(self, steps, perform=None):
        return run_locked(steps, perform or self._connections().perform, self.lock)

    def _tick(self, perform):
        if self.core.next_due() <= now_ms():
            self._run(self.core.maintain(now_ms()), perform)
            if self.core.broadcasting:
                write_local_offsets(self.offsets_path, self.core.local_offsets())
            for queue in self.core.assigned:
                puller = self._pullers.get(queue)
                if puller is None or not puller.is_alive():
                    self._pullers[queue] = threading.Thread(
                        target=self._pull_loop, args=(queue,), daemon=True, name="rmq-pull")
                    self._pullers[queue].start()
            self._started.set()
        return MAINTAIN_TICK_MS / 1000

    def _serve(self, request, address, perform):
        with self.lock:
            return self.core.serve(request, now_ms())

    def _pull_loop(self, queue):
        while not self.stopped.is_set():
            messages, wait = self._run(self.core.pull_once(queue, now_ms()))
            if wait is None:
                return
            if messages:
                if self.orderly:
                    self.pool.submit(self._consume_orderly, queue)
                else:
                    for batch in self.core.batches(messages):
                        self.pool.submit(self._consume, queue, batch)
            if wait:
                self.stopped.wait(wait / 1000)

    def _call_listener(self, messages):
        try:
            return self.listener(messages)
        except Exception:
            return None

    def _consume(self, queue, batch):
        status = self._call_listener(batch)
        again, _ = self._run(self.core.consumed(queue, batch, status, now_ms()))
        if again and not self.stopped.wait(CONSUME_LATER_MS / 1000):
            self._consume(queue, again)

    def _consume_orderly(self, queue):
        while not self.stopped.is_set():
            with self.lock:
                batch = self.core.take_orderly(queue, now_ms())
            if batch is None:
                return
            status = self._call_listener(batch)
            suspend, _ = self._run(self.core.orderly_done(queue, batch, status, now_ms()))
            if suspend:
                self.stopped.wait(suspend / 1000)

    def shutdown(self):
        """Stop pulling and consuming, commit the consumed offsets, unlock (orderly),
        leave the group and close every connection."""
        if self.service is None:
            return  # never started
        self.stopped.set()
        self.pool.shutdown(wait=True)
        self.service.stop(lambda perform: self._run(self.core.shutdown(now_ms()), perform))
        if self.core.broadcasting:
            write_local_offsets(self.offsets_path, self.core.local_offsets())
        for connections in self._all_connections:
            connections.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.shutdown()
