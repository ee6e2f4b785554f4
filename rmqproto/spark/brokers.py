"""What the ``rocketmq`` source asks of a cluster, over the blocking lite pull consumer
(:class:`rmqproto.client.blocking.LitePullConsumer`): topics, queues, their offsets, and the
messages of one offset range. Used on Spark's driver (planning) and executors (reading).

Pulls go where the client sends them (``findBrokerAddressInSubscribe``: a slave while the
master is gone); a queue's bounds and time searches go to the master, else, when it does
not answer, to another broker of its name.
"""

import logging
import time

from rmqproto.client.blocking import LitePullConsumer
from rmqproto.client.errors import BrokerError, ClientError
from rmqproto.client.lookup import request
from rmqproto.codec.bodies.client import SUB_ALL, SubscriptionData
from rmqproto.codec.bodies.route import TopicList
from rmqproto.codec.codes import RequestCode, ResponseCode
from rmqproto.codec.headers import (GetMaxOffsetRequestHeader, GetMinOffsetRequestHeader,
                                    SearchOffsetRequestHeader)
from rmqproto.spark.offsets import DataLoss, matching_topics

__all__ = ["Brokers", "lost_offsets_message"]

log = logging.getLogger(__name__)

#: How long a range read waits for messages that do not come (a broker restarting, a slave
#: catching up) before it fails.
STALL_SECONDS = 60
#: Pause between pulls that brought nothing.
IDLE_PAUSE = 0.05


def lost_offsets_message(queue, start, end):
    """The text naming offsets ``[start, end)`` of ``queue`` that retention deleted."""
    return ("offsets %d to %d of %s/%s/queue %d were deleted by retention before they were read"
            % (start, end - 1, queue.topic, queue.broker_name, queue.queue_id))


def _tag_filter(expression):
    """A predicate on a message's tags for the ``subExpression`` ``"TagA || TagB"`` (or ``*``)."""
    if expression in (None, "", SUB_ALL):
        return None
    keep = frozenset(SubscriptionData.for_expression("-", expression).tags_set)
    return keep.__contains__


class Brokers(LitePullConsumer):
    """One connection set to a cluster, for the source's questions and reads."""

    def __init__(self, name_server, group, pull_batch_size=32):
        super().__init__(namesrvAddr=name_server, consumerGroup=group, autoCommit=False,
                         pullBatchSize=pull_batch_size)

    # ------------------------------------------------------------ topics and queues

    def topic_names(self):
        """Every topic the NameServer knows (GET_ALL_TOPIC_LIST_FROM_NAMESERVER)."""
        def steps(now):
            answer, now = yield from self.core.ask_nameserver(
                request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER), now)
            if answer.code != ResponseCode.SUCCESS:
                raise BrokerError(answer.code, answer.remark)
            return TopicList.from_json(answer.body).topic_list
        return self._run(steps)

    def queues(self, topics, pattern=None):
        """The readable queues of ``topics`` (each must exist), or of every topic ``pattern``
        matches (none is fine), sorted."""
        if pattern is not None:
            topics = matching_topics(pattern, self.topic_names())
        found = []
        for topic in topics:
            try:
                found += self.fetch_message_queues(topic)
            except ClientError as exc:
                if pattern is None:
                    raise ClientError("topic %s cannot be read: %s" % (topic, exc)) from exc
        return sorted(found)

    # ------------------------------------------------------------ offsets

    def _queue_offset(self, queue, code, header_class, **fields):
        header = header_class(topic=queue.topic, queue_id=queue.queue_id, **fields)

        def steps(now):
            try:
                answer, now = yield from self.core._broker_call(queue, code, header, now)
            except ClientError:  # the master is gone: another broker of its name
                answer, now = yield from self.core._broker_call(queue, code, header, now,
                                                                master_only=False)
            if answer.code != ResponseCode.SUCCESS:
                raise BrokerError(answer.code, answer.remark)
            return int(answer.ext_fields["offset"])
        return self._run(steps)

    def bounds(self, queue):
        """``(min offset, max offset)`` of ``queue``: its first kept message and the offset
        after its last."""
        return (self._queue_offset(queue, RequestCode.GET_MIN_OFFSET, GetMinOffsetRequestHeader),
                self._queue_offset(queue, RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader))

    def offset_at(self, queue, timestamp, low, high):
        """The offset of ``queue``'s first message stored at or after ``timestamp`` (ms;
        ``high`` if none), between its bounds ``low`` and ``high``. The broker's
        SEARCH_OFFSET_BY_TIMESTAMP answers the offset *nearest* that time
        (``ConsumeQueue#getOffsetInQueueByTime``), so the messages around it are checked."""
        offset = min(max(self._queue_offset(queue, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
                                            SearchOffsetRequestHeader, timestamp=timestamp),
                         low), high)
        while offset < high and self._stored_at(queue, offset) < timestamp:
            offset += 1
        while offset > low and self._stored_at(queue, offset - 1) >= timestamp:
            offset -= 1
        return offset

    def _stored_at(self, queue, offset):
        """The store timestamp of the message at ``offset`` of ``queue``."""
        for messages in self.read((queue, offset, offset + 1)):
            return messages[0].store_timestamp
        raise ClientError("no message at offset %d of %s" % (offset, queue))

    # ------------------------------------------------------------ reading

    def check_start(self, queue, start, fail_on_data_loss, low=None):
        """Where a read of ``queue`` from ``start`` begins: ``start``, or, when retention
        deleted it (below the queue's min offset ``low``, asked when not given), a
        :class:`DataLoss` (``fail_on_data_loss``) or the min offset with a warning."""
        if low is None:
            low = self.bounds(queue)[0]
        if start >= low:
            return start
        message = lost_offsets_message(queue, start, low)
        if fail_on_data_loss:
            raise DataLoss(message + " (set failOnDataLoss to false to skip them)")
        log.warning("%s: skipped (failOnDataLoss is false)", message)
        return low

    def read(self, offset_range, expression=SUB_ALL, fail_on_data_loss=True):
        """The messages of ``offset_range`` (``[start, end)`` of one queue), as lists of
        :class:`~rmqproto.client.ReceivedMessage` in queue order, those whose tag
        ``expression`` does not list left out. Offsets retention deleted meanwhile are a
        :class:`DataLoss` or skipped, as :meth:`check_start`."""
        queue, position, end = offset_range
        keep = _tag_filter(expression)
        position = self.check_start(queue, position, fail_on_data_loss)
        if position >= end:
            return
        self.assign([queue])
        batch_size = self.config.pullBatchSize
        stalled_since = None
        try:
            while position < end:
                self.core.positions[queue] = position  # no seek: it asks the master only
                self.config.pullBatchSize = min(batch_size, end - position)
                try:
                    messages, _ = self._run(self.core.pull, queue)
                except ClientError:
                    messages = None  # the route is fetched again; the next pull may go to a slave
                following = self.core.positions.get(queue, position)
                if messages:
                    if messages[0].queue_offset > position:
                        self._skip(queue, position, messages[0].queue_offset, fail_on_data_loss)
                    messages = [m for m in messages if m.queue_offset < end]
                    position = messages[-1].queue_offset + 1 if messages else end
                    if keep is not None:
                        messages = [m for m in messages if keep(m.tags)]
                    if messages:
                        yield messages
                    stalled_since = None
                elif messages is not None and following > position:  # PULL_OFFSET_MOVED
                    position = self._skip(queue, position, min(following, end), fail_on_data_loss)
                    stalled_since = None
                else:
                    now = time.monotonic()
                    stalled_since = stalled_since or now
                    if now - stalled_since > STALL_SECONDS:
                        raise ClientError("no message at offset %d of %s for %d s (its range "
                                          "ends at %d)" % (position, queue, STALL_SECONDS, end))
                    time.sleep(IDLE_PAUSE)
        finally:
            self.config.pullBatchSize = batch_size

    def _skip(self, queue, position, resumed, fail_on_data_loss):
        """Offsets ``[position, resumed)`` vanished while reading: fail or warn."""
        message = lost_offsets_message(queue, position, resumed)
        if fail_on_data_loss:
            raise DataLoss(message + " (set failOnDataLoss to false to skip them)")
        log.warning("%s: skipped (failOnDataLoss is false)", message)
        return resumed
