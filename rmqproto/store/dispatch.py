"""Dispatching commit-log records to consume queues and the index ("reput", ``ReputMessageService``).

A :class:`DispatchRequest` is what Java's ``checkMessageAndReturnSize`` extracts from a
record: where it is, its queue and logical offset, its tags code (for
``SCHEDULE_TOPIC_XXXX`` the delivery time, ``CommitLog#checkMessageAndReturnSize``) and its keys.
:class:`ReputService` walks the commit log from ``reput_from_offset`` and hands each
request to the dispatchers, exactly once and in order. On the hot paths requests are plain
tuples in the order of :class:`DispatchRequest`'s fields (dispatchers unpack them, so both
kinds do), which are cheaper to build.
"""

import re
import sys
from operator import attrgetter
from typing import NamedTuple

from rmqproto.codec import message as msg
from rmqproto.codec.native import speedups
from rmqproto.store.commitlog import consumable

__all__ = ["SCHEDULE_TOPIC", "DispatchRequest", "parse_delay_levels", "delay_level_to_queue_id",
           "dispatch_request", "requests_of_fields", "consume_queue_runs", "arrivals",
           "ReputService", "DISPATCH_BATCH"]

#: ``TopicValidator.RMQ_SYS_SCHEDULE_TOPIC``.
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
_TIME_UNITS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_LEVEL = re.compile(r"^(\d+)([smhd])$")
#: Most requests :class:`ReputService` hands the dispatcher at once.
DISPATCH_BATCH = 1024


def parse_delay_levels(text):
    """``ScheduleMessageService.parseDelayLevel``: ``{level: delay ms}`` of ``messageDelayLevel``
    ("1s 5s 10s …", levels counted from 1). ValueError for a word that is no delay, or for
    no word at all (Java's parse fails on both, and its broker does not start)."""
    table = {}
    for level, word in enumerate(text.split(), 1):
        match = _LEVEL.match(word)
        if not match:
            raise ValueError("bad delay level %r in %r" % (word, text))
        table[level] = int(match.group(1)) * _TIME_UNITS[match.group(2)]
    if not table:
        raise ValueError("no delay level in %r" % (text,))
    return table


def delay_level_to_queue_id(level):
    """``delayLevel2QueueId``: level n is queue n − 1 of ``SCHEDULE_TOPIC_XXXX``."""
    return level - 1


class DispatchRequest(NamedTuple):
    """One record as the dispatchers see it (``DispatchRequest``)."""

    topic: str
    queue_id: int
    commit_log_offset: int
    msg_size: int
    tags_code: int
    store_timestamp: int
    consume_queue_offset: int
    keys: str
    uniq_key: str
    sys_flag: int
    prepared_transaction_offset: int
    properties: dict


def tags_code_of(record, delay_table):
    """The consume-queue tags code: the ``TAGS`` hash, and for ``SCHEDULE_TOPIC_XXXX`` with a
    ``DELAY`` level the delivery time (store time + the level's delay, level clamped)."""
    return _tags_code(record.topic, record.properties, record.store_timestamp, delay_table)


def _tags_code(topic, properties, store_timestamp, delay_table):
    code = msg.tags_code(properties.get(msg.PROPERTY_TAGS))
    if topic == SCHEDULE_TOPIC:
        text = properties.get(msg.PROPERTY_DELAY_TIME_LEVEL)
        if text is not None:
            try:
                level = int(text)
            except ValueError:
                return code
            level = min(level, max(delay_table, default=0))
            if level > 0:
                return store_timestamp + delay_table[level]
    return code


#: A record's :func:`~rmqproto.codec.message.decode_dispatch_fields` tuple.
_fields_of = attrgetter(*msg.DISPATCH_FIELDS)


def dispatch_request(record, delay_table):
    """The :class:`DispatchRequest` of a decoded (or just written) record."""
    return DispatchRequest._make(requests_of_fields((_fields_of(record),), delay_table)[0])


def requests_of_fields(fields, delay_table):
    """The requests of :func:`~rmqproto.codec.message.decode_dispatch_fields` tuples, as plain
    tuples in :class:`DispatchRequest` order."""
    tags_code = msg.tags_code
    tags, keys, uniq_key = (msg.PROPERTY_TAGS, msg.PROPERTY_KEYS,
                            msg.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    return [(topic, queue_id, offset, size,
             tags_code(props.get(tags)) if topic != SCHEDULE_TOPIC
             else _tags_code(topic, props, store_timestamp, delay_table),
             store_timestamp, queue_offset, props.get(keys, ""), props.get(uniq_key), sys_flag,
             prepared, props)
            for topic, queue_id, queue_offset, offset, sys_flag, store_timestamp, prepared, props,
            size in fields]


#: The Python :func:`requests_of_fields`, the reference of its C version.
python_requests_of_fields = requests_of_fields
if speedups is not None:
    def requests_of_fields(fields, delay_table):  # noqa: F811
        """:func:`python_requests_of_fields` in C."""
        return speedups.requests_of_fields(
            fields, SCHEDULE_TOPIC,
            lambda topic, properties, store_timestamp:
                _tags_code(topic, properties, store_timestamp, delay_table))


def arrivals(requests):
    """What Java's ``MessageArrivingListener.arriving`` is told of each of ``requests``
    (tuples in ``DispatchRequest`` order): ``(topic, queue_id, max_offset, tags_code,
    store_timestamp, properties)``, where ``max_offset`` is the queue offset + 1."""
    for (topic, queue_id, _, _, tags_code, store_timestamp, queue_offset, _, _, _, _,
         properties) in requests:
        yield topic, queue_id, queue_offset + 1, tags_code, store_timestamp, properties


def consume_queue_runs(requests):
    """The consume-queue units of the consumable ``requests`` (tuples in ``DispatchRequest``
    order) by queue, ``{(topic, queue_id): [(offset, size, tags_code, cq_offset), …]}`` in
    order, and the store timestamp of the last of them (None without any)."""
    runs = {}
    store_timestamp = None
    for (topic, queue_id, offset, size, tags_code, timestamp, queue_offset, _, _, sys_flag,
         _, _) in requests:
        if consumable(sys_flag):
            units = runs.get((topic, queue_id))
            if units is None:
                runs[topic, queue_id] = units = []
            units.append((offset, size, tags_code, queue_offset))
            store_timestamp = timestamp
    return runs, store_timestamp


#: The Python :func:`consume_queue_runs`, the reference of its C version.
python_consume_queue_runs = consume_queue_runs
if speedups is not None:
    consume_queue_runs = speedups.consume_queue_runs  # noqa: F811


#: Where a record's commit-log offset is in its ``DISPATCH_FIELDS`` tuple.
_OFFSET_FIELD = msg.DISPATCH_FIELDS.index("commit_log_offset")


class ReputService:
    """Feeds every commit-log record after ``reput_from_offset`` to ``dispatch(requests)``, a
    list of :class:`DispatchRequest` at a time (at most :data:`DISPATCH_BATCH`), in order.

    ``commit_log`` is a :class:`~rmqproto.store.commitlog.CommitLog` (or the DLedger one):
    its ``max_offset`` is where the reput stops, ``find_mapped_file_by_offset`` and
    ``dispatch_scan`` give the segments and how their bytes are read. :meth:`do_reput`
    reads up to that end and stops there (or at bytes that are not a record yet).

    ``dispatch_usual(buffer, position, stop_at)``, when given, dispatches a batch of the
    usual records of a segment's written bytes from ``position`` (those starting before
    ``stop_at``) straight from the bytes, and returns the position after them, or None when
    it does not apply now. The reput then takes in Python only the records it leaves, one
    after each batch, or all of them for the rest of the reput after a None.
    """

    def __init__(self, commit_log, delay_table, dispatch, dispatch_usual=None):
        self.commit_log = commit_log
        self.delay_table = delay_table
        self.dispatch = dispatch
        self.dispatch_usual = dispatch_usual
        self.reput_from_offset = 0
        #: dispatch fields of records the reput moved past and has not dispatched yet
        self._deferred = []

    @property
    def behind(self):
        """``dispatchBehindBytes`` (never below 0: after a restart the DLedger commit log's
        end may lag the consume queues until its committed index is known again)."""
        return max(self.commit_log.max_offset - self.reput_from_offset, 0)

    def defer_records(self, fields, next_offset):
        """Records just appended at ``reput_from_offset`` up to ``next_offset``, with their
        :data:`~rmqproto.codec.message.DISPATCH_FIELDS` as the append gave them (no re-read
        needed): the reput moves past them now and :meth:`dispatch_deferred` dispatches
        them, with any others deferred before, as one batch."""
        self._deferred += fields
        self.reput_from_offset = next_offset

    @property
    def deferred(self):
        """Whether records wait for :meth:`dispatch_deferred`."""
        return bool(self._deferred)

    def dispatch_deferred(self):
        """Dispatch the records :meth:`defer_records` took, in order. If that fails, the
        reput goes back to the first of them, so that :meth:`do_reput` dispatches them again
        from the commit log (units already written are skipped), as after a put whose
        dispatch failed."""
        if self._deferred:
            fields, self._deferred = self._deferred, []
            try:
                self.dispatch(requests_of_fields(fields, self.delay_table))
            except BaseException:
                self.reput_from_offset = fields[0][_OFFSET_FIELD]
                raise

    def _dispatch(self, batch, next_offset):
        self.dispatch(batch)
        self.reput_from_offset = next_offset

    def do_reput(self, max_bytes=None):
        """``doReput``: dispatch what is written after ``reput_from_offset``, everything or
        about ``max_bytes`` (whole records, at least one); whether it reached the end."""
        self.dispatch_deferred()  # they come before what follows them
        log = self.commit_log
        log_end = log.max_offset
        if self.reput_from_offset >= log_end:
            return True  # all dispatched: the usual turn after puts, which deferred theirs
        if self.reput_from_offset < log.min_offset:
            self.reput_from_offset = log.min_offset
        stop_at = None if max_bytes is None else self.reput_from_offset + max_bytes
        usual = self.dispatch_usual
        while self.reput_from_offset < log_end:
            offset = self.reput_from_offset
            if stop_at is not None and offset >= stop_at:
                return False
            mapped = log.find_mapped_file_by_offset(offset)
            if mapped is None:
                return True
            base = mapped.file_from_offset
            scan = log.dispatch_scan(mapped, offset - base)
            limit = None if stop_at is None else max(stop_at, offset + 1) - base
            usual_limit = sys.maxsize if limit is None else limit
            while True:
                if usual is not None:
                    end = usual(scan.buffer, scan.position, usual_limit)
                    if end is None:
                        usual = None
                    else:
                        scan.position = end
                        self.reput_from_offset = base + end
                # what C left (the end, a blank, another record: taken alone), or all
                fields = scan.take(DISPATCH_BATCH if usual is None else 1, limit)
                if fields:
                    self._dispatch(requests_of_fields(fields, self.delay_table),
                                   base + scan.position)
                if scan.stop is not None or (limit is not None and scan.position >= limit):
                    break
            if scan.stop is None:
                return False  # max_bytes reached
            if scan.stop == "blank":
                self.reput_from_offset = log.roll_next_file(base)
            elif mapped.is_full and scan.stop == "empty" and scan.position >= mapped.file_size - 8:
                self.reput_from_offset = log.roll_next_file(base)
            else:
                break  # the end, or bytes that are not a record (yet): wait for more data
        return True
