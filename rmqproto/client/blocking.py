"""The producer and the lite pull consumer over plain blocking sockets, for scripts and
Spark executors: no reactor, no threads. Only bytes and time move here; the rules are the
cores' (:mod:`rmqproto.client.producer`, :mod:`rmqproto.client.consumer`)."""

import socket
import time

from rmqproto.client.config import ConsumerConfig, ProducerConfig
from rmqproto.client.consumer import IDLE_PULL_WAIT_MS, LitePullCore, this_client_id
from rmqproto.client.errors import ClientError
from rmqproto.client.message import UniqueIds
from rmqproto.client.lookup import Reply, run
from rmqproto.client.producer import ONEWAY, SYNC, ProducerCore, selecting
from rmqproto.codec.codes import CURRENT_VERSION
from rmqproto.codec.frame import FrameDecoder, decode_frame, encode_frame
from rmqproto.errors import CodecError
from rmqproto.remoting.address import parse_address
from rmqproto.remoting.errors import RemotingConnectionError, RemotingTimeoutError

__all__ = ["Producer", "LitePullConsumer", "Connection", "now_ms"]


def now_ms():
    """Wall-clock milliseconds (the born timestamp, as Java's ``System.currentTimeMillis``)."""
    return int(time.time() * 1000)


class Connection:
    """One TCP connection to a server: a request out, its response back (matched by
    opaque; requests the server sends and late responses are dropped)."""

    def __init__(self, address, timeout):
        host, port = parse_address(address)
        self.address = address
        self.decoder = FrameDecoder()
        self.frames = []
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
        self.opaque += 1
        request.opaque, request.version = self.opaque, CURRENT_VERSION
        deadline = time.monotonic() + timeout
        try:
            self.sock.settimeout(timeout)
            self.sock.sendall(encode_frame(request))
            while not request.is_oneway:
                while self.frames:
                    response = decode_frame(self.frames.pop(0))
                    if response.is_response and response.opaque == request.opaque:
                        return response
                left = deadline - time.monotonic()
                if left <= 0:
                    raise socket.timeout()
                self.sock.settimeout(left)
                data = self.sock.recv(65536)
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
        return None

    def close(self):
        self.sock.close()


class _Transport:
    """The connections of one client and the running of its core's generators."""

    def __init__(self, core):
        self.core = core
        self.connections = {}

    def _perform(self, call):
        connection = self.connections.get(call.address)
        try:
            if connection is None:
                connection = self.connections[call.address] = Connection(
                    call.address, call.timeout_ms / 1000)
            response = connection.call(call.request, call.timeout_ms / 1000)
        except (RemotingConnectionError, RemotingTimeoutError) as exc:
            if isinstance(exc, RemotingConnectionError):
                self._drop(call.address)
            return Reply(None, exc, now_ms())
        return Reply(response, None, now_ms())

    def _drop(self, address):
        connection = self.connections.pop(address, None)
        if connection is not None:
            connection.close()

    def _prune(self):
        """Close the connections to addresses no route names any more (``cleanOfflineBroker``)."""
        for address in set(self.connections) - self.core.live_addresses():
            self._drop(address)

    def close(self):
        """Close every connection."""
        for address in list(self.connections):
            self._drop(address)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


class Producer(_Transport):
    """A producer (``DefaultMQProducer``) whose calls block until they are done.

    Settings are Java's property names: ``Producer(namesrvAddr="127.0.0.1:9876",
    producerGroup="my_group")`` or ``Producer(config=ProducerConfig(...))``.
    """

    def __init__(self, config=None, **settings):
        self.config = config or ProducerConfig(**settings)
        super().__init__(ProducerCore(self.config, ids=UniqueIds.for_this_host()))

    def _send(self, prepare, what, mode, choose=None):
        now = now_ms()
        fetches = self.core.route_fetches
        try:
            return run(self.core.send(prepare(what, now), mode, now, choose), self._perform)
        finally:
            if self.core.route_fetches != fetches:
                self._prune()

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

    def offset_for_timestamp(self, queue, timestamp):
        """The offset of ``queue``'s first message stored at or after ``timestamp`` (ms)."""
        return self._run(self.core.offset_for_timestamp, queue, timestamp)[0]

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
