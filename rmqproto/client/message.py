"""What a producer sends and what it gets back: :class:`Message`, :class:`SendResult`,
the ``UNIQ_KEY`` ids of ``MessageClientIDSetter`` and the checks of ``Validators``."""

import calendar
import enum
import os
import random
import re
import socket
import time

from rmqproto.client.errors import ClientError
from rmqproto.client.route import MessageQueue
from rmqproto.codec import message as wire

#: ``Validators``: a topic is letters, digits, ``%``, ``|``, ``_`` and ``-``, at most 127 characters.
_TOPIC = re.compile(r"^[%|a-zA-Z0-9_-]+$")
TOPIC_MAX_LENGTH = 127
#: Property names a user may not set (``MessageConst.STRING_HASH_SET``).
RESERVED_PROPERTIES = frozenset(
    value for name, value in vars(wire).items() if name.startswith("PROPERTY_"))


class Message:
    """One message to send (``Message``): topic, body, tags, keys, user properties,
    delay level and flag. ``keys`` is a string or a list of strings. A transactional
    producer sets ``transaction_id`` (the ``UNIQ_KEY`` the broker's check-back names)."""

    __slots__ = ("topic", "body", "tags", "keys", "properties", "delay_level", "flag",
                 "transaction_id")

    def __init__(self, topic, body, tags=None, keys=None, properties=None, delay_level=0,
                 flag=0):
        self.topic = topic
        self.body = body.encode() if isinstance(body, str) else bytes(body)
        self.tags = tags
        self.keys = [keys] if isinstance(keys, str) else list(keys or ())
        self.properties = dict(properties or {})
        self.delay_level = delay_level
        self.flag = flag
        self.transaction_id = None
        bad = sorted(set(self.properties) & RESERVED_PROPERTIES)
        if bad:
            raise ClientError("the property name(s) %s are used by the system" % ", ".join(bad))

    def wire_properties(self):
        """The properties as they travel (user ones, then ``TAGS``, ``KEYS``, ``DELAY``, ``WAIT``)."""
        props = dict(self.properties)
        if self.tags:
            props[wire.PROPERTY_TAGS] = self.tags
        if self.keys:
            props[wire.PROPERTY_KEYS] = wire.KEY_SEPARATOR.join(self.keys)
        if self.delay_level:
            props[wire.PROPERTY_DELAY_TIME_LEVEL] = str(self.delay_level)
        props[wire.PROPERTY_WAIT_STORE_MSG_OK] = "true"
        return props

    def __repr__(self):
        return "Message(topic=%r, body=<%d bytes>, tags=%r, keys=%r)" % (
            self.topic, len(self.body), self.tags, self.keys)


def check_topic(topic):
    """``Validators.checkTopic``: raise :class:`ClientError` on a name no broker accepts."""
    if not topic or not topic.strip():
        raise ClientError("The specified topic is blank")
    if len(topic) > TOPIC_MAX_LENGTH:
        raise ClientError("The specified topic is longer than topic max length %d" % TOPIC_MAX_LENGTH)
    if not _TOPIC.match(topic):
        raise ClientError("The specified topic[%s] contains illegal characters, allowing only "
                          "^[%%|a-zA-Z0-9_-]+$" % topic)


def check_message(message, max_size):
    """``Validators.checkMessage``: topic legal, body neither empty nor over ``max_size``."""
    check_topic(message.topic)
    if not message.body:
        raise ClientError("the message body length is zero")
    if len(message.body) > max_size:
        raise ClientError("the message body size over max value, MAX: %d" % max_size)


class SendStatus(enum.Enum):
    """``SendStatus``: how a broker stored a message."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


class SendResult:
    """``SendResult``: ``msg_id`` is the client's ``UNIQ_KEY`` (comma-joined for a batch),
    ``offset_msg_id`` the broker's store id."""

    __slots__ = ("status", "msg_id", "offset_msg_id", "queue", "queue_offset",
                 "transaction_id", "region_id", "trace_on")

    def __init__(self, status, msg_id, offset_msg_id, queue, queue_offset,
                 transaction_id=None, region_id=None, trace_on=True):
        self.status = status
        self.msg_id = msg_id
        self.offset_msg_id = offset_msg_id
        self.queue = queue
        self.queue_offset = queue_offset
        self.transaction_id = transaction_id
        self.region_id = region_id
        self.trace_on = trace_on

    def __repr__(self):
        return ("SendResult(status=%s, msg_id=%s, offset_msg_id=%s, queue=%r, queue_offset=%d)"
                % (self.status.name, self.msg_id, self.offset_msg_id, self.queue,
                   self.queue_offset))


def month_start_ms(now_ms):
    """Milliseconds of the first instant (UTC) of the month holding ``now_ms``."""
    year, month = time.gmtime(now_ms // 1000)[:2]
    return calendar.timegm((year, month, 1, 0, 0, 0)) * 1000


def local_ip():
    """This host's IPv4 address (127.0.0.1 if it has none)."""
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


class UniqueIds:
    """``MessageClientIDSetter``: 32 hex digits, the client's IPv4 address, process id (16
    bits) and a 32-bit salt (Java: the class loader's hash), then the milliseconds since
    the month began and a 16-bit counter. The month is taken in UTC (Java: the local zone)."""

    def __init__(self, ip="127.0.0.1", pid=0, salt=0):
        packed = bytes(int(part) for part in ip.split("."))
        if len(packed) != 4:
            raise ClientError("an IPv4 address is needed, got %r" % ip)
        self.prefix = (packed + (pid & 0xFFFF).to_bytes(2, "big")
                       + (salt & 0xFFFFFFFF).to_bytes(4, "big")).hex().upper()
        self.counter = 0
        self._month = self._next_month = 0

    @classmethod
    def for_this_host(cls):
        """Ids with this host's IPv4 address (127.0.0.1 if it has none), pid and a random salt."""
        return cls(local_ip(), os.getpid(), random.getrandbits(32))

    def next_id(self, now_ms):
        """A new id for a message created at ``now_ms``."""
        if now_ms >= self._next_month or now_ms < self._month:
            self._month = month_start_ms(now_ms)
            self._next_month = month_start_ms(self._month + 32 * 86_400_000)
        count, self.counter = self.counter, (self.counter + 1) & 0xFFFF
        return "%s%08X%04X" % (self.prefix, (now_ms - self._month) & 0xFFFFFFFF, count)


def id_time_ms(msg_id, now_ms):
    """``getNearlyTimeFromID``: when the id was made, given a ``now_ms`` in or after that month."""
    offset = int(msg_id[20:28], 16)
    start = month_start_ms(now_ms)
    return start + offset if start + offset <= now_ms else month_start_ms(start - 1) + offset


def id_ip(msg_id):
    """``getIPStrFromID``: the client address written in the id."""
    return ".".join(str(b) for b in bytes.fromhex(msg_id[:8]))


class ReceivedMessage:
    """A pulled message (``MessageExt``): ``body`` decompressed, ``properties`` all of
    them (user and system), ``msg_id`` the producer's ``UNIQ_KEY`` (else the store id),
    ``offset_msg_id`` the broker's store id, ``queue`` and ``queue_offset`` where it lies."""

    __slots__ = ("topic", "body", "properties", "msg_id", "offset_msg_id", "queue",
                 "queue_offset", "born_timestamp", "store_timestamp", "born_host",
                 "store_host", "reconsume_times", "flag", "commit_log_offset",
                 "prepared_transaction_offset")

    @classmethod
    def from_record(cls, record, broker_name, min_offset, max_offset):
        """From a decoded :class:`~rmqproto.codec.message.MessageRecord`, with the queue's
        ``MIN_OFFSET`` / ``MAX_OFFSET`` properties as ``PullAPIWrapper`` sets them."""
        self = cls()
        self.topic = record.topic
        self.body = wire.uncompressed_body(record)
        self.properties = dict(record.properties)
        self.properties[wire.PROPERTY_MIN_OFFSET] = str(min_offset)
        self.properties[wire.PROPERTY_MAX_OFFSET] = str(max_offset)
        self.offset_msg_id = record.msg_id
        self.msg_id = self.properties.get(wire.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or self.offset_msg_id
        self.queue = MessageQueue(record.topic, broker_name, record.queue_id)
        self.queue_offset = record.queue_offset
        self.born_timestamp, self.store_timestamp = record.born_timestamp, record.store_timestamp
        self.born_host, self.store_host = record.born_host, record.store_host
        self.reconsume_times, self.flag = record.reconsume_times, record.flag
        self.commit_log_offset = record.commit_log_offset
        self.prepared_transaction_offset = record.prepared_transaction_offset
        return self

    @property
    def tags(self):
        return self.properties.get(wire.PROPERTY_TAGS)

    @property
    def keys(self):
        """The keys, as a list (``KEYS`` split on spaces)."""
        keys = self.properties.get(wire.PROPERTY_KEYS)
        return keys.split(wire.KEY_SEPARATOR) if keys else []

    @property
    def user_properties(self):
        """The properties that are not the system's."""
        return {k: v for k, v in self.properties.items() if k not in RESERVED_PROPERTIES}

    def __repr__(self):
        return "ReceivedMessage(queue=%r, queue_offset=%d, msg_id=%s, tags=%r, body=<%d bytes>)" % (
            self.queue, self.queue_offset, self.msg_id, self.tags, len(self.body))
