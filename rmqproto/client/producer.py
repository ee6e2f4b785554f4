"""The producer's rules, without I/O (``DefaultMQProducerImpl#sendDefaultImpl`` /
``sendKernelImpl``, ``MQClientAPIImpl#processSendResponse`` and ``onExceptionImpl``).

A call is a generator: it yields :class:`~rmqproto.client.lookup.Call` (a request to send to an address, with a
timeout) and is sent back a :class:`~rmqproto.client.lookup.Reply` (the response, or the transport's error, and
the time it came). The transports in :mod:`~rmqproto.client.blocking` and
:mod:`~rmqproto.client.deferred` only run these generators; every rule is here.

Retries as Java: a sync send tries ``1 + retryTimesWhenSendFailed`` times within
``sendMsgTimeout``, after a transport error, after the broker codes of
:data:`RETRY_CODES` and, with ``retryAnotherBrokerWhenNotStoreOK``, after a status other
than SEND_OK; an async send retries transport errors ``retryTimesWhenSendAsyncFailed``
times; a oneway send is tried once. Each retry avoids the broker that just failed. Beyond
Java, a failed attempt refreshes the topic's route before the next one.
"""

import random
import zlib
from collections import namedtuple

from rmqproto.client.errors import BrokerError, ClientError
from rmqproto.client.fault import QueueSelector
from rmqproto.client.message import SendResult, SendStatus, UniqueIds, check_message, check_topic
from rmqproto.client.lookup import LANGUAGE, Call, NameServerLookup, request
from rmqproto.client.route import TopicRoute, borrowed_route
from rmqproto.codec import message as wire
from rmqproto.client.transaction import half_message
from rmqproto.codec.bodies.client import HeartbeatData, ProducerData
from rmqproto.codec.codes import RequestCode, ResponseCode
from rmqproto.codec.frame import FLAG_ONEWAY, RemotingCommand
from rmqproto.codec.headers import (
    SendMessageRequestHeaderV2, SendMessageResponseHeader, UnregisterClientRequestHeader)


SYNC, ASYNC, ONEWAY = "sync", "async", "oneway"
_RETRIES = {SYNC: "retryTimesWhenSendFailed", ASYNC: "retryTimesWhenSendAsyncFailed"}
#: Broker codes after which a sync send tries again (``sendDefaultImpl``).
RETRY_CODES = frozenset((
    ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.SYSTEM_ERROR,
    ResponseCode.NO_PERMISSION, ResponseCode.NO_BUYER_ID, ResponseCode.NOT_IN_CURRENT_UNIT))
_STATUS = {ResponseCode.SUCCESS: SendStatus.SEND_OK,
           ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
           ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
           ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE}
#: ``rocketmq.message.compressLevel``'s default.
COMPRESS_LEVEL = 5

#: One send made ready: the request parts that do not depend on the queue.
Outgoing = namedtuple("Outgoing", "topic code body sys_flag flag properties batch msg_id")
#: The wire names of the send header's fields that change from one send to the next.
_VARYING = {field.name: field.wire for field in SendMessageRequestHeaderV2.all_fields
            if field.name in ("queue_id", "sys_flag", "born_timestamp", "flag", "properties",
                              "broker_name")}


def selecting(selector, message, arg):
    """The ``choose`` of :meth:`ProducerCore.send` for a ``MessageQueueSelector``-like
    ``selector(queues, message, arg) -> MessageQueue`` (``None`` without a selector)."""
    if selector is None:
        return None
    return lambda queues: selector(list(queues), message, arg)


def parse_send_answer(response, queue, msg_id, address):
    """``processSendResponse``: the :class:`SendResult` of a send's ``response``; a
    :class:`BrokerError` for any code but SUCCESS and the flush/slave timeouts."""
    status = _STATUS.get(response.code)
    if status is None:
        raise BrokerError(response.code, response.remark, address)
    header = SendMessageResponseHeader.from_ext_fields(response.ext_fields)
    ext = response.ext_fields or {}
    return SendResult(status, msg_id, header.msg_id, queue._replace(queue_id=header.queue_id),
                      header.queue_offset, header.transaction_id,
                      ext.get(wire.PROPERTY_MSG_REGION) or "DefaultRegion",
                      ext.get(wire.PROPERTY_TRACE_SWITCH) != "false")


class ProducerCore(NameServerLookup):
    """One producer's state: its settings, NameServer strategy, routes, queue selector and
    message ids. ``rng`` and ``ids`` are given by tests; the transports pass their own."""

    def __init__(self, config, rng=None, ids=None, client_id="127.0.0.1@DEFAULT"):
        rng = rng or random.Random()
        NameServerLookup.__init__(self, config, rng)
        self.selector = QueueSelector(rng, config.sendLatencyFaultEnable)
        self.ids = ids or UniqueIds(salt=rng.getrandbits(32))
        self.client_id = client_id
        self.route_fetches = 0  # routes stored so far: a transport prunes connections when it moves
        self.next_heartbeat = 0
        self.known_by = set()  # masters that took a heartbeat: told at shutdown
        self.heartbeat_tried = set()  # masters a heartbeat went to, answered or not
        self.send_headers = {}  # (topic, batch) -> the send header's fields that stay put

    # ------------------------------------------------------------ group membership

    def heartbeat_due(self, now):
        """Whether a heartbeat is due: every ``heartbeatBrokerInterval``, and (beyond Java,
        which waits for its timer) at once when a route names a master not tried yet."""
        return now >= self.next_heartbeat or not self.heartbeat_tried.issuperset(
            self.broker_addresses(masters_only=True))

    def heartbeat(self, now):
        """Generator: HEART_BEAT with the producer group to every master of the routes held
        (``MQClientInstance#sendHeartbeatToAllBroker``: a client without consumers tells
        masters only); returns ``now``."""
        body = HeartbeatData(client_id=self.client_id, producer_data_set=[
            ProducerData(group_name=self.config.producerGroup)]).to_json()
        masters = self.broker_addresses(masters_only=True)
        self.heartbeat_tried.update(masters)
        told, now = yield from self.tell_each(
            masters, lambda: request(RequestCode.HEART_BEAT, body=body), now)
        self.known_by |= told
        self.next_heartbeat = now + self.config.heartbeatBrokerInterval
        return now

    def shutdown(self, now):
        """Generator: UNREGISTER_CLIENT of the producer group from every master told
        (``MQClientInstance#unregisterClient``); returns ``now``."""
        header = UnregisterClientRequestHeader(client_id=self.client_id,
                                               producer_group=self.config.producerGroup)
        _, now = yield from self.tell_each(
            sorted(self.known_by), lambda: request(RequestCode.UNREGISTER_CLIENT, header), now)
        self.known_by.clear()
        return now

    # ------------------------------------------------------------ NameServer and routes

    def route(self, topic, now):
        """Generator: ``(TopicRoute, now)`` of ``topic`` (``tryToFindTopicPublishInfo``).

        Fetched when unknown, older than ``pollNameServerInterval`` or marked stale by a
        failed send; a topic the NameServer does not know borrows the auto-create topic's
        route. When no NameServer answers (or the answer has no writable queue), the route
        already known is kept for another ``pollNameServerInterval``.
        """
        known, current = self.held_route(topic, now)
        if current:
            return known[0], now
        try:
            data, now = yield from self.fetch_route(topic, now)
            if data is None and known is None and topic != self.config.createTopicKey:
                default, now = yield from self.fetch_route(self.config.createTopicKey, now)
                if default is not None:
                    data = borrowed_route(default, self.config.defaultTopicQueueNums)
        except ClientError:
            if known is None:
                raise
            data = None
        fresh = TopicRoute(topic, data) if data is not None else None
        if fresh is not None and (fresh.queues or known is None):
            known = (fresh, now)
            self.route_fetches += 1
        elif known is not None:  # kept: asked again after pollNameServerInterval, not at every send
            known = (known[0], now)
        if known is None or not known[0].queues:
            raise ClientError("No route info of this topic: %s" % topic)
        self.routes[topic] = known
        self.stale.discard(topic)
        return known[0], now

    def refresh_routes(self, now):
        """Generator: fetch again the route of every topic held (Java's timer of
        ``pollNameServerInterval``); a topic whose lookup fails keeps the route it had."""
        for topic in list(self.routes):
            self.stale.add(topic)
            try:
                _, now = yield from self.route(topic, now)
            except ClientError:
                pass

    # ------------------------------------------------------------ building sends

    def prepare(self, message, now):
        """One message made ready: checked, ``UNIQ_KEY`` set, body compressed from
        ``compressMsgBodyOverHowmuch`` bytes on (ZLIB level 5, the COMPRESSED sysFlag)."""
        check_message(message, self.config.maxMessageSize)
        msg_id = self.ids.next_id(now)
        properties = message.wire_properties()
        properties[wire.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = msg_id
        body, sys_flag = message.body, 0
        if len(body) >= self.config.compressMsgBodyOverHowmuch:
            body, sys_flag = zlib.compress(body, COMPRESS_LEVEL), wire.COMPRESSED_FLAG
        return Outgoing(message.topic, RequestCode.SEND_MESSAGE_V2, body, sys_flag, message.flag,
                        properties, False, msg_id)

    def prepare_half(self, message, now):
        """A transactional message made ready (:func:`~rmqproto.client.transaction.half_message`);
        ``message.transaction_id`` set to its ``UNIQ_KEY``."""
        outgoing = half_message(self.prepare(message, now), self.config.producerGroup)
        message.transaction_id = outgoing.msg_id
        return outgoing

    def prepare_batch(self, messages, now):
        """A batch made ready (``DefaultMQProducer#batch``, ``MessageBatch``): one topic, no
        delay level, each message with its own ``UNIQ_KEY``; never compressed."""
        messages = list(messages)
        if not messages:
            raise ClientError("a batch needs at least one message")
        topic = messages[0].topic
        items, ids = [], []
        for message in messages:
            check_message(message, self.config.maxMessageSize)
            if message.topic != topic:
                raise ClientError("The topic of the messages in one batch should be the same")
            if message.delay_level:
                raise ClientError("TimeDelayLevel is not supported for batching")
            properties = message.wire_properties()
            ids.append(self.ids.next_id(now))
            properties[wire.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = ids[-1]
            items.append(wire.Message(message.body, properties, message.flag))
        body = wire.encode_batch(items)
        if len(body) > self.config.maxMessageSize:
            raise ClientError("the message body size over max value, MAX: %d"
                              % self.config.maxMessageSize)
        return Outgoing(topic, RequestCode.SEND_BATCH_MESSAGE, body, 0, 0,
                        {wire.PROPERTY_WAIT_STORE_MSG_OK: "true"}, True, ",".join(ids))

    def build_request(self, outgoing, queue, now):
        """The SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE request of ``outgoing`` to ``queue``.
        The header's fields are encoded once a topic (:meth:`_send_header`); a send
        fills in those that change (what encoding the whole header would give)."""
        fields = dict(self._send_header(outgoing.topic, outgoing.batch))
        fields[_VARYING["queue_id"]] = str(queue.queue_id)
        fields[_VARYING["sys_flag"]] = str(outgoing.sys_flag)
        fields[_VARYING["born_timestamp"]] = str(now)
        fields[_VARYING["flag"]] = str(outgoing.flag)
        fields[_VARYING["properties"]] = wire.properties_to_string(outgoing.properties)
        fields[_VARYING["broker_name"]] = queue.broker_name
        return RemotingCommand(outgoing.code, language=LANGUAGE, ext_fields=fields,
                               body=outgoing.body)

    def _send_header(self, topic, batch):
        """The ``extFields`` of a send header to ``topic``, those that change left at zero."""
        fields = self.send_headers.get((topic, batch))
        if fields is None:
            fields = self.send_headers[topic, batch] = SendMessageRequestHeaderV2(
                producer_group=self.config.producerGroup, topic=topic,
                default_topic=self.config.createTopicKey,
                default_topic_queue_nums=self.config.defaultTopicQueueNums, queue_id=0,
                sys_flag=0, born_timestamp=0, flag=0, properties="", reconsume_times=0,
                unit_mode=False, batch=batch, broker_name="").to_ext_fields()
        return fields

    # ------------------------------------------------------------ sending

    def send(self, outgoing, mode, now, choose=None):
        """Generator: send ``outgoing`` (from :meth:`prepare` / :meth:`prepare_batch`) with the
        retry rules of ``mode`` (:data:`SYNC`, :data:`ASYNC`, :data:`ONEWAY`); returns the
        :class:`SendResult` (``None`` for oneway) or raises :class:`ClientError`.

        ``choose(queues)`` (see :func:`selecting`) picks the queue instead of the built-in
        selection; such a send is tried once (``sendSelectImpl``).
        """
        check_topic(outgoing.topic)
        start, timeout = now, self.config.sendMsgTimeout
        route, now = yield from self.route(outgoing.topic, now)
        retries = getattr(self.config, _RETRIES[mode]) if mode in _RETRIES and not choose else 0
        last_broker = result = error = None
        for attempt in range(1 + retries):
            if attempt and outgoing.topic in self.stale:
                route, now = yield from self.route(outgoing.topic, now)
            queue = choose(route.queues) if choose else self.selector.select(route, last_broker, now)
            if queue is None:
                raise ClientError("select message queue return null.")
            last_broker = queue.broker_name
            address = route.master(queue.broker_name)
            if address is None:
                raise ClientError("The broker[%s] not exist" % queue.broker_name)
            if now - start >= timeout:
                error = ClientError("sendDefaultImpl call timeout")
                break
            request = self.build_request(outgoing, queue, now)
            if mode == ONEWAY:
                request.flag |= FLAG_ONEWAY
            reply = yield Call(address, request, timeout - (now - start), mode == ONEWAY)
            latency, now = reply.now - now, reply.now
            if reply.error is not None:
                self._failed(outgoing.topic, queue, latency, now)
                error = reply.error
                continue
            if mode == ONEWAY:
                return None
            try:
                result = parse_send_answer(reply.response, queue, outgoing.msg_id, address)
            except BrokerError as exc:
                self._failed(outgoing.topic, queue, latency, now)
                error = exc
                if mode == SYNC and exc.code in RETRY_CODES:
                    continue
                if result is not None:
                    return result
                raise
            self.selector.update_fault(queue.broker_name, latency, False, now)
            if (mode == SYNC and result.status != SendStatus.SEND_OK
                    and self.config.retryAnotherBrokerWhenNotStoreOK):
                continue
            return result
        if result is not None:
            return result
        raise ClientError("Send [%d] times, still failed, cost [%d]ms, Topic: %s: %s" % (
            attempt + 1, now - start, outgoing.topic, error)) from error

    def _failed(self, topic, queue, latency, now):
        self.selector.update_fault(queue.broker_name, latency, True, now)
        self.stale.add(topic)
