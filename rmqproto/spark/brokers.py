"""What the ``rocketmq`` source asks of a cluster, over the blocking lite pull consumer
(:class:`rmqproto.client.blocking.LitePullConsumer`): topics, queues, their offsets, and the
messages of one offset range. Used on Spark's driver (planning) and executors (reading).

Pulls go where the client sends them (``findBrokerAddressInSubscribe``: a slave while the
master is gone); a queue's bounds and time searches go to the master, else, when it does
not answer, to another broker of its name.
"""

import logging
import struct
import time
from bisect import bisect_left

from rmqproto.client.blocking import LitePullConsumer
from rmqproto.client.errors import BrokerError, ClientError
from rmqproto.client.lookup import request
from rmqproto.codec.bodies.client import SUB_ALL, SubscriptionData
from rmqproto.codec.bodies.route import TopicList
from rmqproto.codec.codes import RequestCode, ResponseCode
from rmqproto.spark.columns import BUFFERS, record_columns
from rmqproto.spark.offsets import DataLoss, matching_topics
from rmqproto.spark.rows import COLUMNS, arrow_schema, columns_batch

__all__ = ["Brokers", "lost_offsets_message"]

log = logging.getLogger(__name__)

#: How long a range read waits for messages that do not come (a broker restarting, a slave
#: catching up) before it fails.
STALL_SECONDS = 60
#: Pause between pulls that brought nothing.
IDLE_PAUSE = 0.05
#: PULL_MESSAGE requests a range read keeps in flight (the ``pullsInFlight`` option).
PULLS_IN_FLIGHT = 8
#: Where the queue offsets are among a :class:`~rmqproto.spark.columns.Columns`' buffers.
_QUEUE_OFFSETS = BUFFERS.index("queue_offset")
#: QUEUEOFFSET of a stored record, and where it is (``CommitLog.MessageExtEncoder``).
_FIRST_OFFSET, _FIRST_OFFSET_AT = struct.Struct(">q"), 20


def lost_offsets_message(queue, start, end):
    """The text naming offsets ``[start, end)`` of ``queue`` that retention deleted."""
    return ("offsets %d to %d of %s/%s/queue %d were deleted by retention before they were read"
            % (start, end - 1, queue.topic, queue.broker_name, queue.queue_id))


def _tag_filter(expression):
    """The tags (a ``pyarrow`` array) the ``subExpression`` ``"TagA || TagB"`` keeps; None
    for ``*``."""
    if expression in (None, "", SUB_ALL):
        return None
    import pyarrow as pa
    return pa.array(sorted(SubscriptionData.for_expression("-", expression).tags_set),
                    pa.string())


class Brokers(LitePullConsumer):
    """One connection set to a cluster, for the source's questions and reads."""

    def __init__(self, name_server, group, pull_batch_size=32, pulls_in_flight=PULLS_IN_FLIGHT):
        super().__init__(namesrvAddr=name_server, consumerGroup=group, autoCommit=False,
                         pullBatchSize=pull_batch_size)
        self.pulls_in_flight = pulls_in_flight
        self.schema = arrow_schema(COLUMNS)

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

    def bounds(self, queue):
        """``(min offset, max offset)`` of ``queue``: its first kept message and the offset
        after its last."""
        return (self.min_offset(queue, master_only=False),
                self.max_offset(queue, master_only=False))

    def offset_at(self, queue, timestamp, low, high):
        """The offset of ``queue``'s first message stored at or after ``timestamp`` (ms;
        ``high`` if none), between its bounds ``low`` and ``high``. The broker's
        SEARCH_OFFSET_BY_TIMESTAMP answers the offset *nearest* that time
        (``ConsumeQueue#getOffsetInQueueByTime``), so the messages around it are checked."""
        offset = min(max(self.offset_for_timestamp(queue, timestamp, master_only=False), low), high)
        while offset < high and self._stored_at(queue, offset) < timestamp:
            offset += 1
        while offset > low and self._stored_at(queue, offset - 1) >= timestamp:
            offset -= 1
        return offset

    def _stored_at(self, queue, offset):
        """The store timestamp (ms) of the message at ``offset`` of ``queue``."""
        for batch in self.read((queue, offset, offset + 1)):
            return batch.column("storeTimestamp")[0].value // 1000
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
        """The rows of the messages of ``offset_range`` (``[start, end)`` of one queue), as
        ``pyarrow.RecordBatch`` objects of :data:`~rmqproto.spark.rows.COLUMNS` in queue
        order, those whose tag ``expression`` does not list left out. Up to
        ``pulls_in_flight`` PULL_MESSAGEs of ``pullBatchSize`` messages are in flight at
        once, each from where the one before should end (the last answer's span: a broker
        answers at most ``maxTransferCountOnMessageInMemory``, 32, and fewer from disk); an
        answer that does not begin where the read stands is dropped and pulled again. The
        bodies of a round's answers are decoded together, into one batch. Offsets retention
        deleted meanwhile are a :class:`DataLoss` or skipped, as :meth:`check_start`."""
        queue, position, end = offset_range
        keep = _tag_filter(expression)
        position = self.check_start(queue, position, fail_on_data_loss)
        batch_size = self.config.pullBatchSize
        stride, stalled_since = batch_size, None
        while position < end:
            pulls = [(offset, min(batch_size, end - offset))
                     for offset in range(position, end, stride)[:self.pulls_in_flight]]
            bodies, moved = [], False
            for (offset, count), answer in zip(pulls, self.pull_many(queue, pulls)):
                if offset != position or isinstance(answer, ClientError):
                    break  # planned from a span that was not; or the route is fetched again
                code, header, body = answer
                following = min(max(header.next_begin_offset, offset), end)
                if code == ResponseCode.SUCCESS and following > offset:
                    if len(body) < _FIRST_OFFSET.size + _FIRST_OFFSET_AT:
                        raise ClientError("a pull of %s at %d answered FOUND without a message"
                                          % (queue, offset))
                    first = _FIRST_OFFSET.unpack_from(body, _FIRST_OFFSET_AT)[0]
                    if first > offset:
                        self._skip(queue, offset, min(first, end), fail_on_data_loss)
                    bodies.append(body)
                    if following < end:
                        stride = max(1, following - offset)
                elif code != ResponseCode.SUCCESS and following > position:  # OFFSET_MOVED
                    self._skip(queue, position, following, fail_on_data_loss)
                else:
                    break
                position, moved = following, True
            if bodies:
                yield from self._rows(queue, b"".join(bodies), end, keep)
            if moved:
                stalled_since = None
                continue
            now = time.monotonic()
            stalled_since = stalled_since or now
            if now - stalled_since > STALL_SECONDS:
                raise ClientError("no message at offset %d of %s for %d s (its range "
                                  "ends at %d)" % (position, queue, STALL_SECONDS, end))
            time.sleep(IDLE_PAUSE)

    def _rows(self, queue, records, end, keep):
        """The record batches of the stored ``records`` of FOUND pulls: their rows before
        ``end`` that ``keep`` keeps."""
        import pyarrow.compute as pc
        for columns in record_columns(records, 0, 0, len(records)):
            if columns.stop == "corrupt":
                raise ClientError("a pull of %s answered a record that does not parse: %s"
                                  % (queue, columns.error))
            if not columns.rows:
                continue
            offsets = memoryview(columns.buffers[_QUEUE_OFFSETS]).cast("q")
            batch = columns_batch(columns, self.schema, queue.broker_name)
            if offsets[-1] >= end:
                batch = batch.slice(0, bisect_left(offsets, end))
            if keep is not None:
                batch = batch.filter(pc.is_in(batch.column("tags"), value_set=keep))
            if batch.num_rows:
                yield batch

    def _skip(self, queue, position, resumed, fail_on_data_loss):
        """Offsets ``[position, resumed)`` vanished while reading: fail or warn."""
        message = lost_offsets_message(queue, position, resumed)
        if fail_on_data_loss:
            raise DataLoss(message + " (set failOnDataLoss to false to skip them)")
        log.warning("%s: skipped (failOnDataLoss is false)", message)
        return resumed
