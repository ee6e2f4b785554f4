"""An in-memory :class:`~rmqproto.store.interfaces.IMessageStore` for broker unit tests.

Records are encoded with the real codec into one growing commit log; each topic/queue
keeps ``(physical offset, size, tags code)`` units, as a consume queue does. The store's
own pure rules decide what is stored where: a ``DELAY`` level moves a message (not a
batch message) to ``SCHEDULE_TOPIC_XXXX`` (``to_schedule_topic``); a batch message keeps
the stored properties string of Java's batch rule; the tags code is the dispatcher's
(``dispatch_request``: the delivery time in the schedule topic), and each put's request is
handed to the ``dispatch_listeners`` (after the ``append_listeners``, which the real store
calls once at a reactor turn's end; here each put is a turn of its own). ``get_message`` answers
Java's statuses; nothing waits for a flush.

Knobs: ``put_status`` (every put answers it; the stored statuses still store),
``suggest_slave``, ``min_offsets``. What the broker did: ``puts`` (the records stored),
``waits`` (``wait_store_msg_ok`` of each put), ``loaded`` / ``started`` / ``stopped``.
"""

from twisted.internet.defer import succeed
from twisted.internet.task import Clock
from zope.interface import implementer

from rmqproto.codec.message import decode_record, encode_record
from rmqproto.store.config import STORE_SETTINGS
from rmqproto.store.defaultstore import to_schedule_topic
from rmqproto.store.dispatch import dispatch_request, parse_delay_levels
from rmqproto.store.interfaces import IMessageStore
from rmqproto.store.results import (
    AppendMessageResult, AppendMessageStatus, GetMessageResult, GetMessageStatus as G,
    PutMessageResult, PutMessageStatus, QueryMessageResult,
)

#: The clock a store gets when none is given (seconds).
NOW = 1_700_000_000


@implementer(IMessageStore)
class FakeStore:
    """``clock`` gives the store time (a :class:`Clock` at :data:`NOW` by default);
    ``config`` overrides MessageStoreConfig settings."""

    def __init__(self, clock=None, config=None):
        if clock is None:
            clock = Clock()
            clock.advance(NOW)
        self.clock = clock
        self.config, _ = STORE_SETTINGS.resolve(config or {})
        self.delay_table = parse_delay_levels(self.config["messageDelayLevel"])
        self.log = bytearray()
        self.queues = {}  # (topic, queue_id) -> [(physical offset, size, tags code)]
        self.min_offsets = {}  # (topic, queue_id) -> logical offset of the first unit
        self.dispatch_listeners = []
        self.append_listeners = []
        self.put_status = None
        self.suggest_slave = False
        self.puts = []
        self.waits = []
        self.manual_deletes = 0
        self.expired_queue_cleanings = 0
        self.loaded = self.started = self.stopped = False

    def now(self):
        return int(self.clock.seconds() * 1000)

    # ------------------------------------------------------------ lifecycle

    def load(self):
        self.loaded = True

    def start(self):
        self.started = True

    def shutdown(self):
        self.stopped = True

    def delete_files_manually(self):
        self.manual_deletes += 1

    # ------------------------------------------------------------ putting

    def put_message(self, record, wait_store_msg_ok=True):
        return self._put([record], wait_store_msg_ok)

    def put_messages(self, records, wait_store_msg_ok=True):
        return self._put(list(records), wait_store_msg_ok, batch=True)

    def _put(self, records, wait, batch=False):
        self.waits.append(wait)
        status = self.put_status or PutMessageStatus.PUT_OK
        if not status.stored:
            return succeed(PutMessageResult(status))
        start = len(self.log)
        for record in records:
            self._append(record, batch)
        first = records[0]
        msg_id = ",".join(r.msg_id for r in records)
        return succeed(PutMessageResult(status, AppendMessageResult(
            AppendMessageStatus.PUT_OK, start, len(self.log) - start, msg_id,
            first.store_timestamp, first.queue_offset, len(records))))

    def _append(self, record, batch):
        if not batch:  # a batch message keeps its topic, whatever its own DELAY says
            to_schedule_topic(record, max(self.delay_table))
        key = (record.topic, record.queue_id)
        queue = self.queues.setdefault(key, [])
        record.queue_offset = self.min_offsets.get(key, 0) + len(queue)
        record.commit_log_offset = len(self.log)
        record.store_timestamp = self.now()
        record.store_size = None
        raw = encode_record(record, getattr(record, "stored_properties", None))
        self.log += raw
        request = dispatch_request(record, self.delay_table)
        queue.append((record.commit_log_offset, len(raw), request.tags_code))
        self.puts.append(record)
        for listener in self.append_listeners:
            listener()
        for listener in self.dispatch_listeners:
            listener([request])

    # ------------------------------------------------------------ reading

    def records(self, topic, queue_id=0):
        """The decoded records of one queue (test helper)."""
        return [decode_record(self.log, unit[0]) for unit in self.queues.get((topic, queue_id), [])]

    def _unit(self, topic, queue_id, offset):
        queue = self.queues.get((topic, queue_id), [])
        index = offset - self.get_min_offset_in_queue(topic, queue_id)
        return queue[index] if 0 <= index < len(queue) else None

    def get_min_offset_in_queue(self, topic, queue_id):
        return self.min_offsets.get((topic, queue_id), 0)

    def get_max_offset_in_queue(self, topic, queue_id):
        queue = self.queues.get((topic, queue_id))
        return 0 if queue is None else self.get_min_offset_in_queue(topic, queue_id) + len(queue)

    def get_message(self, group, topic, queue_id, offset, max_msg_nums, message_filter=None):
        low = self.get_min_offset_in_queue(topic, queue_id)
        high = self.get_max_offset_in_queue(topic, queue_id)
        if high == 0:
            return GetMessageResult(G.NO_MESSAGE_IN_QUEUE)
        if offset < low:
            return GetMessageResult(G.OFFSET_TOO_SMALL, next_begin_offset=low, min_offset=low,
                                    max_offset=high)
        if offset == high:
            return GetMessageResult(G.OFFSET_OVERFLOW_ONE, next_begin_offset=offset, min_offset=low,
                                    max_offset=high)
        if offset > high:
            return GetMessageResult(G.OFFSET_OVERFLOW_BADLY, next_begin_offset=high, min_offset=low,
                                    max_offset=high)
        found, offsets, position = [], [], offset
        while position < high and len(found) < max_msg_nums:
            phy, size, tags_code = self._unit(topic, queue_id, position)
            position += 1
            if message_filter is not None and not message_filter(tags_code):
                continue
            found.append(bytes(self.log[phy:phy + size]))
            offsets.append(position - 1)
        return GetMessageResult(G.FOUND if found else G.NO_MATCHED_MESSAGE, found, position, low,
                                high, self.suggest_slave, offsets)

    def get_commit_log_offset_in_queue(self, topic, queue_id, consume_queue_offset):
        unit = self._unit(topic, queue_id, consume_queue_offset)
        return unit[0] if unit else 0

    def get_message_store_timestamp(self, topic, queue_id, consume_queue_offset):
        unit = self._unit(topic, queue_id, consume_queue_offset)
        return decode_record(self.log, unit[0]).store_timestamp if unit else -1

    def get_earliest_message_time(self, topic, queue_id):
        return self.get_message_store_timestamp(
            topic, queue_id, self.get_min_offset_in_queue(topic, queue_id))

    def get_offset_in_queue_by_time(self, topic, queue_id, timestamp):
        offset = self.get_min_offset_in_queue(topic, queue_id)
        high = self.get_max_offset_in_queue(topic, queue_id)
        while offset < high and self.get_message_store_timestamp(topic, queue_id, offset) < timestamp:
            offset += 1
        return offset

    def select_one_message_by_offset(self, commit_log_offset):
        if not 0 <= commit_log_offset < len(self.log):
            return None
        size = decode_record(self.log, commit_log_offset).store_size
        return bytes(self.log[commit_log_offset:commit_log_offset + size])

    def look_message_by_offset(self, commit_log_offset):
        if not 0 <= commit_log_offset < len(self.log):
            return None
        return decode_record(self.log, commit_log_offset)

    def query_message(self, topic, key, max_num, begin_timestamp, end_timestamp):
        found = [bytes(self.log[phy:phy + size])
                 for (t, _), queue in self.queues.items() if t == topic for phy, size, _ in queue
                 if key in decode_record(self.log, phy).keys][:max_num]
        return QueryMessageResult(found, self.now(), len(self.log))

    def get_max_phy_offset(self):
        return len(self.log)

    def get_min_phy_offset(self):
        return 0

    def get_commit_log_data(self, offset, max_size):
        return bytes(self.log[offset:offset + max_size]) if offset >= 0 else b""

    def append_to_commit_log(self, start_offset, data):
        if start_offset != len(self.log):
            return False
        self.log += data
        return True

    def dispatch_behind_bytes(self):
        return 0

    def get_topics(self):
        return sorted({topic for topic, _ in self.queues})

    def clean_unused_topic(self, topics):
        doomed = {topic for topic, _ in self.queues if topic not in topics}
        for key in [key for key in self.queues if key[0] in doomed]:
            del self.queues[key]
        return len(doomed)

    def clean_expired_consumer_queue(self):
        self.expired_queue_cleanings += 1
        return 0

    def query_consume_queue(self, topic, queue_id, index, count):
        queue = self.queues.get((topic, queue_id))
        if queue is None:
            return None
        low = self.get_min_offset_in_queue(topic, queue_id)
        units = queue[index - low:index - low + max(count, 0)] if low <= index < low + len(queue) else None
        return low, low + len(queue), units

    def runtime_info(self):
        return {"commitLogMaxOffset": str(len(self.log)), "commitLogMinOffset": "0"}
