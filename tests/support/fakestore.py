"""An in-memory :class:`~rmqproto.store.interfaces.IMessageStore` for broker unit tests.

Records are encoded with the real codec and laid out in one growing commit log; each
topic/queue keeps the physical offsets of its messages. ``next_status`` makes the next
put answer a chosen :class:`PutMessageStatus` (stored statuses still store).
"""

from twisted.internet import defer
from zope.interface import implementer

from rmqproto.codec.message import create_message_id, decode_record, encode_record
from rmqproto.store.interfaces import IMessageStore
from rmqproto.store.results import (
    AppendMessageResult, AppendMessageStatus, PutMessageResult, PutMessageStatus, QueryMessageResult,
)


@implementer(IMessageStore)
class FakeStore:
    def __init__(self, config=None, now=lambda: 1_700_000_000_000):
        self.config = config or {}
        self.now = now
        self.log = bytearray()
        self.queues = {}  # (topic, queue_id) -> [physical offsets]
        self.next_status = None
        self.loaded = self.started = self.stopped = False

    def load(self):
        self.loaded = True

    def start(self):
        self.started = True

    def shutdown(self):
        self.stopped = True

    def _append(self, record):
        queue = self.queues.setdefault((record.topic, record.queue_id), [])
        record.queue_offset = len(queue)
        record.commit_log_offset = len(self.log)
        record.store_timestamp = self.now()
        queue.append(len(self.log))
        self.log += encode_record(record)
        return create_message_id(record.store_host, record.commit_log_offset)

    def _put(self, records):
        status, self.next_status = self.next_status or PutMessageStatus.PUT_OK, None
        if not status.stored:
            return defer.succeed(PutMessageResult(status))
        start = len(self.log)
        ids = [self._append(r) for r in records]
        append = AppendMessageResult(AppendMessageStatus.PUT_OK, start, len(self.log) - start,
                                     ",".join(ids), self.now(), records[0].queue_offset, len(records))
        return defer.succeed(PutMessageResult(status, append))

    def put_message(self, record):
        return self._put([record])

    def put_messages(self, records):
        return self._put(records)

    def records(self, topic, queue_id=0):
        return [decode_record(self.log, offset) for offset in self.queues.get((topic, queue_id), [])]

    def get_max_offset_in_queue(self, topic, queue_id):
        return len(self.queues.get((topic, queue_id), []))

    def get_min_offset_in_queue(self, topic, queue_id):
        return 0

    def get_offset_in_queue_by_time(self, topic, queue_id, timestamp):
        return 0

    def get_earliest_message_time(self, topic, queue_id):
        records = self.records(topic, queue_id)
        return records[0].store_timestamp if records else -1

    def get_message_store_timestamp(self, topic, queue_id, consume_queue_offset):
        return self.records(topic, queue_id)[consume_queue_offset].store_timestamp

    def select_one_message_by_offset(self, commit_log_offset):
        if commit_log_offset >= len(self.log):
            return None
        record = decode_record(self.log, commit_log_offset)
        return bytes(self.log[commit_log_offset:commit_log_offset + record.store_size])

    def query_message(self, topic, key, max_num, begin_timestamp, end_timestamp):
        found = [self.select_one_message_by_offset(o) for (t, _), offsets in self.queues.items()
                 if t == topic for o in offsets
                 if key in decode_record(self.log, o).keys][:max_num]
        return QueryMessageResult(found, self.now(), len(self.log))

    def dispatch_behind_bytes(self):
        return 0

    def runtime_info(self):
        return {"commitLogMaxOffset": str(len(self.log)), "commitLogMinOffset": "0"}

    def delete_files_manually(self):
        self.manual_deletes = getattr(self, "manual_deletes", 0) + 1
