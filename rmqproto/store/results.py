"""What store operations answer: Java's status enums and result objects."""

import enum

__all__ = ["PutMessageStatus", "AppendMessageStatus", "GetMessageStatus", "AppendMessageResult",
           "PutMessageResult", "GetMessageResult", "QueryMessageResult", "PUT_OK", "APPENDED"]


class PutMessageStatus(enum.Enum):
    """``PutMessageStatus``; the send processor maps each to a response code (``handlePutMessageResult``)."""

    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPEDFILE_FAILED = "CREATE_MAPEDFILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"

    @property
    def stored(self):
        """Whether the message is in the commit log (OK and the three "stored, but" statuses)."""
        return self in _STORED


_STORED = frozenset((PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT,
                     PutMessageStatus.FLUSH_SLAVE_TIMEOUT, PutMessageStatus.SLAVE_NOT_AVAILABLE))


class AppendMessageStatus(enum.Enum):
    PUT_OK = "PUT_OK"
    END_OF_FILE = "END_OF_FILE"
    MESSAGE_SIZE_EXCEEDED = "MESSAGE_SIZE_EXCEEDED"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


# A member read through its enum class goes through the metaclass's ``__getattr__`` hook
# (about five times a plain attribute on CPython 3.11): every put reads these by name.
PUT_OK = PutMessageStatus.PUT_OK
APPENDED = AppendMessageStatus.PUT_OK


class GetMessageStatus(enum.Enum):
    """``GetMessageStatus``; the pull processor maps each to a response code (``PullMessageProcessor``)."""

    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


class AppendMessageResult:
    """Where an append put a message (or a batch): ``AppendMessageResult``.

    ``msg_id`` is the offset message id (comma-joined for a batch), ``wrote_offset``
    the commit-log offset of the first record, ``wrote_bytes`` all bytes written,
    ``logics_offset`` the consume-queue offset of the first message. ``dispatch_fields``:
    the written records' :data:`~rmqproto.codec.message.DISPATCH_FIELDS` (None when
    nothing was written).
    """

    __slots__ = ("status", "wrote_offset", "wrote_bytes", "msg_id", "store_timestamp",
                 "logics_offset", "msg_num", "dispatch_fields")

    def __init__(self, status, wrote_offset=0, wrote_bytes=0, msg_id=None, store_timestamp=0,
                 logics_offset=0, msg_num=1, dispatch_fields=None):
        self.status = status
        self.wrote_offset = wrote_offset
        self.wrote_bytes = wrote_bytes
        self.msg_id = msg_id
        self.store_timestamp = store_timestamp
        self.logics_offset = logics_offset
        self.msg_num = msg_num
        self.dispatch_fields = dispatch_fields

    def __repr__(self):
        return "AppendMessageResult(%s, wrote_offset=%d, wrote_bytes=%d, msg_id=%r)" % (
            self.status.name, self.wrote_offset, self.wrote_bytes, self.msg_id)


class PutMessageResult:
    """``PutMessageResult``: the store's verdict and, when stored, the append result."""

    __slots__ = ("status", "append_result")

    def __init__(self, status, append_result=None):
        self.status = status
        self.append_result = append_result

    @property
    def ok(self):
        return self.status is PutMessageStatus.PUT_OK

    def __repr__(self):
        return "PutMessageResult(%s, %r)" % (self.status.name, self.append_result)


class GetMessageResult:
    """``GetMessageResult``: found records (raw bytes, commit-log record format) and offsets.

    ``next_begin_offset`` is where the next pull starts; ``suggest_pulling_from_slave``
    feeds ``suggestWhichBrokerId`` (``DefaultMessageStore#getMessage``).
    """

    __slots__ = ("status", "messages", "next_begin_offset", "min_offset", "max_offset",
                 "suggest_pulling_from_slave", "message_queue_offsets")

    def __init__(self, status, messages=(), next_begin_offset=0, min_offset=0, max_offset=0,
                 suggest_pulling_from_slave=False, message_queue_offsets=()):
        self.status = status
        self.messages = list(messages)
        self.next_begin_offset = next_begin_offset
        self.min_offset = min_offset
        self.max_offset = max_offset
        self.suggest_pulling_from_slave = suggest_pulling_from_slave
        self.message_queue_offsets = list(message_queue_offsets)

    @property
    def message_count(self):
        return len(self.messages)

    def __repr__(self):
        return ("GetMessageResult(%s, %d messages, next=%d, min=%d, max=%d)" % (
            self.status.name, len(self.messages), self.next_begin_offset, self.min_offset,
            self.max_offset))


class QueryMessageResult:
    """``QueryMessageResult``: records found by key, and the index's last update point."""

    __slots__ = ("messages", "index_last_update_timestamp", "index_last_update_phyoffset")

    def __init__(self, messages=(), index_last_update_timestamp=0, index_last_update_phyoffset=0):
        self.messages = list(messages)
        self.index_last_update_timestamp = index_last_update_timestamp
        self.index_last_update_phyoffset = index_last_update_phyoffset
