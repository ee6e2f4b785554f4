"""The push consumer's rules, without I/O (``DefaultMQPushConsumerImpl`` 4.9.8,
``RebalancePushImpl``, ``ProcessQueue``, ``ConsumeMessageConcurrentlyService``,
``ConsumeMessageOrderlyService``, ``RemoteBrokerOffsetStore``, ``LocalFileOffsetStore``).

The transports run one pull loop a queue (:meth:`PushCore.pull_once`, a long poll held by
the broker up to ``brokerSuspendMaxTimeMillis``), hand what comes to the user's listener
and report back (:meth:`PushCore.consumed`, or :meth:`PushCore.take_orderly` /
:meth:`PushCore.orderly_done` for an orderly listener); :meth:`PushCore.maintain` does
heartbeats, rebalancing, queue locks and offset commits when due. Every rule is here; as
everywhere in the client the operations are generators of
:class:`~rmqproto.client.lookup.Call` (see :mod:`rmqproto.client.producer`).

A queue's consumed offset is the smallest offset still being consumed, or the offset
after the last one pulled when none is: what is committed to the broker (clustering) or
to the local file (broadcasting).
"""

import enum
import json

from rmqproto.client.allocate import strategy
from rmqproto.client.config import PushConsumerConfig
from rmqproto.client.consumer import FLAG_SUBSCRIPTION, FLAG_SUSPEND, LitePullCore, this_client_id
from rmqproto.client.errors import ClientError
from rmqproto.client.offsetfile import decode_offset_table, encode_local_offsets
from rmqproto.client.route import MessageQueue
from rmqproto.codec import message as wire
from rmqproto.codec.bodies.client import (
    EXPRESSION_TYPE_TAG, SUB_ALL, ConsumeFromWhere, ConsumeType, ConsumerData, HeartbeatData,
    LockBatchRequestBody, LockBatchResponseBody, MessageModel, SubscriptionData,
    UnlockBatchRequestBody)
from rmqproto.codec.bodies.client import MessageQueue as WireQueue
from rmqproto.codec.codes import RequestCode, ResponseCode
from rmqproto.codec.headers import (
    ConsumerSendMsgBackRequestHeader, GetConsumerStatusRequestHeader,
    NotifyConsumerIdsChangedRequestHeader, ResetOffsetRequestHeader)
from rmqproto.codec.bodies.offsets import GetConsumerStatusBody

#: ``MixAll.RETRY_GROUP_TOPIC_PREFIX``: the topic a clustering group's failed messages come back on.
RETRY_PREFIX = "%RETRY%"
#: ``ProcessQueue.REBALANCE_LOCK_INTERVAL``: how often an orderly consumer renews its queue locks.
LOCK_INTERVAL_MS = 20_000
#: ``ProcessQueue.REBALANCE_LOCK_MAX_LIVE_TIME``: a lock not renewed for this long is lost.
LOCK_MAX_LIVE_MS = 30_000
#: How long a concurrent batch waits before it is consumed again when its send-back failed
#: (``submitConsumeRequestLater``).
CONSUME_LATER_MS = 5000
#: How long a pull waits when its queue holds ``pullThresholdForQueue`` messages
#: (``PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL``).
FLOW_CONTROL_DELAY_MS = 50
#: The pull of an orderly queue not locked yet waits this long (``PULL_TIME_DELAY_MILLS_WHEN_EXCEPTION``'s
#: use in ``pullMessage``, shortened to the lock's retry).
UNLOCKED_DELAY_MS = 1000
#: How often a transport asks whether upkeep is due (:meth:`PushCore.next_due`).
MAINTAIN_TICK_MS = 200


#: The requests a broker sends a push consumer that :meth:`PushCore.serve` answers.
SERVED = (RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, RequestCode.GET_CONSUMER_RUNNING_INFO,
          RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, RequestCode.RESET_CONSUMER_CLIENT_OFFSET)


class ConsumeStatus(enum.Enum):
    """``ConsumeConcurrentlyStatus`` and ``ConsumeOrderlyStatus``."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"
    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


def succeeded(status):
    """Whether a listener's answer (a :class:`ConsumeStatus`, its name, or ``None`` /
    an exception: failure, as Java takes them) means the messages were consumed."""
    if isinstance(status, ConsumeStatus):
        status = status.value
    return status in (ConsumeStatus.CONSUME_SUCCESS.value, ConsumeStatus.SUCCESS.value)


def retry_topic(group):
    return RETRY_PREFIX + group


class ProcessQueue:
    """``ProcessQueue``: what was pulled from one queue and is not consumed yet (by
    offset), the highest offset pulled, and for an orderly consumer its lock."""

    __slots__ = ("messages", "next_offset", "locked", "lock_time", "busy", "dropped")

    def __init__(self):
        self.messages = {}  # queue offset -> ReceivedMessage
        self.next_offset = None  # the offset after the last pulled
        self.locked, self.lock_time, self.busy, self.dropped = False, 0, False, False

    def put(self, messages, next_offset):
        for message in messages:
            self.messages[message.queue_offset] = message
        self.next_offset = next_offset

    def remove(self, messages):
        """Forget ``messages`` (those of this process queue: not ones pulled again after a reset)."""
        for message in messages:
            if self.messages.get(message.queue_offset) is message:
                del self.messages[message.queue_offset]

    def consumed_offset(self):
        """The offset to commit: the smallest still held, else the next to pull (``removeMessage``)."""
        return min(self.messages) if self.messages else self.next_offset

    def lock_held(self, now):
        return self.locked and now - self.lock_time <= LOCK_MAX_LIVE_MS


def _queue_of(wire_queue):
    return MessageQueue(wire_queue.topic, wire_queue.broker_name, wire_queue.queue_id)


class PushSetup:
    """What both push consumers (blocking and Twisted) do before :meth:`start`: the
    settings, the client id (a broadcasting member keeps its instance name), the
    subscriptions and the listener."""

    def _set_up(self, config, settings):
        self.config = config or PushConsumerConfig(**settings)
        broadcasting = self.config.messageModel == "BROADCASTING"
        self._client_id = this_client_id(self.config, unique=not broadcasting)
        self.listener, self.orderly, self._subscriptions = None, False, []

    def subscribe(self, topic, expression="*", expression_type="TAG"):
        """Consume ``topic``'s messages matching ``expression`` (tags, or SQL92)."""
        self._subscriptions.append((topic, expression, expression_type))

    def register_message_listener(self, listener, orderly=False):
        """``listener(messages) -> ConsumeStatus``; ``orderly``: one queue's messages in order,
        one call at a time, under the broker's queue lock (``MessageListenerOrderly``)."""
        self.listener, self.orderly = listener, orderly


class PushCore(LitePullCore):
    """One push consumer's state: subscriptions, the queues it owns and each one's
    :class:`ProcessQueue`, the consumed offsets, and when maintenance is due."""

    pull_flags = FLAG_SUSPEND | FLAG_SUBSCRIPTION

    def __init__(self, config, client_id, rng=None, orderly=False):
        super().__init__(config, client_id, rng)
        self.orderly = orderly
        self.allocate = strategy(config.allocateMessageQueueStrategy)
        self.broadcasting = config.messageModel == MessageModel.BROADCASTING.value
        if not self.broadcasting and config.messageModel != MessageModel.CLUSTERING.value:
            raise ClientError("messageModel must be CLUSTERING or BROADCASTING")
        self.process_queues = {}  # queue -> ProcessQueue
        self.offsets = {}  # queue -> consumed offset (what a commit stores)
        self.next_lock = None
        self.next_heartbeat = self.next_rebalance = 0
        self.started = 0  # when the consumer started (ms), for its running info
        if config.maxReconsumeTimes is not None:
            self.max_reconsume_times = config.maxReconsumeTimes
        else:
            self.max_reconsume_times = 2 ** 31 - 1 if orderly else 16

    # ------------------------------------------------------------ subscriptions

    def subscribe(self, topic, expression, now, expression_type=EXPRESSION_TYPE_TAG):
        """``subscribe(topic, MessageSelector)``: tags (``"TagA || TagB"``, ``"*"``) or, with
        ``expression_type`` "SQL92", a property filter; clustering also subscribes the
        group's retry topic (``copySubscription``)."""
        super().subscribe(topic, expression, now)
        self.subscriptions[topic] = SubscriptionData.for_expression(
            topic, expression or SUB_ALL, sub_version=now, expression_type=expression_type)
        if not self.broadcasting:
            retry = retry_topic(self.config.consumerGroup)
            self.subscriptions[retry] = SubscriptionData.for_expression(retry, SUB_ALL, sub_version=now)
        self.next_lock = 0 if self.orderly else None
        self.started = self.started or now

    def heartbeat_data(self):
        consumer = ConsumerData(
            group_name=self.config.consumerGroup, consume_type=ConsumeType.CONSUME_PASSIVELY,
            message_model=MessageModel(self.config.messageModel),
            consume_from_where=ConsumeFromWhere(self.config.consumeFromWhere),
            subscription_data_set=list(self.subscriptions.values()), unit_mode=False)
        return HeartbeatData(client_id=self.client_id, consumer_data_set=[consumer])

    # ------------------------------------------------------------ rebalancing

    def rebalance(self, now):
        """Generator: this client's queues (``RebalanceImpl#rebalanceByTopic``): every
        readable queue when broadcasting, else its share by the allocation strategy; an
        orderly consumer takes a new queue only once the broker locked it for it. Queues
        given up are committed, unlocked and dropped. A topic whose route or members cannot
        be had keeps its queues."""
        wanted = []
        for topic in sorted(self.subscriptions):
            held = [queue for queue in self.assigned if queue.topic == topic]
            try:
                route, now = yield from self.route(topic, now)
                if self.broadcasting:
                    members = [self.client_id]
                else:
                    members, now = yield from self.consumer_ids(topic, now)
            except ClientError:
                members = None
            wanted += held if members is None else self.allocate(
                route.read_queues, members, self.client_id)
        gone = [queue for queue in self.assigned if queue not in set(wanted)]
        if gone:
            try:
                now = yield from self.commit(now, gone)
            except ClientError:
                pass  # the next owner starts from the last offset committed
            if self.orderly:
                now = yield from self.unlock(gone, now)
        new = [queue for queue in wanted if queue not in self.process_queues]
        if self.orderly and new:
            locked, now = yield from self.lock(new, now)
            wanted = [queue for queue in wanted if queue not in new or queue in locked]
        for queue in gone:
            self.process_queues.pop(queue).dropped = True
            self.offsets.pop(queue, None)
        for queue in wanted:
            if queue not in self.process_queues:
                self.process_queues[queue] = ProcessQueue()
                if self.orderly:
                    self.process_queues[queue].locked, self.process_queues[queue].lock_time = True, now
        if wanted != self.assigned:
            self._set_queues(wanted)
        return now

    def start_offset(self, queue, now):
        """``computePullFromWhere``: broadcasting reads the local file's offsets (loaded by
        the transport into :attr:`offsets`); a retry topic new to the group starts at 0."""
        if self.broadcasting:
            if queue in self.offsets:
                return self.offsets[queue], now
            if self.config.consumeFromWhere == ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET.value:
                return 0, now
            return (yield from self.max_offset(queue, now))
        offset, now = yield from self.committed_offset(queue, now)
        if offset >= 0:
            self.committed[queue] = offset
            return offset, now
        if queue.topic.startswith(RETRY_PREFIX) or (
                self.config.consumeFromWhere == ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET.value):
            return 0, now
        return (yield from self.max_offset(queue, now))

    # ------------------------------------------------------------ queue locks (orderly)

    def _by_master(self, queues):
        by_broker = {}
        for queue in queues:
            by_broker.setdefault(queue.broker_name, []).append(queue)
        return sorted(by_broker.items())

    def lock(self, queues, now):
        """Generator: ``(queues locked for this client, now)``: LOCK_BATCH_MQ to each
        broker's master (``RebalanceImpl#lockAll``)."""
        locked = set()
        for broker_name, mine in self._by_master(queues):
            body = LockBatchRequestBody(
                consumer_group=self.config.consumerGroup, client_id=self.client_id,
                mq_set=[WireQueue(q.topic, q.broker_name, q.queue_id) for q in mine]).to_json()
            try:
                answer, now = yield from self._broker_call(
                    mine[0], RequestCode.LOCK_BATCH_MQ, None, now, body=body)
            except ClientError:
                continue
            if answer.code == ResponseCode.SUCCESS:
                locked |= {_queue_of(q) for q in LockBatchResponseBody.from_json(answer.body).lock_ok_mq_set}
        return locked, now

    def unlock(self, queues, now):
        """Generator: UNLOCK_BATCH_MQ of ``queues`` on their masters (``RebalanceImpl#unlock``)."""
        for broker_name, mine in self._by_master(queues):
            body = UnlockBatchRequestBody(
                consumer_group=self.config.consumerGroup, client_id=self.client_id,
                mq_set=[WireQueue(q.topic, q.broker_name, q.queue_id) for q in mine]).to_json()
            try:
                _, now = yield from self._broker_call(mine[0], RequestCode.UNLOCK_BATCH_MQ, None,
                                                      now, body=body)
            except ClientError:
                pass
        return now

    def renew_locks(self, now):
        """Generator: lock every queue held again; a queue the broker did not lock for this
        client stops being consumed until it is (``lockAll``)."""
        locked, now = yield from self.lock(list(self.process_queues), now)
        for queue, process_queue in self.process_queues.items():
            process_queue.locked = queue in locked
            if process_queue.locked:
                process_queue.lock_time = now
        return now

    # ------------------------------------------------------------ pulling

    def pull_timeout(self):
        return self.config.consumerTimeoutMillisWhenSuspend

    def commit_in_pull(self, queue, is_slave):
        """A pull to the master carries the consumed offset (``commitOffsetEnable``)."""
        offset = self.offsets.get(queue, 0)
        return 0 if is_slave or self.broadcasting or offset is None else offset

    def pull_once(self, queue, now):
        """Generator: ``(messages, ms to wait before the next pull of queue)``: one long
        poll of ``queue``, unless its process queue is full (``pullThresholdForQueue``) or,
        orderly, not locked. Messages of the retry topic get their own topic back
        (``resetRetryAndNamespace``); the queue's consumed offset follows. A wait of
        ``None``: the queue is no longer this consumer's, its loop ends."""
        process_queue = self.process_queues.get(queue)
        if process_queue is None:
            return [], None
        if len(process_queue.messages) >= self.config.pullThresholdForQueue:
            return [], FLOW_CONTROL_DELAY_MS
        if self.orderly and not process_queue.lock_held(now):
            return [], UNLOCKED_DELAY_MS
        try:
            messages, now = yield from self.pull(queue, now)
        except ClientError:
            messages = None
        current = self.process_queues.get(queue)
        if current is not process_queue:  # given up, or reset: what came is dropped
            if current is not None:
                self.positions[queue] = current.next_offset
            return [], None if current is None else 0
        if messages is None:
            return [], self.config.pullTimeDelayMillsWhenException
        for message in messages:
            original = message.properties.get(wire.PROPERTY_RETRY_TOPIC)
            if original and message.topic.startswith(RETRY_PREFIX):
                message.topic = original
        process_queue.put(messages, self.positions[queue])
        self.offsets[queue] = process_queue.consumed_offset()
        return messages, self.config.pullInterval

    # ------------------------------------------------------------ consuming

    def batches(self, messages):
        """``messages`` cut into the listener's batches (``consumeMessageBatchMaxSize``)."""
        size = max(1, self.config.consumeMessageBatchMaxSize)
        return [messages[i:i + size] for i in range(0, len(messages), size)]

    def _done(self, queue, messages):
        process_queue = self.process_queues.get(queue)
        if process_queue is not None and not process_queue.dropped:
            process_queue.remove(messages)
            self.offsets[queue] = process_queue.consumed_offset()

    def send_back(self, message, now, delay_level=0):
        """Generator: ``(whether the broker took it, now)``: CONSUMER_SEND_MSG_BACK of a
        message whose consumption failed, to its broker's master; the broker puts it on
        the group's retry topic (delay level ``3 + reconsumeTimes`` when 0) or, past
        ``maxReconsumeTimes``, its DLQ (``sendMessageBack``)."""
        header = ConsumerSendMsgBackRequestHeader(
            offset=message.commit_log_offset, group=self.config.consumerGroup,
            delay_level=delay_level, origin_msg_id=message.msg_id, origin_topic=message.topic,
            unit_mode=False, max_reconsume_times=self.max_reconsume_times)
        try:
            answer, now = yield from self._broker_call(message.queue, RequestCode.CONSUMER_SEND_MSG_BACK,
                                                       header, now)
        except ClientError:
            return False, now
        return answer.code == ResponseCode.SUCCESS, now

    def consumed(self, queue, messages, status, now):
        """Generator: ``(messages to consume again in CONSUME_LATER_MS, now)`` after a
        concurrent listener answered ``status`` for ``messages``
        (``processConsumeResult``): on failure, clustering sends each back (those the broker
        did not take are consumed again here), broadcasting drops them."""
        again = []
        if not succeeded(status) and not self.broadcasting:
            for message in messages:
                took, now = yield from self.send_back(message, now)
                if not took:
                    message.reconsume_times += 1
                    again.append(message)
        self._done(queue, [m for m in messages if m not in again])
        return again, now

    def take_orderly(self, queue, now):
        """The next batch of ``queue`` for an orderly listener, in offset order, or ``None``
        (nothing held, the queue busy, or its lock not held); the queue is then busy until
        :meth:`orderly_done`: one queue, one thread at a time."""
        process_queue = self.process_queues.get(queue)
        if (process_queue is None or process_queue.dropped or process_queue.busy
                or not process_queue.messages or not process_queue.lock_held(now)):
            return None
        process_queue.busy = True
        offsets = sorted(process_queue.messages)[:max(1, self.config.consumeMessageBatchMaxSize)]
        return [process_queue.messages[offset] for offset in offsets]

    def orderly_done(self, queue, messages, status, now):
        """Generator: ``(ms to suspend the queue, or 0, now)`` after an orderly listener
        answered ``status`` (``ConsumeMessageOrderlyService#processConsumeResult``): the
        batch is done on success; otherwise it is consumed again after
        ``suspendCurrentQueueTimeMillis``, except messages reconsumed
        ``maxReconsumeTimes`` times already, which are sent back (to the DLQ)."""
        suspend = 0
        if succeeded(status):
            self._done(queue, messages)
        else:
            given_up = []
            for message in messages:
                if message.reconsume_times >= self.max_reconsume_times:
                    took, now = yield from self.send_back(message, now)
                    if took:
                        given_up.append(message)
                        continue
                message.reconsume_times += 1
                suspend = self.config.suspendCurrentQueueTimeMillis
            self._done(queue, given_up)
        process_queue = self.process_queues.get(queue)
        if process_queue is not None:
            process_queue.busy = False
        return suspend, now

    # ------------------------------------------------------------ offsets and upkeep

    def offset_to_commit(self, queue):
        return self.offsets.get(queue)

    def commit(self, now, queues=None):
        """Generator: clustering stores the consumed offsets on the brokers; broadcasting
        keeps them for the transport to write (:meth:`local_offsets`)."""
        if self.broadcasting:
            return now
        return (yield from super().commit(now, queues))

    def local_offsets(self):
        """The text of the local offset file (broadcasting)."""
        return encode_local_offsets({q: o for q, o in self.offsets.items() if o is not None})

    def maintain(self, now):
        """Generator: heartbeat (``heartbeatBrokerInterval``), rebalance
        (``rebalanceInterval``, or at once after :meth:`notified`), queue locks
        (orderly, every 20 s) and offset commits (``persistConsumerOffsetInterval``) when
        due; returns ``now``."""
        if now >= self.next_heartbeat:
            now = yield from self.heartbeat(now)
            self.next_heartbeat = now + self.config.heartbeatBrokerInterval
        if now >= self.next_rebalance:
            now = yield from self.rebalance(now)
            self.next_rebalance = now + self.config.rebalanceInterval
        if self.next_lock is not None and now >= self.next_lock:
            now = yield from self.renew_locks(now)
            self.next_lock = now + LOCK_INTERVAL_MS
        if self.next_commit is None:
            self.next_commit = now + self.config.persistConsumerOffsetInterval
        elif now >= self.next_commit:
            try:
                now = yield from self.commit(now)
            except ClientError:
                pass  # kept for the next time
            self.next_commit = now + self.config.persistConsumerOffsetInterval
        return now

    def next_due(self):
        """When :meth:`maintain` has something to do next (ms)."""
        return min(t for t in (self.next_heartbeat, self.next_rebalance, self.next_lock,
                               self.next_commit) if t is not None)

    def serve(self, request, now):
        """The answer to a request a broker sent (``ClientRemotingProcessor``), or ``None``:
        NOTIFY_CONSUMER_IDS_CHANGED of this group makes the next :meth:`maintain`
        rebalance; GET_CONSUMER_RUNNING_INFO is answered with :meth:`running_info`,
        GET_CONSUMER_STATUS_FROM_CLIENT with the consumed offsets of the topic asked
        about; RESET_CONSUMER_CLIENT_OFFSET is :meth:`reset_offsets`."""
        if request.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
            header = NotifyConsumerIdsChangedRequestHeader.from_ext_fields(request.ext_fields)
            if header.consumer_group == self.config.consumerGroup:
                self.next_rebalance = 0
        elif request.code == RequestCode.GET_CONSUMER_RUNNING_INFO:
            return request.response(ResponseCode.SUCCESS, body=self.running_info(now))
        elif request.code == RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT:
            header = GetConsumerStatusRequestHeader.from_ext_fields(request.ext_fields)
            return request.response(ResponseCode.SUCCESS, body=GetConsumerStatusBody(
                message_queue_table={WireQueue(q.topic, q.broker_name, q.queue_id): o
                                     for q, o in sorted(self.offsets.items())
                                     if q.topic == header.topic and o is not None}).to_json())
        elif request.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET:
            header = ResetOffsetRequestHeader.from_ext_fields(request.ext_fields)
            if header.group == self.config.consumerGroup:
                self.reset_offsets(decode_offset_table(request.body))
        return None

    def reset_offsets(self, offsets):
        """``MQClientInstance#resetOffset``: each queue held that ``offsets`` names starts
        again from its offset; what was pulled before (or is being pulled) is dropped."""
        for queue, offset in offsets.items():
            if queue in self.process_queues:
                self.process_queues[queue].dropped = True
                self.process_queues[queue] = fresh = ProcessQueue()
                fresh.next_offset = self.positions[queue] = self.offsets[queue] = offset
                self.committed.pop(queue, None)

    def running_info(self, now):
        """``ConsumerRunningInfo#encode`` as ``MQClientInstance#consumerRunningInfo`` fills it
        (what ``mqadmin consumerStatus`` shows): the settings as properties, the
        subscriptions, each queue's process queue; no statistics (zeros)."""
        properties = {name: "" if value is None else str(value)
                      for name, value in self.config.as_dict().items() if not callable(value)}
        properties.update(PROP_NAMESERVER_ADDR=self.config.namesrvAddr,
                          PROP_CONSUME_TYPE=ConsumeType.CONSUME_PASSIVELY.value,
                          PROP_CONSUMEORDERLY=str(self.orderly).lower(),
                          PROP_THREADPOOL_CORE_SIZE=str(self.config.consumeThreadMax),
                          PROP_CONSUMER_START_TIMESTAMP=str(self.started))
        queues = []
        for queue, process_queue in sorted(self.process_queues.items()):
            held = sorted(process_queue.messages)
            info = {"cachedMsgCount": len(held), "cachedMsgMaxOffset": held[-1] if held else 0,
                    "cachedMsgMinOffset": held[0] if held else 0,
                    "cachedMsgSizeInMiB": sum(len(m.body) for m in process_queue.messages.values()) >> 20,
                    "commitOffset": self.offsets.get(queue) or 0, "droped": process_queue.dropped,
                    "lastConsumeTimestamp": now, "lastLockTimestamp": process_queue.lock_time,
                    "lastPullTimestamp": now, "locked": process_queue.locked,
                    "transactionMsgCount": 0, "transactionMsgMaxOffset": 0,
                    "transactionMsgMinOffset": 0, "tryUnlockTimes": 0}
            queues.append('{"brokerName":%s,"queueId":%d,"topic":%s}:%s' % (
                json.dumps(queue.broker_name), queue.queue_id, json.dumps(queue.topic),
                json.dumps(info, separators=(",", ":"))))
        status = {"consumeFailedMsgs": 0, "consumeFailedTPS": 0.0, "consumeOKTPS": 0.0,
                  "consumeRT": 0.0, "pullRT": 0.0, "pullTPS": 0.0}
        return ('{"jstack":"","mqTable":{%s},"properties":%s,"statusTable":%s,"subscriptionSet":[%s]}' % (
            ",".join(queues), json.dumps(properties, separators=(",", ":"), sort_keys=True),
            json.dumps({topic: status for topic in sorted(self.subscriptions)}, separators=(",", ":")),
            ",".join(self.subscriptions[t].to_json().decode() for t in sorted(self.subscriptions))
        )).encode()

    def shutdown(self, now):
        """Generator: commit (clustering), unlock (orderly), leave the group
        (UNREGISTER_CLIENT), drop every queue (``DefaultMQPushConsumerImpl#shutdown``)."""
        try:
            now = yield from self.commit(now)
        except ClientError:
            pass
        queues = list(self.process_queues)
        if self.orderly and queues:
            now = yield from self.unlock(queues, now)
        now = yield from self.unregister(now)
        for process_queue in self.process_queues.values():
            process_queue.dropped = True
        return now
