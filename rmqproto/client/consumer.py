"""The lite pull consumer's rules, without I/O (``DefaultLitePullConsumerImpl`` 4.9.8,
``RebalanceLitePullImpl``, ``PullAPIWrapper``, ``RemoteBrokerOffsetStore``,
``AllocateMessageQueueAveragely``).

As for the producer (:mod:`rmqproto.client.producer`), every operation is a generator
that yields :class:`~rmqproto.client.lookup.Call` and is sent back
:class:`~rmqproto.client.lookup.Reply`; the transports only run them.

The consumer hands messages to the caller as soon as they are pulled (no prefetch
cache), so a queue's position, the next offset to pull, is also its consumed offset:
what :meth:`LitePullCore.commit` stores on the broker.
"""

import random

from rmqproto.client.allocate import allocate_averagely
from rmqproto.client.errors import BrokerError, ClientError
from rmqproto.client.lookup import (
    REQUEST_TIMEOUT_MS, Call, NameServerLookup, client_id, request, this_client_id)
from rmqproto.client.message import ReceivedMessage, check_topic
from rmqproto.client.route import MessageQueue, TopicRoute
from rmqproto.codec import message as wire
from rmqproto.codec.bodies.client import (
    EXPRESSION_TYPE_TAG, SUB_ALL, ConsumeFromWhere, ConsumeType, ConsumerData, GetConsumerListByGroupResponseBody,
    HeartbeatData, MessageModel, SubscriptionData)
from rmqproto.codec.bodies.route import MASTER_ID
from rmqproto.codec.codes import RequestCode, ResponseCode
from rmqproto.codec.headers import (
    GetConsumerListByGroupRequestHeader, GetMaxOffsetRequestHeader, GetMinOffsetRequestHeader,
    PullMessageRequestHeader, PullMessageResponseHeader, QueryConsumerOffsetRequestHeader,
    SearchOffsetRequestHeader, UnregisterClientRequestHeader, UpdateConsumerOffsetRequestHeader)

#: ``PullSysFlag``: the pull stores the consumer's offset, may be held (long polling),
#: carries its subscription (the broker needs no heartbeat for it).
FLAG_COMMIT_OFFSET, FLAG_SUSPEND, FLAG_SUBSCRIPTION = 0x1, 0x2, 0x4
#: Where a new group starts on a queue (``RebalanceLitePullImpl#computePullFromWhere``).
START_POSITIONS = ("CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET")
#: How long a transport's poll waits after a round of pulls found nothing (the pulls do
#: not long-poll: one transport pulls every queue in turn).
IDLE_PULL_WAIT_MS = 100
#: The codes of a pull's answer that are a ``PullStatus``: FOUND, NO_NEW_MSG, NO_MATCHED_MSG
#: and OFFSET_ILLEGAL; each moves the position to ``nextBeginOffset``.
PULL_CODES = frozenset((ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND,
                        ResponseCode.PULL_RETRY_IMMEDIATELY, ResponseCode.PULL_OFFSET_MOVED))


def decode_pulled(body, broker_name, subscription, min_offset, max_offset):
    """The messages of a FOUND pull's ``body``, bodies decompressed, those whose tag the
    subscription does not list dropped (``PullAPIWrapper#processPullResult``)."""
    keep = None
    if subscription.expression_type == EXPRESSION_TYPE_TAG and subscription.sub_string not in (None, SUB_ALL):
        keep = set(subscription.tags_set)
    found = []
    for record in wire.iter_records(body):
        if keep is not None and record.properties.get(wire.PROPERTY_TAGS) not in keep:
            continue
        found.append(ReceivedMessage.from_record(record, broker_name, min_offset, max_offset))
    return found


class LitePullCore(NameServerLookup):
    """One lite pull consumer's state: its queues (assigned, or given by rebalancing its
    subscriptions), each queue's position, what was committed, the broker each queue is
    pulled from, and when heartbeat, rebalance and auto-commit are due."""

    def __init__(self, config, client_id, rng=None):
        super().__init__(config, rng or random.Random())
        if config.consumeFromWhere not in START_POSITIONS:
            raise ClientError("consumeFromWhere must be one of %s" % ", ".join(START_POSITIONS))
        self.client_id = client_id
        self.subscriptions = {}  # topic -> SubscriptionData (subscribe mode)
        self.assigned = []  # the queues pulled, in order
        self.positions = {}  # queue -> next offset to pull; missing: asked of the broker first
        self.committed = {}  # queue -> offset the broker holds for the group
        self.pull_from = {}  # queue -> broker id last suggested (suggestWhichBrokerId)
        self.cursor = 0  # the queue the next poll starts with
        self.next_commit = self.next_heartbeat = self.next_rebalance = None

    # ------------------------------------------------------------ queues

    def assign(self, queues):
        """``assign``: pull exactly ``queues`` (no rebalancing); refused after :meth:`subscribe`."""
        if self.subscriptions:
            raise ClientError("Subscribe and assign are mutually exclusive.")
        for queue in queues:
            check_topic(queue.topic)
        self._set_queues(sorted(set(queues)))
        self.next_heartbeat = 0

    def subscribe(self, topic, expression, now):
        """``subscribe(topic, subExpression)``: tags ``"TagA || TagB"`` or ``"*"``; the
        queues come from rebalancing, at once and every ``rebalanceInterval``."""
        if self.assigned and not self.subscriptions:
            raise ClientError("Subscribe and assign are mutually exclusive.")
        check_topic(topic)
        self.subscriptions[topic] = SubscriptionData.for_expression(topic, expression or SUB_ALL,
                                                                    sub_version=now)
        self.next_heartbeat = self.next_rebalance = 0

    def _set_queues(self, queues):
        self.assigned = list(queues)
        kept = set(queues)
        for table in (self.positions, self.committed, self.pull_from):
            for queue in set(table) - kept:
                del table[queue]
        self.cursor = 0

    def subscription(self, topic):
        return self.subscriptions.get(topic) or SubscriptionData.for_expression(topic, SUB_ALL)

    # ------------------------------------------------------------ routes and brokers

    def route(self, topic, now):
        """Generator: ``(TopicRoute, now)``, fetched when unknown, marked stale or older than
        ``pollNameServerInterval``; the route held is kept while no NameServer answers."""
        known, current = self.held_route(topic, now)
        if current:
            return known[0], now
        try:
            data, now = yield from self.fetch_route(topic, now)
        except ClientError:
            if known is None:
                raise
            data = None
        if data is not None:
            known = (TopicRoute(topic, data), now)
        elif known is None:
            raise ClientError("The topic[%s] not exist" % topic)
        else:
            known = (known[0], now)
        self.routes[topic] = known
        self.stale.discard(topic)
        return known[0], now

    def _broker_call(self, queue, code, header, now, master_only=True, body=None,
                     timeout=REQUEST_TIMEOUT_MS):
        """Generator: ``(response, now)`` of a request to ``queue``'s master (or, unless
        ``master_only``, another broker of its name); a transport error raises :class:`ClientError`."""
        route, now = yield from self.route(queue.topic, now)
        address, _ = route.subscribe_address(queue.broker_name, MASTER_ID, only_this=master_only)
        if address is None:
            self.stale.add(queue.topic)
            raise ClientError("The broker[%s] not exist" % queue.broker_name)
        reply = yield Call(address, request(code, header, body), timeout, False)
        if reply.error is not None:
            self.stale.add(queue.topic)
            raise ClientError("%s to %s failed: %s" % (code.name, address, reply.error)) from reply.error
        return reply.response, reply.now

    def _queue_offset(self, queue, code, header_class, now, master_only=True, **fields):
        header = header_class(topic=queue.topic, queue_id=queue.queue_id, **fields)
        answer, now = yield from self._broker_call(queue, code, header, now, master_only)
        if answer.code != ResponseCode.SUCCESS:
            raise BrokerError(answer.code, answer.remark)
        return int(answer.ext_fields["offset"]), now

    def min_offset(self, queue, now, master_only=True):
        """Generator: ``(GET_MIN_OFFSET of queue, now)``, asked of its master (unless
        ``master_only`` is false: else of another broker of its name)."""
        return (yield from self._queue_offset(queue, RequestCode.GET_MIN_OFFSET,
                                              GetMinOffsetRequestHeader, now, master_only))

    def max_offset(self, queue, now, master_only=True):
        """Generator: ``(GET_MAX_OFFSET of queue, now)``: the offset after the last message."""
        return (yield from self._queue_offset(queue, RequestCode.GET_MAX_OFFSET,
                                              GetMaxOffsetRequestHeader, now, master_only))

    def offset_for_timestamp(self, queue, timestamp, now, master_only=True):
        """Generator: ``(offset, now)``, the first message stored at or after ``timestamp``
        (ms; SEARCH_OFFSET_BY_TIMESTAMP, ``offsetForTimestamp``)."""
        return (yield from self._queue_offset(queue, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
                                              SearchOffsetRequestHeader, now, master_only,
                                              timestamp=timestamp))

    def committed_offset(self, queue, now):
        """Generator: ``(offset the broker holds for the group, or -1, now)`` (``committed``)."""
        header = QueryConsumerOffsetRequestHeader(consumer_group=self.config.consumerGroup,
                                                  topic=queue.topic, queue_id=queue.queue_id)
        answer, now = yield from self._broker_call(queue, RequestCode.QUERY_CONSUMER_OFFSET, header, now)
        if answer.code == ResponseCode.QUERY_NOT_FOUND:
            return -1, now
        if answer.code != ResponseCode.SUCCESS:
            raise BrokerError(answer.code, answer.remark)
        return int(answer.ext_fields["offset"]), now

    # ------------------------------------------------------------ positions

    def seek(self, queue, offset, now):
        """Generator: pull ``queue`` from ``offset`` next, which must lie within its
        ``[min, max]`` offsets (``seek``)."""
        if queue not in self.assigned:
            raise ClientError("The message queue is not in assigned list, message queue: %s" % (queue,))
        low, now = yield from self.min_offset(queue, now)
        high, now = yield from self.max_offset(queue, now)
        if not low <= offset <= high:
            raise ClientError("Seek offset illegal, seek offset = %d, min offset = %d, max offset = %d"
                              % (offset, low, high))
        self.positions[queue] = offset
        return now

    def seek_to(self, queue, end, now):
        """Generator: pull ``queue`` from its first (``end`` false) or next new message."""
        offset, now = yield from (self.max_offset if end else self.min_offset)(queue, now)
        return (yield from self.seek(queue, offset, now))

    def _position(self, queue, now):
        """Generator: ``(offset to pull next, now)``: the one held, else the group's
        committed offset, else as ``consumeFromWhere`` says (``computePullFromWhere``)."""
        if queue in self.positions:
            return self.positions[queue], now
        offset, now = yield from self.start_offset(queue, now)
        self.positions[queue] = offset
        return offset, now

    def start_offset(self, queue, now):
        """Generator: ``(offset, now)`` a queue without a position starts from
        (``computePullFromWhere``): the group's committed offset, else the first or the
        next new message as ``consumeFromWhere`` says."""
        offset, now = yield from self.committed_offset(queue, now)
        if offset >= 0:
            self.committed[queue] = offset
        elif self.config.consumeFromWhere == ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET.value:
            offset = 0
        else:
            offset, now = yield from self.max_offset(queue, now)
        return offset, now

    # ------------------------------------------------------------ pulling

    #: The ``PullSysFlag`` bits of every pull (the push consumer adds long polling).
    pull_flags = FLAG_SUBSCRIPTION

    def pull_timeout(self):
        """How long a pull may take (ms)."""
        return self.config.consumerPullTimeoutMillis

    def commit_in_pull(self, queue, is_slave):
        """The offset a pull of ``queue`` stores on the broker as it goes (0: none)."""
        return 0

    def pull_request(self, queue, offset, subscription, commit_offset=0, max_nums=None):
        header = PullMessageRequestHeader(
            consumer_group=self.config.consumerGroup, topic=queue.topic, queue_id=queue.queue_id,
            queue_offset=offset,
            max_msg_nums=self.config.pullBatchSize if max_nums is None else max_nums,
            sys_flag=self.pull_flags | (FLAG_COMMIT_OFFSET if commit_offset > 0 else 0),
            commit_offset=commit_offset, suspend_timeout_millis=self.config.brokerSuspendMaxTimeMillis,
            subscription=subscription.sub_string, sub_version=subscription.sub_version,
            expression_type=subscription.expression_type)
        return request(RequestCode.PULL_MESSAGE, header)

    def pull_call(self, queue, offset, max_nums, now):
        """Generator: ``(Call, now)``: the PULL_MESSAGE of ``queue`` from ``offset`` (at most
        ``max_nums`` messages; None: ``pullBatchSize``) to the broker the last answer
        suggested (``findBrokerAddressInSubscribe``: another broker of that name when it is
        gone); the position is not looked at. Its reply goes to :meth:`pull_answer`."""
        route, now = yield from self.route(queue.topic, now)
        address, is_slave = route.subscribe_address(queue.broker_name,
                                                    self.pull_from.get(queue, MASTER_ID))
        if address is None:
            self.stale.add(queue.topic)
            raise ClientError("The broker[%s] not exist" % queue.broker_name)
        pull = self.pull_request(queue, offset, self.subscription(queue.topic),
                                 self.commit_in_pull(queue, is_slave), max_nums)
        return Call(address, pull, self.pull_timeout(), False), now

    def pull_answer(self, queue, call, reply):
        """``(code, PullMessageResponseHeader, body)`` of the ``reply`` to a :meth:`pull_call`
        ``call``; the broker it suggests is pulled next. A transport error raises
        :class:`ClientError` (the route is fetched again), a code that is no
        ``PullStatus`` :class:`BrokerError`."""
        if reply.error is not None:
            self.stale.add(queue.topic)
            self.pull_from.pop(queue, None)
            raise ClientError("pull from %s failed: %s" % (call.address, reply.error)) \
                from reply.error
        answer = reply.response
        if answer.code not in PULL_CODES:
            raise BrokerError(answer.code, answer.remark, call.address)
        header = PullMessageResponseHeader.from_ext_fields(answer.ext_fields)
        self.pull_from[queue] = header.suggest_which_broker_id
        return answer.code, header, answer.body or b""

    def pull(self, queue, now):
        """Generator: ``(messages, now)`` of one PULL_MESSAGE of ``queue`` from its position
        (:meth:`pull_call`); the position moves to ``nextBeginOffset`` whatever the status."""
        offset, now = yield from self._position(queue, now)
        call, now = yield from self.pull_call(queue, offset, None, now)
        reply = yield call
        code, header, body = self.pull_answer(queue, call, reply)
        messages = []
        if code == ResponseCode.SUCCESS:
            messages = decode_pulled(body, queue.broker_name, self.subscription(queue.topic),
                                     header.min_offset, header.max_offset)
        if self.positions.get(queue) == offset:  # not moved by a seek meanwhile
            self.positions[queue] = header.next_begin_offset
        return messages, reply.now

    def poll(self, now):
        """Generator: ``(messages, now)``: heartbeat, rebalance and auto-commit when due,
        then each queue pulled in turn from where the last poll stopped until one has
        messages (an empty list when none has). A queue that fails is skipped this time."""
        now = yield from self.maintain(now)
        for _ in range(len(self.assigned)):
            queue = self.assigned[self.cursor % len(self.assigned)]
            self.cursor = (self.cursor + 1) % len(self.assigned)
            try:
                messages, now = yield from self.pull(queue, now)
            except ClientError:
                continue
            if messages:
                return messages, now
        return [], now

    # ------------------------------------------------------------ offsets

    def offset_to_commit(self, queue):
        """The offset :meth:`commit` stores for ``queue`` (``None``: nothing yet): its position."""
        return self.positions.get(queue)

    def commit(self, now, queues=None):
        """Generator: UPDATE_CONSUMER_OFFSET of every queue (of ``queues``) whose position
        moved since its last commit, to its master, else another broker of its name
        (``RemoteBrokerOffsetStore#updateConsumeOffsetToBroker``), each waiting for its
        answer; raises :class:`ClientError` after trying them all if one failed."""
        failed = None
        for queue in list(self.assigned if queues is None else queues):
            offset = self.offset_to_commit(queue)
            if offset is None or self.committed.get(queue) == offset:
                continue
            header = UpdateConsumerOffsetRequestHeader(
                consumer_group=self.config.consumerGroup, topic=queue.topic,
                queue_id=queue.queue_id, commit_offset=offset)
            try:
                answer, now = yield from self._broker_call(
                    queue, RequestCode.UPDATE_CONSUMER_OFFSET, header, now, master_only=False)
                if answer.code != ResponseCode.SUCCESS:
                    raise BrokerError(answer.code, answer.remark)
                self.committed[queue] = offset
            except ClientError as exc:
                failed = exc
        if failed is not None:
            raise ClientError("commit failed: %s" % failed) from failed
        return now

    # ------------------------------------------------------------ group membership

    def heartbeat_data(self):
        consumer = ConsumerData(
            group_name=self.config.consumerGroup, consume_type=ConsumeType.CONSUME_ACTIVELY,
            message_model=MessageModel.CLUSTERING,
            consume_from_where=ConsumeFromWhere(self.config.consumeFromWhere),
            subscription_data_set=list(self.subscriptions.values()), unit_mode=False)
        return HeartbeatData(client_id=self.client_id, consumer_data_set=[consumer])

    def _topics(self):
        return sorted(set(self.subscriptions) | {queue.topic for queue in self.assigned})

    def _every_broker(self, now):
        """Generator: ``(addresses of every broker of the topics held, now)``."""
        addresses = set()
        for topic in self._topics():
            try:
                route, now = yield from self.route(topic, now)
            except ClientError:
                continue
            addresses |= {a for addrs in route.addresses.values() for a in addrs.values()}
        return sorted(addresses), now

    def heartbeat(self, now):
        """Generator: HEART_BEAT with this consumer's data to every broker of its topics
        (``sendHeartbeatToAllBroker``); a broker that fails is tried again next time."""
        body = self.heartbeat_data().to_json()
        addresses, now = yield from self._every_broker(now)
        _, now = yield from self.tell_each(
            addresses, lambda: request(RequestCode.HEART_BEAT, body=body), now)
        return now

    def consumer_ids(self, topic, now):
        """Generator: ``(client ids of the group, now)`` from a master of ``topic``
        (GET_CONSUMER_LIST_BY_GROUP, ``findConsumerIdList``); ``None`` if none answered."""
        route, now = yield from self.route(topic, now)
        header = GetConsumerListByGroupRequestHeader(consumer_group=self.config.consumerGroup)
        for name in sorted(route.addresses):
            address, _ = route.subscribe_address(name)
            reply = yield Call(address, request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, header),
                               REQUEST_TIMEOUT_MS, False)
            now = reply.now
            if reply.error is None and reply.response.code == ResponseCode.SUCCESS:
                body = GetConsumerListByGroupResponseBody.from_json(reply.response.body)
                return body.consumer_id_list or [], now
        return None, now

    def rebalance(self, now):
        """Generator: this client's share of each subscribed topic's read queues among the
        group (``RebalanceImpl#rebalanceByTopic``, clustering); queues given up are
        committed first. A topic whose route or members cannot be had keeps its queues."""
        queues = []
        for topic in sorted(self.subscriptions):
            held = [queue for queue in self.assigned if queue.topic == topic]
            try:
                route, now = yield from self.route(topic, now)
                members, now = yield from self.consumer_ids(topic, now)
            except ClientError:
                members = None
            queues += held if members is None else allocate_averagely(
                route.read_queues, members, self.client_id)
        gone = [queue for queue in self.assigned if queue not in set(queues)]
        if gone:
            try:
                now = yield from self.commit(now, gone)
            except ClientError:
                pass  # the next owner starts from the last offset committed
        if queues != self.assigned:
            self._set_queues(queues)
        return now

    def maintain(self, now):
        """Generator: what is due at ``now``: heartbeat (``heartbeatBrokerInterval``),
        rebalance (``rebalanceInterval``, subscribe mode) and auto-commit
        (``autoCommitIntervalMillis``, ``maybeAutoCommit``); returns ``now``."""
        if self.next_heartbeat is not None and now >= self.next_heartbeat:
            now = yield from self.heartbeat(now)
            self.next_heartbeat = now + self.config.heartbeatBrokerInterval
        if self.next_rebalance is not None and now >= self.next_rebalance:
            now = yield from self.rebalance(now)
            self.next_rebalance = now + self.config.rebalanceInterval
        if self.config.autoCommit:
            if self.next_commit is None:
                self.next_commit = now + self.config.autoCommitIntervalMillis
            elif now >= self.next_commit:
                try:
                    now = yield from self.commit(now)
                except ClientError:
                    pass  # kept for the next time
                self.next_commit = now + self.config.autoCommitIntervalMillis
        return now

    def shutdown(self, now):
        """Generator: commit every position (with ``autoCommit``) and leave the group (``shutdown``)."""
        if self.config.autoCommit:
            try:
                now = yield from self.commit(now)
            except ClientError:
                pass
        return (yield from self.unregister(now))

    def unregister(self, now):
        """Generator: UNREGISTER_CLIENT from every broker of the topics held, so that the
        group rebalances at once."""
        addresses, now = yield from self._every_broker(now)
        header = UnregisterClientRequestHeader(client_id=self.client_id,
                                               consumer_group=self.config.consumerGroup)
        _, now = yield from self.tell_each(
            addresses, lambda: request(RequestCode.UNREGISTER_CLIENT, header), now)
        return now


__all__ = ["LitePullCore", "allocate_averagely", "decode_pulled", "client_id", "this_client_id",
           "MessageQueue"]
