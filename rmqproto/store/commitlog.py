"""The commit log: every message of every topic, appended to fixed-size segments (Java ``CommitLog``).

:class:`CommitLog` owns the segment queue and the per topic-queue counters of the next
logical offset (Java's ``topicQueueTable``). Appending assigns the commit-log offset,
queue offset and store timestamp, writes the end-of-file blank when a record does not
fit the current segment and continues in a new one. Checks that decide a put's status
before anything is written are pure functions here (:func:`check_message`,
:func:`check_batch`).
"""

from functools import lru_cache

from rmqproto.codec import message as msg
from rmqproto.codec.headers import Field
from rmqproto.codec.native import speedups
from rmqproto.errors import CodecError
from rmqproto.store.consumequeue import names_a_directory
from rmqproto.store.mappedfile import MappedFileQueue, file_by_offset, message_at
from rmqproto.store.results import (APPENDED, PUT_OK, AppendMessageResult, AppendMessageStatus,
                                    PutMessageStatus)

__all__ = ["CommitLog", "check_message", "check_usual_message", "check_batch", "check_packed_batch", "topic_illegal",
           "MAX_TOPIC_LENGTH", "consumable"]

#: ``Byte.MAX_VALUE``: the longest topic a 4.x record can carry.
MAX_TOPIC_LENGTH = 127
#: Bytes Java's encoder reserves beyond ``maxMessageSize`` for the rest of a record.
_ENCODER_HEADROOM = 64 * 1024
_CONSUMABLE = (msg.TRANSACTION_NOT_TYPE, msg.TRANSACTION_COMMIT_TYPE)
_TRANSACTION_BITS = msg.TRANSACTION_ROLLBACK_TYPE
_MIN_BLANK = msg.END_FILE_MIN_BLANK_LENGTH
_HOST_FLAGS = msg.BORNHOST_V6_FLAG | msg.STOREHOSTADDRESS_V6_FLAG


def consumable(sys_flag):
    """Whether a record goes to a consume queue (not a prepared or rolled-back transaction)."""
    return sys_flag & _TRANSACTION_BITS in _CONSUMABLE


@lru_cache(maxsize=4096)  # a broker's topics repeat from message to message
def legal_topic_length(topic):
    """The UTF-8 length of ``topic``, or None when it cannot go into a 4.x record (over 127
    characters or UTF-8 bytes, or empty) or cannot name its consume queue's directory
    (``.``, ``..``, a ``/`` or a NUL)."""
    length = len(topic.encode("utf-8", "surrogateescape"))
    if (len(topic) > MAX_TOPIC_LENGTH or length > MAX_TOPIC_LENGTH or not length
            or not names_a_directory(topic)):
        return None
    return length


def topic_illegal(topic):
    """Whether ``topic`` has no :func:`legal_topic_length`."""
    return legal_topic_length(topic) is None


def _check_sizes(record, props, overhead, max_message_size):
    """The status of ``record`` with its encoded properties ``props`` (None: not encodable)
    and a topic already checked (``overhead``: the record's length without body and
    properties): MESSAGE_ILLEGAL for properties over 32767 characters,
    PROPERTIES_SIZE_EXCEEDED over 32767 bytes, MESSAGE_ILLEGAL for a body over
    ``maxMessageSize`` or a record beyond the encoder's buffer. On PUT_OK the record gets
    the 4.x magic code and its ``store_size``."""
    if props is None:
        return PutMessageStatus.MESSAGE_ILLEGAL
    if len(props) > msg.MAX_PROPERTIES_LENGTH:
        if len(props.decode("utf-8", "surrogateescape")) > msg.MAX_PROPERTIES_LENGTH:
            return PutMessageStatus.MESSAGE_ILLEGAL
        return PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    body_length = len(record.body)
    if body_length > max_message_size:
        return PutMessageStatus.MESSAGE_ILLEGAL
    length = overhead + body_length + len(props)
    if length > max_message_size + _ENCODER_HEADROOM:
        return PutMessageStatus.MESSAGE_ILLEGAL
    record.magic_code = msg.MESSAGE_MAGIC_CODE
    record.store_size = length
    return PUT_OK


def check_message(record, max_message_size):
    """The put status a single message gets before it is written (``checkMessage`` and the
    encoder's checks), the UTF-8 properties string the append writes and the record's size
    (both None unless the status is PUT_OK): topic over 127 characters (or bytes: the 4.x record has a one-byte
    length) or a properties string over 32767 characters is MESSAGE_ILLEGAL, properties
    over 32767 bytes PROPERTIES_SIZE_EXCEEDED, a body over ``maxMessageSize``
    MESSAGE_ILLEGAL. Beyond Java, whose dispatch would then fail or nest directories: a
    topic that cannot name its consume queue's directory (``.``, ``..``, a ``/`` or a NUL,
    say from a consumer group's retry topic) is MESSAGE_ILLEGAL. A message that passes
    gets the 4.x magic code and its ``store_size``."""
    topic_length = legal_topic_length(record.topic)
    if topic_length is None:
        return PutMessageStatus.MESSAGE_ILLEGAL, None, None
    if speedups is not None:
        checked = speedups.check_message_record(record, topic_length, max_message_size)
        if checked is not None:  # it passed; otherwise the lines below say why
            return PUT_OK, *checked
    props = msg.properties_utf8(record.properties)
    overhead = msg.record_length(record.sys_flag, 0, topic_length, 0)
    status = _check_sizes(record, props, overhead, max_message_size)
    if status is not PUT_OK:
        return status, None, None
    return status, props, record.store_size


def python_check_usual_message(record, max_message_size):
    """The checks of a single put for the usual message in one step: a record without a
    ``DELAY`` property, whose born and store hosts are not IPv6 and whose sys flag has no
    IPv6 host bits (nothing for the put to move or fix), that passes :func:`check_message`:
    ``(properties bytes, size)`` as that gives them. None for any other record, which the
    put checks in full."""
    if (msg.PROPERTY_DELAY_TIME_LEVEL in record.properties or record.sys_flag & _HOST_FLAGS
            or ":" in record.born_host[0] or ":" in record.store_host[0]):
        return None
    status, properties, total = check_message(record, max_message_size)
    return (properties, total) if status is PUT_OK else None


#: :func:`python_check_usual_message`, in C where the speedups are built.
check_usual_message = (python_check_usual_message if speedups is None
                       else speedups.check_usual_message)


def check_batch(records, max_message_size):
    """The put status of a batch before it is written (``checkMessages``,
    ``asyncPutMessages`` and its batch encoder ``MessageExtBatchEncoder``), and with it the list of the
    properties strings the append writes and the records' total size (None unless PUT_OK).

    As Java: a topic over 127 characters, a batch body over ``maxMessageSize`` (a
    :class:`~rmqproto.codec.message.BatchRecords`' ``body_length``, else the client
    encoding of the records), a transaction flag or a delay level of the batch's own
    properties (a :class:`~rmqproto.codec.message.BatchRecords`' ``properties``; a
    ``DELAY`` among a message's properties is stored as it is) are MESSAGE_ILLEGAL; where
    Java's encoder throws (batch properties over 32767 bytes, a ``DELAY`` that is not an
    int) this raises :class:`~rmqproto.errors.CodecError`. Beyond Java, which would write a
    corrupt record: a topic over 127 UTF-8 bytes or one that cannot name a directory (as
    :func:`check_message`), records of several queues or none are MESSAGE_ILLEGAL, a stored
    properties string over 32767 bytes PROPERTIES_SIZE_EXCEEDED.
    A :class:`~rmqproto.codec.message.BatchRecord`'s string is the one it was decoded
    with; each record that passes gets the 4.x magic code and its ``store_size``."""
    if not records:
        return PutMessageStatus.MESSAGE_ILLEGAL, None, None
    first = records[0]
    topic, queue_id = first.topic, first.queue_id
    body_length = getattr(records, "body_length", None)
    if not _batch_head_legal(first, body_length, getattr(records, "properties", None),
                             max_message_size):
        return PutMessageStatus.MESSAGE_ILLEGAL, None, None
    topic_length = legal_topic_length(topic)  # legal: _batch_head_legal checked it
    if speedups is not None:
        checked = speedups.check_batch_records(records, topic, queue_id, topic_length)
        if checked is not None:  # all passed; otherwise the loop below says why
            return PUT_OK, *checked
    overheads = {}  # sys flag -> record length without body and properties
    client_length = total = 0
    properties = []
    for record in records:
        sys_flag = record.sys_flag
        if (record.topic != topic or record.queue_id != queue_id
                or sys_flag & msg.TRANSACTION_ROLLBACK_TYPE):
            return PutMessageStatus.MESSAGE_ILLEGAL, None, None
        props = getattr(record, "stored_properties", None)
        if props is None:
            props = msg.properties_utf8(record.properties)
            if props is None:
                return PutMessageStatus.MESSAGE_ILLEGAL, None, None
            client_length += 22 + len(record.body) + len(props)
        if len(props) > msg.MAX_PROPERTIES_LENGTH:
            return PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, None, None
        overhead = overheads.get(sys_flag)
        if overhead is None:
            overhead = overheads[sys_flag] = msg.record_length(sys_flag, 0, topic_length, 0)
        record.magic_code = msg.MESSAGE_MAGIC_CODE
        record.store_size = size = overhead + len(record.body) + len(props)
        total += size
        properties.append(props)
    if body_length is None and client_length > max_message_size:
        return PutMessageStatus.MESSAGE_ILLEGAL, None, None
    return PUT_OK, properties, total


def _batch_head_legal(first, body_length, batch_properties, max_message_size,
                      batch_raw=None):
    """:func:`check_batch`'s checks of what the records share (``first``'s topic and sys
    flag, the body length and the batch's properties, ``batch_raw`` their string as UTF-8
    when known): False for MESSAGE_ILLEGAL, CodecError where Java throws."""
    if (topic_illegal(first.topic)
            or (body_length is not None and body_length > max_message_size)
            or first.sys_flag & msg.TRANSACTION_ROLLBACK_TYPE):
        return False
    if batch_properties is not None:
        if batch_delay_level(batch_properties) > 0:
            return False
        if batch_raw is None:
            batch_raw = msg.properties_to_string(batch_properties).encode(
                "utf-8", "surrogateescape")
        if len(batch_raw) > msg.MAX_PROPERTIES_LENGTH:
            raise CodecError("the batch's properties of %d bytes exceed %d"
                             % (len(batch_raw), msg.MAX_PROPERTIES_LENGTH))
    return True


def check_packed_batch(batch, max_message_size):
    """:func:`check_batch` of a :class:`~rmqproto.codec.message.PackedBatch`: its records
    share all but their flags, bodies and properties, and its stored properties strings
    were measured when it was packed, so only what they share is checked. The properties
    list is None (the writer takes the strings from the body)."""
    prototype = batch.prototype
    if not _batch_head_legal(prototype, batch.body_length, batch.properties, max_message_size,
                             batch.batch_raw):
        return PutMessageStatus.MESSAGE_ILLEGAL, None, None
    overhead = msg.record_length(prototype.sys_flag, 0, legal_topic_length(prototype.topic), 0)
    return PUT_OK, None, batch.count * overhead + batch.payload


#: ``Integer.parseInt``, as ``getDelayTimeLevel`` reads ``DELAY``.
_PARSE_INT = Field(msg.PROPERTY_DELAY_TIME_LEVEL, "int").type.parse


def batch_delay_level(properties):
    """``MessageExtBatch.getDelayTimeLevel``: the ``DELAY`` of the batch's ``properties``
    read by ``Integer.parseInt``, 0 without one; CodecError where Java throws."""
    text = properties.get(msg.PROPERTY_DELAY_TIME_LEVEL)
    if text is None:
        return 0
    try:
        return _PARSE_INT(text)
    except ValueError:
        raise CodecError("the batch's DELAY %r is not an int" % (text,)) from None


def delay_level(record):
    """``getDelayTimeLevel``: the ``DELAY`` property as an int, 0 when absent or not a number."""
    text = record.properties.get(msg.PROPERTY_DELAY_TIME_LEVEL)
    if not text:
        return 0
    try:
        return int(text)
    except ValueError:
        return 0


class CommitLog:
    """The commit-log segments under ``directory`` and the queue-offset counters."""

    def __init__(self, directory, file_size):
        self.queue = MappedFileQueue(directory, file_size)
        self.file_size = file_size
        #: ``(topic, queue_id) -> next logical offset`` (``topicQueueTable``).
        self.topic_queue_table = {}

    def load(self):
        self.queue.load()

    @property
    def max_offset(self):
        return self.queue.max_offset

    @property
    def min_offset(self):
        """``getMinOffset``: start of the first segment, -1 without segments."""
        return self.queue.min_offset

    def roll_next_file(self, offset):
        """``rollNextFile``: the start of the segment after the one holding ``offset``."""
        return offset + self.file_size - offset % self.file_size

    # -- appending

    def _file_for(self, length):
        """The segment a record of ``length`` bytes goes to, writing the blank if needed;
        None when even an empty segment is too small."""
        if length + msg.END_FILE_MIN_BLANK_LENGTH > self.file_size:
            return None
        mapped = self.queue.last_mapped_file(0)
        remaining = mapped.remaining
        if msg.needs_blank(length, remaining):
            mapped.append(msg.encode_blank(remaining)[:remaining])
            mapped.wrote_position = self.file_size
            mapped = self.queue.last_mapped_file(0)
        return mapped

    def append(self, records, store_timestamp, properties, total):
        """Append records of one queue that passed :func:`check_message` or
        :func:`check_batch` (``properties`` and ``total``: the strings it encoded and the
        size it measured) contiguously (one segment, consecutive queue offsets), encoded in
        one pass straight into the segment's mapping
        (:func:`~rmqproto.codec.message.write_stored_batch`); each record gets its offsets,
        store timestamp and body CRC. A :class:`~rmqproto.codec.message.PackedBatch` that
        passed :func:`check_packed_batch` is written from its body
        (:func:`~rmqproto.codec.message.write_packed_batch`), with no records. A record
        that is not consumable (a prepared or rolled-back transaction, only ever alone)
        gets queue offset 0 and leaves the queue's counter as it is, as Java's
        ``doAppend``."""
        packed = isinstance(records, msg.PackedBatch)
        first = records.prototype if packed else records[0]
        key = (first.topic, first.queue_id)
        files = self.queue.files
        mapped = files[-1] if files else None
        # needs_blank(total, remaining), without the call: the usual record fits the last segment
        if mapped is None or total + _MIN_BLANK > self.file_size - mapped.wrote_position:
            mapped = self._file_for(total)
            if mapped is None:
                return AppendMessageResult(AppendMessageStatus.MESSAGE_SIZE_EXCEEDED)
        position = mapped.wrote_position
        begin_offset = mapped.file_from_offset + position
        is_consumable = first.sys_flag & _TRANSACTION_BITS in _CONSUMABLE  # consumable()
        begin_queue_offset = self.topic_queue_table.get(key, 0) if is_consumable else 0
        if packed:
            ids, dispatch_fields = msg.write_packed_batch(
                mapped.mm, position, total, records, store_timestamp, begin_offset,
                begin_queue_offset)
        else:
            ids, dispatch_fields = msg.write_stored_batch(
                mapped.mm, position, total, records, properties, store_timestamp,
                begin_offset, begin_queue_offset)
        mapped.wrote_position = position + total
        mapped.store_timestamp = store_timestamp
        if is_consumable:
            self.topic_queue_table[key] = begin_queue_offset + len(records)
        return AppendMessageResult(
            APPENDED, begin_offset, total,
            ids[0] if len(ids) == 1 else ",".join(ids), store_timestamp,
            begin_queue_offset, len(records), dispatch_fields)

    def append_message(self, record, store_timestamp, properties, total):
        """:meth:`append` of one record that passed :func:`check_message`: the usual one (it
        fits the last segment, the C writer takes it) in one C call, without the batch's
        steps; anything else through :meth:`append`."""
        files = self.queue.files
        mapped = files[-1] if files else None
        if mapped is None or speedups is None:
            return self.append([record], store_timestamp, [properties], total)
        position = mapped.wrote_position
        if total + _MIN_BLANK > self.file_size - position:  # needs_blank: a new segment
            return self.append([record], store_timestamp, [properties], total)
        begin_offset = mapped.file_from_offset + position
        key = (record.topic, record.queue_id)
        is_consumable = record.sys_flag & _TRANSACTION_BITS in _CONSUMABLE  # consumable()
        queue_offset = self.topic_queue_table.get(key, 0) if is_consumable else 0
        written = speedups.write_stored_batch(mapped.mm, position, total, [record],
                                              [properties], store_timestamp, begin_offset,
                                              queue_offset)
        if written is None:  # a record the C writer leaves to Python
            return self.append([record], store_timestamp, [properties], total)
        ids, dispatch_fields = written
        mapped.wrote_position = position + total
        mapped.store_timestamp = store_timestamp
        if is_consumable:
            self.topic_queue_table[key] = queue_offset + 1
        return AppendMessageResult(APPENDED, begin_offset, total, ids[0], store_timestamp,
                                   queue_offset, 1, dispatch_fields)

    def append_data(self, start_offset, data):
        """``appendData`` (an HA slave): raw bytes at exactly ``start_offset``, the current end
        (or the start of a segment when the log is empty); False otherwise."""
        if self.queue.files:
            if start_offset != self.max_offset:
                return False
        elif start_offset % self.file_size:
            return False
        view = memoryview(data)
        while view:
            mapped = self.queue.last_mapped_file(start_offset)
            n = min(mapped.remaining, len(view))
            mapped.append(view[:n])
            view = view[n:]
        return True

    def last_segment(self):
        """The segment being written (replicated bytes go there next), or None."""
        files = self.queue.files
        return files[-1] if files else None

    def extend_to(self, end):
        """Bytes up to ``end`` were written into the last segment's mapping in place (by an
        HA receive thread): move its write position there. False when ``end`` is behind it
        or outside the segment."""
        last = self.last_segment()
        if last is None:
            return False
        position = end - last.file_from_offset
        if not last.wrote_position <= position <= last.file_size:
            return False
        last.wrote_position = position
        return True

    # -- reading

    @property
    def files(self):
        """The segments reads look in, in offset order."""
        return self.queue.files

    def find_mapped_file_by_offset(self, offset):
        """The segment holding ``offset`` (the reput's walk), or None."""
        return self.queue.find_mapped_file_by_offset(offset)

    @staticmethod
    def dispatch_scan(mapped, position):
        """A :class:`~rmqproto.codec.message.DispatchScan` of the written records of segment
        ``mapped`` from ``position`` (the reput's reading of a segment)."""
        return msg.iter_dispatch_fields(memoryview(mapped.mm)[:mapped.wrote_position], position)

    def get_message(self, offset, size):
        """``getMessage(offset, size)``: the stored bytes, or None if not (or no longer) there."""
        return message_at(self.queue.files, self.file_size, offset, size)

    def get_data(self, offset, max_size=None, return_first_on_not_found=None):
        """``getData``: written bytes from ``offset`` to the end of its segment (capped)."""
        if return_first_on_not_found is None:
            return_first_on_not_found = offset == 0
        mapped = file_by_offset(self.queue.files, self.file_size, offset,
                                return_first_on_not_found)  # the queue's, one call less
        if mapped is None:
            return None
        return mapped.read_from(offset % self.file_size, max_size)

    def view(self, offset, max_size):
        """:meth:`get_data` without the copy: a memoryview of the mapping (release it before
        the segment can close), or None."""
        mapped = file_by_offset(self.queue.files, self.file_size, offset)
        pos = offset % self.file_size
        if mapped is None or pos >= mapped.wrote_position:
            return None
        return memoryview(mapped.mm)[pos:min(mapped.wrote_position, pos + max_size)]

    def record_size_at(self, offset):
        """TOTALSIZE of the record at ``offset``, or None."""
        head = self.get_message(offset, 4)
        if head is None:
            return None
        return int.from_bytes(head, "big", signed=True)

    def select_one_message(self, offset):
        """The whole stored record at ``offset`` (``selectOneMessageByOffset``), or None."""
        size = self.record_size_at(offset)
        if size is None or size <= 0:
            return None
        return self.get_message(offset, size)

    def pickup_store_timestamp(self, offset, size):
        """``pickupStoreTimestamp``: the STORETIMESTAMP of the record at ``offset``, or -1."""
        if offset < self.min_offset:
            return -1
        data = self.get_message(offset, size)
        if data is None or len(data) < 64:
            return -1
        sys_flag = int.from_bytes(data[36:40], "big")
        pos = 56 if not sys_flag & msg.BORNHOST_V6_FLAG else 68
        return int.from_bytes(data[pos:pos + 8], "big", signed=True)

    def close(self):
        self.queue.close()
