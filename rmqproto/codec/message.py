"""Stored messages: the commit-log record, the end-of-file blank, the properties
string, the client batch body and the offset message id (Java ``CommitLog``, ``MessageDecoder``).

The construct declarations (:data:`MESSAGE_RECORD`, :data:`BLANK`, :data:`BATCH_ITEM`)
are the specification. :func:`encode_record` / :func:`decode_record` and
:func:`encode_batch` / :func:`decode_batch` are the ``struct`` fast paths used on hot
paths; the test-suite proves they agree with the declarations byte for byte.

Text (topic, properties) is UTF-8. Bytes that are not valid UTF-8 are kept with
``surrogateescape`` so that decoding never fails on them and re-encoding restores
them exactly (Java would see U+FFFD there instead).
"""

import socket
import struct
import sys
import zlib
from functools import lru_cache

import construct as cs

from rmqproto.codec.construct_util import build_or_raise, parse_or_raise
from rmqproto.codec.javalang import java_string_hash, masked_crc32
from rmqproto.codec.native import speedups
from rmqproto.errors import BadMagicError, ChecksumError, CodecError, TruncatedError

# ---------------------------------------------------------------- constants

#: ``MESSAGE_MAGIC_CODE`` 0xDAA320A7: a record with a 1-byte topic length (``CommitLog``).
MESSAGE_MAGIC_CODE = -626843481
#: RMQ5 ``MESSAGE_MAGIC_CODE_V2`` 0xDAA320AB: a record with a 2-byte topic length (RMQ5 ``MessageVersion``).
MESSAGE_MAGIC_CODE_V2 = -626843477
#: ``BLANK_MAGIC_CODE`` 0xCBD43194 of the end-of-file blank (``CommitLog``).
BLANK_MAGIC_CODE = -875286124
#: Bytes a segment keeps free for the end-of-file blank.
END_FILE_MIN_BLANK_LENGTH = 8
#: Largest properties string (its length is an int16).
MAX_PROPERTIES_LENGTH = 32767
#: Largest topic of a version-1 record (its length is a signed byte).
MAX_TOPIC_LENGTH_V1 = 127

# sysFlag bits (``MessageSysFlag``)
COMPRESSED_FLAG = 0x1
MULTI_TAGS_FLAG = 0x2
TRANSACTION_NOT_TYPE = 0x0
TRANSACTION_PREPARED_TYPE = 0x4
TRANSACTION_COMMIT_TYPE = 0x8
TRANSACTION_ROLLBACK_TYPE = 0xC
BORNHOST_V6_FLAG = 0x10
STOREHOSTADDRESS_V6_FLAG = 0x20
NEED_UNWRAP_FLAG = 0x40
INNER_BATCH_FLAG = 0x80
COMPRESSION_LZ4_TYPE = 0x100
COMPRESSION_ZSTD_TYPE = 0x200
COMPRESSION_ZLIB_TYPE = 0x300
COMPRESSION_TYPE_MASK = 0x700
_HOST_FLAGS = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG

# property names (``MessageConst``)
PROPERTY_KEYS = "KEYS"
PROPERTY_TAGS = "TAGS"
PROPERTY_WAIT_STORE_MSG_OK = "WAIT"
PROPERTY_DELAY_TIME_LEVEL = "DELAY"
PROPERTY_RETRY_TOPIC = "RETRY_TOPIC"
PROPERTY_REAL_TOPIC = "REAL_TOPIC"
PROPERTY_REAL_QUEUE_ID = "REAL_QID"
PROPERTY_TRANSACTION_PREPARED = "TRAN_MSG"
PROPERTY_PRODUCER_GROUP = "PGROUP"
PROPERTY_MIN_OFFSET = "MIN_OFFSET"
PROPERTY_MAX_OFFSET = "MAX_OFFSET"
PROPERTY_BUYER_ID = "BUYER_ID"
PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
PROPERTY_TRANSFER_FLAG = "TRANSFER_FLAG"
PROPERTY_CORRECTION_FLAG = "CORRECTION_FLAG"
PROPERTY_MQ2_FLAG = "MQ2_FLAG"
PROPERTY_RECONSUME_TIME = "RECONSUME_TIME"
PROPERTY_MSG_REGION = "MSG_REGION"
PROPERTY_TRACE_SWITCH = "TRACE_ON"
PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX = "UNIQ_KEY"
PROPERTY_MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
PROPERTY_CONSUME_START_TIMESTAMP = "CONSUME_START_TIME"
PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"
PROPERTY_TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS = "CHECK_IMMUNITY_TIME_IN_SECONDS"
PROPERTY_INSTANCE_ID = "INSTANCE_ID"
PROPERTY_CORRELATION_ID = "CORRELATION_ID"
PROPERTY_MESSAGE_REPLY_TO_CLIENT = "REPLY_TO_CLIENT"
PROPERTY_MESSAGE_TTL = "TTL"
PROPERTY_REPLY_MESSAGE_ARRIVE_TIME = "ARRIVE_TIME"
PROPERTY_PUSH_REPLY_TIME = "PUSH_REPLY_TIME"
PROPERTY_CLUSTER = "CLUSTER"
PROPERTY_MESSAGE_TYPE = "MSG_TYPE"
PROPERTY_INNER_MULTI_DISPATCH = "INNER_MULTI_DISPATCH"
PROPERTY_INNER_MULTI_QUEUE_OFFSET = "INNER_MULTI_QUEUE_OFFSET"
#: Separator of the words of the ``KEYS`` property.
KEY_SEPARATOR = " "

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"


def transaction_type(sys_flag):
    """The transaction bits of ``sys_flag`` (one of the ``TRANSACTION_*_TYPE`` values)."""
    return sys_flag & TRANSACTION_ROLLBACK_TYPE


def tags_code(tags):
    """The consume-queue tags code of a ``TAGS`` value: Java ``hashCode``, 0 without a tag (``ConsumeQueue``)."""
    return java_string_hash(tags) if tags else 0


# ---------------------------------------------------------------- text helpers

def _text(raw):
    """UTF-8 bytes to ``str``, never failing (see the module docstring)."""
    return bytes(raw).decode("utf-8", "surrogateescape")


@lru_cache(maxsize=4096)
def _topic_text(raw):
    return raw.decode("utf-8", "surrogateescape")


def _utf8(text):
    try:
        return text.encode("utf-8", "surrogateescape")
    except (UnicodeEncodeError, AttributeError) as exc:
        raise CodecError("cannot encode %r as UTF-8: %s" % (text, exc)) from None


_topic_utf8 = lru_cache(maxsize=4096)(_utf8)


# ---------------------------------------------------------------- properties

def properties_to_string(properties, trailing_separator=False):
    """``messageProperties2String``: ``name\\x01value`` pairs joined by ``\\x02`` (``MessageDecoder``).

    Pairs are written in the mapping's order; ``None`` values are skipped. 4.9.1–4.9.8
    write no trailing ``\\x02`` (the default); ≤ 4.9.0 and ≥ 5.2.0 do
    (``trailing_separator=True``). Pass a mapping ordered with
    :func:`rmqproto.codec.fastjson.java_hashmap_order` to reproduce Java's byte order.
    """
    if not properties:
        return ""
    try:
        text = PROPERTY_SEPARATOR.join(
            [name + NAME_VALUE_SEPARATOR + value for name, value in properties.items()
             if value is not None])
    except TypeError as exc:
        raise CodecError("property names and values must be strings: %s" % exc) from None
    if trailing_separator and text:
        text += PROPERTY_SEPARATOR
    return text


def pick_properties(properties, names, drop=()):
    """``properties`` in the order of ``names`` (every name one of them), without the
    names in ``drop``."""
    return {name: properties[name] for name in names if name not in drop}


#: The Python :func:`pick_properties`, the reference of its C version.
python_pick_properties = pick_properties
if speedups is not None:
    pick_properties = speedups.pick_properties  # noqa: F811


def properties_utf8(properties):
    """:func:`properties_to_string` as UTF-8 (surrogates escaped), the bytes a record
    stores; None when it cannot be (a name or value that is not a str, or another
    surrogate)."""
    try:
        return properties_to_string(properties).encode("utf-8", "surrogateescape")
    except (CodecError, UnicodeEncodeError):
        return None


#: The Python :func:`properties_utf8`, the reference of its C version.
python_properties_utf8 = properties_utf8
if speedups is not None:
    def properties_utf8(properties):  # noqa: F811
        """:func:`python_properties_utf8`, in C for a dict of str (and None values)."""
        raw = speedups.properties_utf8(properties)
        return python_properties_utf8(properties) if raw is None else raw


def string_to_properties(text):
    """``string2messageProperties``: accepts the string with or without a trailing ``\\x02``.

    Like Java, fragments without a non-empty name and a non-empty value are ignored
    and a repeated name keeps its last value.
    """
    properties = {}
    if text:
        for part in text.split(PROPERTY_SEPARATOR):
            name, _, value = part.partition(NAME_VALUE_SEPARATOR)
            if name and value:
                properties[name] = value
    return properties


#: The Python :func:`string_to_properties`, the reference of its C version.
python_string_to_properties = string_to_properties
if speedups is not None:
    string_to_properties = speedups.string_to_properties  # noqa: F811


def _properties_bytes(properties):
    raw = _utf8(properties_to_string(properties)) if properties else b""
    if len(raw) > MAX_PROPERTIES_LENGTH:
        raise CodecError("properties of %d bytes exceed %d" % (len(raw), MAX_PROPERTIES_LENGTH))
    return raw


# ---------------------------------------------------------------- hosts and msgId

@lru_cache(maxsize=4096)  # born and store hosts repeat from message to message
def _pack_ip(address):
    try:
        if ":" in address:
            return socket.inet_pton(socket.AF_INET6, address)
        return socket.inet_pton(socket.AF_INET, address)
    except (OSError, TypeError, ValueError) as exc:
        raise CodecError("bad IP address %r: %s" % (address, exc)) from None


def _unpack_ip(packed):
    if len(packed) == 4:
        return socket.inet_ntoa(packed)
    return socket.inet_ntop(socket.AF_INET6, packed)


def host_flags(born_host, store_host):
    """The sysFlag IPv6 bits (4 and 5) that ``born_host`` / ``store_host`` call for."""
    return (BORNHOST_V6_FLAG if ":" in born_host[0] else 0) | (
        STOREHOSTADDRESS_V6_FLAG if ":" in store_host[0] else 0)


_MSG_ID_PORT_OFFSET = struct.Struct(">iq")


def create_message_id(store_host, commit_log_offset):
    """The offset message id: uppercase hex of store IP + port + commit-log offset (``createMessageId``)."""
    if 0 <= commit_log_offset <= _MAX_LONG:  # every stored offset: the host part is reused
        return _message_id_prefix(store_host) + "%016X" % commit_log_offset
    return (_pack_ip(store_host[0])
            + _MSG_ID_PORT_OFFSET.pack(store_host[1], commit_log_offset)).hex().upper()


_MAX_LONG = (1 << 63) - 1


@lru_cache(maxsize=64)
def _message_id_prefix(store_host):
    return (_pack_ip(store_host[0]) + _MSG_ID_PORT_OFFSET.pack(store_host[1], 0)[:4]).hex().upper()


def decode_message_id(msg_id):
    """``decodeMessageId``: ``((ip, port), commit_log_offset)``; 32 hex chars mean IPv4, 56 IPv6."""
    if len(msg_id) == 32:
        ip_len = 4
    elif len(msg_id) == 56:
        ip_len = 16
    else:
        raise CodecError("message id of %d characters is neither 32 nor 56" % len(msg_id))
    try:
        raw = bytes.fromhex(msg_id)
    except (ValueError, TypeError):
        raise CodecError("message id %r is not hexadecimal" % (msg_id,)) from None
    port, offset = _MSG_ID_PORT_OFFSET.unpack_from(raw, ip_len)
    return (_unpack_ip(raw[:ip_len]), port), offset


# ---------------------------------------------------------------- the record

class MessageRecord:
    """One commit-log record, every field of ``MessageExt`` as stored (``CommitLog.MessageExtEncoder``).

    Hosts are ``(ip, port)`` tuples; the sysFlag IPv6 bits always follow them.
    ``body`` is the stored body (compressed when ``sys_flag`` says so, see
    :func:`uncompressed_body`). ``body_crc`` defaults to the masked CRC32 of the
    body, ``magic_code`` to version 1 unless the topic needs the RMQ5 2-byte length,
    and ``store_size`` to the encoded length.
    """

    __slots__ = ("_store_size", "magic_code", "body_crc", "queue_id", "flag", "queue_offset",
                 "commit_log_offset", "sys_flag", "born_timestamp", "born_host",
                 "store_timestamp", "store_host", "reconsume_times",
                 "prepared_transaction_offset", "body", "topic", "properties")

    def __init__(self, topic, body=b"", properties=None, queue_id=0, flag=0, queue_offset=0,
                 commit_log_offset=0, sys_flag=0, born_timestamp=0,
                 born_host=("127.0.0.1", 0), store_timestamp=0, store_host=("127.0.0.1", 0),
                 reconsume_times=0, prepared_transaction_offset=0, body_crc=None,
                 magic_code=None, store_size=None):
        self.topic = topic
        self.body = body
        self.properties = {} if properties is None else properties
        self.queue_id = queue_id
        self.flag = flag
        self.queue_offset = queue_offset
        self.commit_log_offset = commit_log_offset
        self.sys_flag = (sys_flag & ~_HOST_FLAGS) | host_flags(born_host, store_host)
        self.born_timestamp = born_timestamp
        self.born_host = born_host
        self.store_timestamp = store_timestamp
        self.store_host = store_host
        self.reconsume_times = reconsume_times
        self.prepared_transaction_offset = prepared_transaction_offset
        self.body_crc = masked_crc32(body) if body_crc is None else body_crc
        if magic_code is None:
            magic_code = (MESSAGE_MAGIC_CODE if len(_topic_utf8(topic)) <= MAX_TOPIC_LENGTH_V1
                          else MESSAGE_MAGIC_CODE_V2)
        self.magic_code = magic_code
        self._store_size = store_size

    @property
    def store_size(self):
        """TOTALSIZE: as decoded, else the encoded length (``calMsgLength``)."""
        if self._store_size is None:
            self._store_size = record_length(
                self.sys_flag, len(self.body), len(_topic_utf8(self.topic)),
                len(_properties_bytes(self.properties)), self.magic_code)
        return self._store_size

    @store_size.setter
    def store_size(self, value):
        self._store_size = value

    @property
    def msg_id(self):
        """The offset message id (store host + commit-log offset)."""
        return create_message_id(self.store_host, self.commit_log_offset)

    @property
    def tags(self):
        return self.properties.get(PROPERTY_TAGS)

    @property
    def keys(self):
        """The ``KEYS`` words (space-separated in the property), empty words dropped."""
        return [k for k in self.properties.get(PROPERTY_KEYS, "").split(KEY_SEPARATOR) if k]

    @property
    def uniq_key(self):
        return self.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)

    @property
    def tags_code(self):
        """The consume-queue tags code of an ordinary (non-delay) message."""
        return tags_code(self.tags)

    _FIELDS = ("store_size",) + __slots__[1:]

    def fields(self):
        """Every field as a dict, named as in the constructor."""
        return {name: getattr(self, name) for name in self._FIELDS}

    def __eq__(self, other):
        return isinstance(other, MessageRecord) and self.fields() == other.fields()

    def __repr__(self):
        return "MessageRecord(%s)" % ", ".join(
            "%s=%r" % (name, value if name != "body" else "<%d bytes>" % len(value))
            for name, value in self.fields().items())


def record_length(sys_flag, body_length, topic_length, properties_length,
                  magic_code=MESSAGE_MAGIC_CODE):
    """``calMsgLength``: 91 bytes of overhead with IPv4 hosts, +12 per IPv6 host,
    +1 for the 2-byte topic length of a V2 record."""
    return (91 + (12 if sys_flag & BORNHOST_V6_FLAG else 0)
            + (12 if sys_flag & STOREHOSTADDRESS_V6_FLAG else 0)
            + (1 if magic_code == MESSAGE_MAGIC_CODE_V2 else 0)
            + body_length + topic_length + properties_length)


# -- declaration (the specification)

def _host(ip_length):
    return cs.Struct("address" / cs.Bytes(ip_length), "port" / cs.Int32sb)


def _declared_length(ctx):
    return record_length(ctx.sys_flag, len(ctx.body), len(ctx.topic), len(ctx.properties),
                         ctx.magic_code)


#: A commit-log record; ``topic`` and ``properties`` are the raw UTF-8 bytes (``MessageExtEncoder``).
MESSAGE_RECORD = cs.Struct(
    "total_size" / cs.Rebuild(cs.Int32sb, _declared_length),
    "magic_code" / cs.OneOf(cs.Int32sb, [MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2]),
    "body_crc" / cs.Int32sb,
    "queue_id" / cs.Int32sb,
    "flag" / cs.Int32sb,
    "queue_offset" / cs.Int64sb,
    "commit_log_offset" / cs.Int64sb,
    "sys_flag" / cs.Int32sb,
    "born_timestamp" / cs.Int64sb,
    "born_host" / cs.IfThenElse(cs.this.sys_flag & BORNHOST_V6_FLAG, _host(16), _host(4)),
    "store_timestamp" / cs.Int64sb,
    "store_host" / cs.IfThenElse(cs.this.sys_flag & STOREHOSTADDRESS_V6_FLAG, _host(16), _host(4)),
    "reconsume_times" / cs.Int32sb,
    "prepared_transaction_offset" / cs.Int64sb,
    "body" / cs.Prefixed(cs.Int32sb, cs.GreedyBytes),
    "topic" / cs.IfThenElse(cs.this.magic_code == MESSAGE_MAGIC_CODE_V2,
                            cs.Prefixed(cs.Int16sb, cs.GreedyBytes),
                            cs.Prefixed(cs.Int8sb, cs.GreedyBytes)),
    "properties" / cs.Prefixed(cs.Int16sb, cs.GreedyBytes),
    cs.Check(cs.this.total_size == _declared_length),
)

#: The end-of-file blank: the bytes left in the segment, then the blank magic (``CommitLog``).
BLANK = cs.Struct("total_size" / cs.Int32sb, "magic_code" / cs.Const(BLANK_MAGIC_CODE, cs.Int32sb))


def parse_record_declared(data):
    """Decode one record through :data:`MESSAGE_RECORD` only."""
    p = parse_or_raise(MESSAGE_RECORD, data)
    return MessageRecord(
        _topic_text(p.topic), p.body, string_to_properties(_text(p.properties)), p.queue_id, p.flag,
        p.queue_offset, p.commit_log_offset, p.sys_flag, p.born_timestamp,
        (_unpack_ip(p.born_host.address), p.born_host.port), p.store_timestamp,
        (_unpack_ip(p.store_host.address), p.store_host.port), p.reconsume_times,
        p.prepared_transaction_offset, p.body_crc, p.magic_code, p.total_size)


def build_record_declared(record):
    """Encode ``record`` through :data:`MESSAGE_RECORD` only."""
    r = record
    return build_or_raise(MESSAGE_RECORD, dict(
        magic_code=r.magic_code, body_crc=r.body_crc, queue_id=r.queue_id, flag=r.flag,
        queue_offset=r.queue_offset, commit_log_offset=r.commit_log_offset, sys_flag=r.sys_flag,
        born_timestamp=r.born_timestamp,
        born_host=dict(address=_pack_ip(r.born_host[0]), port=r.born_host[1]),
        store_timestamp=r.store_timestamp,
        store_host=dict(address=_pack_ip(r.store_host[0]), port=r.store_host[1]),
        reconsume_times=r.reconsume_times, prepared_transaction_offset=r.prepared_transaction_offset,
        body=r.body, topic=_topic_utf8(r.topic), properties=_properties_bytes(r.properties)))


# -- fast path

def _fixed_struct(born_ip, store_ip):
    # TOTALSIZE .. PREPARED TRANSACTION OFFSET, then the body length.
    return struct.Struct(">iiiiiqqiq%dsiq%dsiiqi" % (born_ip, store_ip))


_FIXED = {
    0: _fixed_struct(4, 4),
    BORNHOST_V6_FLAG: _fixed_struct(16, 4),
    STOREHOSTADDRESS_V6_FLAG: _fixed_struct(4, 16),
    _HOST_FLAGS: _fixed_struct(16, 16),
}
_HEAD = struct.Struct(">ii")
_SYS_FLAG = struct.Struct(">i")
_SYS_FLAG_POSITION = 36
_I16 = struct.Struct(">h")
_MIN_RECORD_LENGTH = 91


def encode_record(record, properties=None):
    """The stored bytes of ``record`` (``struct`` fast path of :data:`MESSAGE_RECORD`);
    ``properties``: its properties string as UTF-8, when the caller has encoded it already."""
    r = record
    topic = _topic_utf8(r.topic)
    props = _properties_bytes(r.properties) if properties is None else properties
    body = r.body
    sys_flag = r.sys_flag
    if r.magic_code == MESSAGE_MAGIC_CODE:
        if len(topic) > MAX_TOPIC_LENGTH_V1:
            raise CodecError("topic of %d bytes needs the V2 magic code" % len(topic))
        topic_head = bytes((len(topic),))
    elif r.magic_code == MESSAGE_MAGIC_CODE_V2:
        if len(topic) > 32767:
            raise CodecError("topic of %d bytes is too long" % len(topic))
        topic_head = _I16.pack(len(topic))
    else:
        raise BadMagicError("unknown magic code %r" % (r.magic_code,))
    born, store = r.born_host, r.store_host
    try:
        head = _FIXED[sys_flag & _HOST_FLAGS].pack(
            record_length(sys_flag, len(body), len(topic), len(props), r.magic_code),
            r.magic_code, r.body_crc, r.queue_id, r.flag, r.queue_offset, r.commit_log_offset,
            sys_flag, r.born_timestamp, _pack_ip(born[0]), born[1], r.store_timestamp,
            _pack_ip(store[0]), store[1], r.reconsume_times, r.prepared_transaction_offset,
            len(body))
    except struct.error as exc:
        raise CodecError("record field out of range: %s" % exc) from None
    return b"".join((head, body, topic_head, topic, _I16.pack(len(props)), props))


def _record_layout(buffer, offset):
    """Check the lengths of the record at ``offset`` the way the broker's recovery does
    (``checkMessageAndReturnSize``): the magic code, that TOTALSIZE equals the length
    recomputed from the fields; negative lengths are rejected outright. Returns
    ``(magic, sys_flag, body position, body length, topic position, topic length,
    properties position, end)``; raises as :func:`decode_record` says."""
    available = len(buffer) - offset
    if available < 8:
        raise TruncatedError("%d bytes cannot hold a record header" % max(available, 0))
    total, magic = _HEAD.unpack_from(buffer, offset)
    if magic != MESSAGE_MAGIC_CODE and magic != MESSAGE_MAGIC_CODE_V2:
        raise BadMagicError("magic code 0x%08X is not a message record" % (magic & 0xFFFFFFFF))
    if total < _MIN_RECORD_LENGTH:
        raise CodecError("TOTALSIZE %d is below the minimum record length" % total)
    if total > available:
        raise TruncatedError("record of %d bytes but only %d available" % (total, available))
    end = offset + total
    (sys_flag,) = _SYS_FLAG.unpack_from(buffer, offset + _SYS_FLAG_POSITION)
    pos = offset + _FIXED[sys_flag & _HOST_FLAGS].size
    if pos > end:
        raise CodecError("TOTALSIZE %d too small for the fixed fields" % total)
    (body_length,) = _SYS_FLAG.unpack_from(buffer, pos - 4)
    if body_length < 0 or pos + body_length > end:
        raise CodecError("body length %d does not fit the record" % body_length)
    body_pos = pos
    pos += body_length
    if magic == MESSAGE_MAGIC_CODE:
        if pos + 1 > end:
            raise CodecError("record ends inside the topic length")
        topic_length = buffer[pos]
        if topic_length > MAX_TOPIC_LENGTH_V1:
            raise CodecError("negative topic length %d" % (topic_length - 256))
        pos += 1
    else:
        if pos + 2 > end:
            raise CodecError("record ends inside the topic length")
        (topic_length,) = _I16.unpack_from(buffer, pos)
        if topic_length < 0:
            raise CodecError("negative topic length %d" % topic_length)
        pos += 2
    if pos + topic_length + 2 > end:
        raise CodecError("topic length %d does not fit the record" % topic_length)
    (properties_length,) = _I16.unpack_from(buffer, pos + topic_length)
    if properties_length < 0 or pos + topic_length + 2 + properties_length != end:
        raise CodecError("TOTALSIZE %d does not match the fields (properties length %d)"
                         % (total, properties_length))
    return magic, sys_flag, body_pos, body_length, pos, topic_length, pos + topic_length + 2, end


def _check_body_crc(body, body_crc):
    if masked_crc32(body) != body_crc:
        raise ChecksumError("body CRC %d does not match %d" % (body_crc, masked_crc32(body)))


def _properties_at(buffer, pos, end):
    return string_to_properties(str(buffer[pos:end], "utf-8", "surrogateescape")) \
        if pos < end else {}


def decode_record(buffer, offset=0, check_crc=False):
    """Decode the record at ``offset`` of ``buffer`` (``bytes``, ``bytearray``, ``memoryview``, ``mmap``).

    Checks what the broker's recovery checks (``checkMessageAndReturnSize``): the magic
    code, that TOTALSIZE equals the length recomputed from the fields, and with
    ``check_crc`` the body CRC. Negative lengths are rejected outright. Raises
    :class:`BadMagicError` for anything that is not a record (an end-of-file blank
    included), :class:`TruncatedError` when the record runs past the buffer.
    """
    magic, sys_flag, pos, body_length, topic_pos, topic_length, properties_pos, end = \
        _record_layout(buffer, offset)
    (total, _, body_crc, queue_id, flag, queue_offset, commit_log_offset, _, born_timestamp,
     born_ip, born_port, store_timestamp, store_ip, store_port, reconsume_times,
     prepared_transaction_offset, _) = _FIXED[sys_flag & _HOST_FLAGS].unpack_from(buffer, offset)
    body = bytes(buffer[pos:pos + body_length])
    if check_crc:
        _check_body_crc(body, body_crc)
    return MessageRecord(
        _topic_text(bytes(buffer[topic_pos:topic_pos + topic_length])), body,
        _properties_at(buffer, properties_pos, end), queue_id, flag, queue_offset,
        commit_log_offset, sys_flag, born_timestamp, (_unpack_ip(born_ip), born_port),
        store_timestamp, (_unpack_ip(store_ip), store_port), reconsume_times,
        prepared_transaction_offset, body_crc, magic, total)


def _dispatch_struct(born_ip, store_ip):
    # BODYCRC, QUEUEID, QUEUEOFFSET, PHYSICALOFFSET, SYSFLAG, STORETIMESTAMP,
    # PREPARED TRANSACTION OFFSET; the other fixed fields are skipped.
    return struct.Struct(">8xii4xqqi8x%dx4xq%dx4x4xq" % (born_ip, store_ip))


_DISPATCH = {flags: _dispatch_struct(4 + 12 * bool(flags & BORNHOST_V6_FLAG),
                                     4 + 12 * bool(flags & STOREHOSTADDRESS_V6_FLAG))
             for flags in _FIXED}

#: What :func:`decode_dispatch_fields` returns, in this order.
DISPATCH_FIELDS = ("topic", "queue_id", "queue_offset", "commit_log_offset", "sys_flag",
                   "store_timestamp", "prepared_transaction_offset", "properties", "store_size")


def decode_dispatch_fields(buffer, offset=0, check_crc=False):
    """The fields the dispatcher needs of the record at ``offset`` (``checkMessageAndReturnSize``
    without reading the body), as a tuple in the order of :data:`DISPATCH_FIELDS`.

    The same checks and errors as :func:`decode_record`; the body is read only for
    ``check_crc``; the hosts, born time, flag and reconsume times are skipped.
    """
    _, sys_flag, pos, body_length, topic_pos, topic_length, properties_pos, end = \
        _record_layout(buffer, offset)
    body_crc, queue_id, queue_offset, commit_log_offset, _, store_timestamp, prepared = \
        _DISPATCH[sys_flag & _HOST_FLAGS].unpack_from(buffer, offset)
    if check_crc:
        _check_body_crc(buffer[pos:pos + body_length], body_crc)
    return (_topic_text(bytes(buffer[topic_pos:topic_pos + topic_length])), queue_id,
            queue_offset, commit_log_offset, sys_flag, store_timestamp, prepared,
            _properties_at(buffer, properties_pos, end), end - offset)


def uncompressed_body(record):
    """The body with compression undone when the sysFlag says so (ZLIB only, ``MessageSysFlag``)."""
    if not record.sys_flag & COMPRESSED_FLAG:
        return record.body
    kind = record.sys_flag & COMPRESSION_TYPE_MASK
    if kind not in (0, COMPRESSION_ZLIB_TYPE):
        raise CodecError("compression type 0x%X is not supported" % kind)
    try:
        return zlib.decompress(record.body)
    except zlib.error as exc:
        raise CodecError("bad ZLIB body: %s" % exc) from None


# ---------------------------------------------------------------- end-of-file blank and scanning

def encode_blank(remaining):
    """The 8-byte end-of-file blank declaring ``remaining`` bytes left in the segment."""
    return _HEAD.pack(remaining, BLANK_MAGIC_CODE)


def needs_blank(record_length_, remaining):
    """Whether a record of ``record_length_`` bytes must go to the next segment instead."""
    return record_length_ + END_FILE_MIN_BLANK_LENGTH > remaining


class RecordScan:
    """Walks the records of a commit-log segment the way the broker's recovery does.

    Iterating yields what ``decode(buffer, offset, check_crc)`` makes of each record
    (:func:`decode_record`: :class:`MessageRecord` objects, the default;
    :func:`decode_dispatch_fields`: tuples). When iteration ends, ``stop``
    says why and ``position`` is the offset just after the last good record (the
    point recovery truncates to):

    * ``"blank"`` — an end-of-file blank at ``position`` (``blank_size`` bytes); the
      segment is full and records continue in the next one;
    * ``"empty"`` — a zeroed header (never-written space) or the buffer's end;
    * ``"corrupt"`` — anything else; ``error`` holds the :class:`CodecError`.
    """

    def __init__(self, buffer, start=0, check_crc=False, decode=decode_record):
        self.buffer = buffer
        self.decode = decode
        self.position = start
        self.check_crc = check_crc
        self.stop = None
        self.blank_size = None
        self.error = None

    def __iter__(self):
        step = self._step
        while True:
            record = step()
            if record is None:
                return
            yield record

    def _step(self):
        """Decode the record at ``position`` and move past it; None when the scan stops there."""
        if self.stop is not None:
            return None
        buffer = self.buffer
        size = len(buffer)
        pos = self.position
        if size - pos < 8:
            if any(buffer[pos:size]):
                self._finish("corrupt", TruncatedError("%d stray bytes at the end" % (size - pos)))
            else:
                self._finish("empty")
            return None
        total, magic = _HEAD.unpack_from(buffer, pos)
        if magic == BLANK_MAGIC_CODE:
            self.blank_size = total
            self._finish("blank")
            return None
        if magic == 0 and total == 0:
            self._finish("empty")
            return None
        try:
            record = self.decode(buffer, pos, self.check_crc)
        except CodecError as exc:
            # without its traceback: frames holding ``buffer`` (an mmap view) would keep
            # the segment from closing until the garbage collector runs
            self._finish("corrupt", exc.with_traceback(None))
            return None
        self.position = pos + total  # the decoder checked TOTALSIZE
        return record

    def _finish(self, stop, error=None):
        self.stop = stop
        self.error = error


class DispatchScan(RecordScan):
    """A :class:`RecordScan` of :func:`decode_dispatch_fields` tuples that also reads them a
    batch at a time (:meth:`take`), the way the reput does."""

    def __init__(self, buffer, start=0, check_crc=False):
        super().__init__(buffer, start, check_crc, decode_dispatch_fields)

    def take(self, max_count, limit=None):
        """The next records (at most ``max_count``; once ``position`` reaches ``limit``, no
        more), as iterating would yield them, with ``position``, ``stop`` and ``error`` as
        iteration leaves them; an empty list once the scan has stopped.

        With the C speedups, runs of usual records (version-1 magic code, IPv4 hosts, every
        layout check passing) are read in C; any other record (and a blank, the end) takes
        the path of iteration, which decides and says why."""
        fields = []
        stop_at = sys.maxsize if limit is None else limit
        take_usual = speedups.take_usual_records if speedups is not None else None
        check_crc = self.check_crc
        pos = self.position
        while len(fields) < max_count and pos < stop_at and self.stop is None:
            if take_usual is not None:
                pos = take_usual(self.buffer, pos, stop_at, max_count, check_crc, fields)
                if len(fields) >= max_count or pos >= stop_at:
                    break
            self.position = pos
            record = self._step()
            if record is not None:
                fields.append(record)
            pos = self.position
        self.position = pos
        return fields


def iter_records(buffer, start=0, check_crc=False):
    """A :class:`RecordScan` of :class:`MessageRecord` objects over ``buffer`` from ``start``."""
    return RecordScan(buffer, start, check_crc)


def iter_dispatch_fields(buffer, start=0, check_crc=False):
    """A :class:`DispatchScan` of :func:`decode_dispatch_fields` tuples over ``buffer`` from ``start``."""
    return DispatchScan(buffer, start, check_crc)


# ---------------------------------------------------------------- client batch (MessageDecoder#encodeMessages)

class Message:
    """A client message as a batch carries it: flag, body, properties (``Message``)."""

    __slots__ = ("body", "properties", "flag")

    def __init__(self, body=b"", properties=None, flag=0):
        self.body = body
        self.properties = {} if properties is None else properties
        self.flag = flag

    def __eq__(self, other):
        return (isinstance(other, Message) and self.body == other.body
                and self.properties == other.properties and self.flag == other.flag)

    def __repr__(self):
        return "Message(body=<%d bytes>, properties=%r, flag=%r)" % (
            len(self.body), self.properties, self.flag)


def _batch_length(ctx):
    return 22 + len(ctx.body) + len(ctx.properties)


#: One message of a ``SEND_BATCH_MESSAGE`` body; magic and CRC are written as 0 (``MessageDecoder#encodeMessage``).
BATCH_ITEM = cs.Struct(
    "total_size" / cs.Rebuild(cs.Int32sb, _batch_length),
    "magic_code" / cs.Int32sb,
    "body_crc" / cs.Int32sb,
    "flag" / cs.Int32sb,
    "body" / cs.Prefixed(cs.Int32sb, cs.GreedyBytes),
    "properties" / cs.Prefixed(cs.Int16sb, cs.GreedyBytes),
    cs.Check(cs.this.total_size == _batch_length),
)
#: A whole batch body: batch messages up to the end.
BATCH = cs.Struct("messages" / cs.GreedyRange(BATCH_ITEM), cs.Terminated)

_BATCH_HEAD = struct.Struct(">iiiii")


def encode_batch(messages):
    """``encodeMessages``: the concatenated batch records of ``messages`` (fast path)."""
    parts = []
    for m in messages:
        props = _properties_bytes(m.properties)
        body = m.body
        try:
            parts.append(_BATCH_HEAD.pack(22 + len(body) + len(props), 0, 0, m.flag, len(body)))
        except struct.error as exc:
            raise CodecError("batch field out of range: %s" % exc) from None
        parts += (body, _I16.pack(len(props)), props)
    return b"".join(parts)


def _batch_items(data):
    """``(flag, body, properties bytes)`` of each message of a batch body, every length checked
    (each TOTALSIZE must match its fields: stricter than Java, which ignores it)."""
    pos, end = 0, len(data)
    unpack_head, unpack_i16 = _BATCH_HEAD.unpack_from, _I16.unpack_from
    while pos < end:
        if end - pos < 22:
            raise TruncatedError("%d bytes cannot hold a batch message" % (end - pos))
        total, _, _, flag, body_length = unpack_head(data, pos)
        start = pos
        pos += 20
        if body_length < 0 or pos + body_length + 2 > end:
            raise CodecError("batch body length %d does not fit" % body_length)
        body = data[pos:pos + body_length]
        pos += body_length
        (properties_length,) = unpack_i16(data, pos)
        pos += 2
        if properties_length < 0 or pos + properties_length > end:
            raise CodecError("batch properties length %d does not fit" % properties_length)
        raw = data[pos:pos + properties_length]
        pos += properties_length
        if total != pos - start:
            raise CodecError("batch TOTALSIZE %d does not match %d" % (total, pos - start))
        yield flag, body, raw


def decode_batch(data):
    """``decodeMessages``: the :class:`Message` list of a batch body (fast path).

    Stricter than Java, which ignores TOTALSIZE: each TOTALSIZE must match its fields.
    """
    return [Message(bytes(body), string_to_properties(_text(raw)), flag)
            for flag, body, raw in _batch_items(data)]


class BatchRecord(MessageRecord):
    """The :class:`MessageRecord` of one batch message, as :func:`decode_batch_records` makes
    it: ``stored_properties`` is its stored properties string as UTF-8 (Java's batch rule),
    ``properties`` what parsing that string gives; whoever changes ``properties``
    afterwards sets ``stored_properties`` to None."""

    __slots__ = ("stored_properties",)


class BatchRecords(list):
    """The :class:`BatchRecord` list of one ``SEND_BATCH_MESSAGE``, with what Java's
    ``MessageExtBatch`` holds besides: ``body_length``, the length of the batch body, and
    ``properties``, the batch's own properties (the request header's and ``CLUSTER``)."""

    __slots__ = ("body_length", "properties")


def stored_batch_properties(own, batch):
    """A batch message's stored properties string (UTF-8), as ``MessageExtBatchEncoder``
    writes it (``CommitLog.MessageExtBatchEncoder``): the message's bytes ``own`` as the client sent them, one
    0x02 when both ``own`` and the batch's string ``batch`` are non-empty and ``own`` does
    not end in 0x02, then ``batch``."""
    if own and batch and own[-1] != 2:
        return own + b"\x02" + batch
    return own + batch


def decode_batch_records(data, batch_properties, prototype):
    """The records ``asyncPutMessages`` stores for the batch body ``data`` (``CommitLog.MessageExtBatchEncoder``),
    as :class:`BatchRecords`: each message's flag and body with the topic, queue, sys flag,
    born timestamp and host, store host, reconsume times and magic code of ``prototype`` (a
    :class:`MessageRecord`), as a :class:`BatchRecord` (body CRC 0: the store computes it).

    Like Java, a message's properties are not merged with the batch's: its stored string is
    :func:`stored_batch_properties` of its own bytes and the batch's string
    (``batch_properties``, a dict in writing order), so a name in both is stored twice.
    Its ``properties`` are what Java's dispatch parses from that string (the batch's value
    of a name in both wins). Raises as :func:`decode_batch` does.
    """
    return _decode_batch_records(data, batch_properties, *_batch_strings(batch_properties),
                                 prototype)


def _batch_strings(batch_properties):
    """The batch's properties string as its records store it (UTF-8) and as their dispatch
    parses it."""
    batch_text = properties_to_string(batch_properties)
    return _utf8(batch_text), string_to_properties(batch_text)


def _decode_batch_records(data, batch_properties, batch_raw, batch_parsed, prototype):
    records = BatchRecords(batch_records(data, batch_raw, batch_parsed, prototype))
    records.body_length = len(data)
    records.properties = batch_properties
    return records


class PackedBatch:
    """One ``SEND_BATCH_MESSAGE`` body kept as the client sent it, for a store to write in
    one pass (:func:`write_packed_batch`) without a record object per message.

    It stands for the :class:`BatchRecords` that :func:`decode_batch_records` would give,
    and makes them only when they are read (iterating, indexing, :meth:`records`): a store
    that does not know this class sees a sequence of records. ``count`` messages whose
    bodies and stored properties strings are ``payload`` bytes; ``prototype``, the
    :class:`MessageRecord` of what they share; ``body_length`` and ``properties`` as
    :class:`BatchRecords` has them."""

    __slots__ = ("data", "properties", "batch_raw", "batch_parsed", "prototype", "count",
                 "payload", "_records")

    def __init__(self, data, properties, batch_raw, batch_parsed, prototype, count, payload):
        self.data = data
        self.properties = properties
        self.batch_raw = batch_raw
        self.batch_parsed = batch_parsed
        self.prototype = prototype
        self.count = count
        self.payload = payload
        self._records = None

    @property
    def body_length(self):
        return len(self.data)

    def records(self):
        """The :class:`BatchRecords` this batch stands for (made once)."""
        if self._records is None:
            self._records = _decode_batch_records(self.data, self.properties, self.batch_raw,
                                                  self.batch_parsed, self.prototype)
        return self._records

    def __len__(self):
        return self.count

    def __iter__(self):
        return iter(self.records())

    def __getitem__(self, index):
        return self.records()[index]


def pack_batch(data, batch_properties, prototype):
    """:func:`decode_batch_records` as a :class:`PackedBatch` when the C speedups can write
    the batch whole: a well-formed body, no stored properties string over 32767 bytes, and
    a ``prototype`` whose shared fields they encode (version 1, IPv4 hosts, fields in
    range); the :class:`BatchRecords` otherwise (raising as it does)."""
    batch_raw, batch_parsed = _batch_strings(batch_properties)
    if speedups is not None and speedups.usual_batch_prototype(prototype):
        measured = speedups.measure_packed_batch(data, len(batch_raw))
        if measured is not None:
            return PackedBatch(data, batch_properties, batch_raw, batch_parsed, prototype,
                               *measured)
    return _decode_batch_records(data, batch_properties, batch_raw, batch_parsed, prototype)


def batch_records(data, batch_raw, batch_parsed, prototype):
    """The :class:`BatchRecord` list of :func:`decode_batch_records`, given the batch's
    properties string as UTF-8 (``batch_raw``) and parsed (``batch_parsed``)."""
    topic, queue_id, sys_flag = prototype.topic, prototype.queue_id, prototype.sys_flag
    born_timestamp, born_host = prototype.born_timestamp, prototype.born_host
    store_host, reconsume_times = prototype.store_host, prototype.reconsume_times
    magic_code = prototype.magic_code
    new = object.__new__
    records = []
    for flag, body, raw in _batch_items(data):
        raw = bytes(raw)
        properties = string_to_properties(str(raw, "utf-8", "surrogateescape"))
        properties.update(batch_parsed)
        record = new(BatchRecord)
        record.topic = topic
        record.body = bytes(body)
        record.properties = properties
        record.queue_id = queue_id
        record.flag = flag
        record.queue_offset = record.commit_log_offset = record.store_timestamp = 0
        record.sys_flag = sys_flag
        record.born_timestamp = born_timestamp
        record.born_host = born_host
        record.store_host = store_host
        record.reconsume_times = reconsume_times
        record.prepared_transaction_offset = record.body_crc = 0
        record.magic_code = magic_code
        record._store_size = None
        record.stored_properties = stored_batch_properties(raw, batch_raw)
        records.append(record)
    return records


#: The Python :func:`batch_records`, the reference of its C version.
python_batch_records = batch_records
if speedups is not None:
    def batch_records(data, batch_raw, batch_parsed, prototype):  # noqa: F811
        """:func:`python_batch_records` in C (which raises what a malformed body is)."""
        records = speedups.batch_records(data, batch_raw, batch_parsed, prototype, BatchRecord)
        if records is None:
            return python_batch_records(data, batch_raw, batch_parsed, prototype)
        return records


def parse_batch_declared(data):
    """Decode a batch body through :data:`BATCH` only."""
    items = parse_or_raise(BATCH, data).messages
    return [Message(i.body, string_to_properties(_text(i.properties)), i.flag) for i in items]


def build_batch_declared(messages):
    """Encode ``messages`` through :data:`BATCH` only."""
    return build_or_raise(BATCH, dict(messages=[
        dict(magic_code=0, body_crc=0, flag=m.flag, body=m.body,
             properties=_properties_bytes(m.properties)) for m in messages]))


# ---------------------------------------------------------------- a batch as the commit log stores it

def encode_stored_batch(records, properties, store_timestamp, commit_log_offset, queue_offset):
    """The records of one batch written back to back from ``commit_log_offset`` with queue
    offsets from ``queue_offset`` (``CommitLog.MessageExtBatchEncoder#encode``): each record gets
    its store timestamp, body CRC and both offsets, and is encoded as :func:`encode_record`
    would encode it (``properties``: each record's properties string as UTF-8). What the
    records share with the first (topic, queue, sys flag, born and store hosts, born
    timestamp, reconsume times, magic code) is packed once; a record that differs is
    encoded on its own. Returns the bytes, the offset message ids and each record's
    :data:`DISPATCH_FIELDS` (what the dispatch needs, without reading the records again)."""
    first = records[0]
    topic, queue_id, sys_flag, magic = first.topic, first.queue_id, first.sys_flag, first.magic_code
    born_host, store_host = first.born_host, first.store_host
    born_timestamp, reconsume_times = first.born_timestamp, first.reconsume_times
    prepared = first.prepared_transaction_offset
    topic_bytes = _topic_utf8(topic)
    if magic != MESSAGE_MAGIC_CODE or len(topic_bytes) > MAX_TOPIC_LENGTH_V1:
        shared = None  # the V2 layout (or a bad record): every record on its own
    else:
        shared = (topic, queue_id, sys_flag, magic, born_host, store_host, born_timestamp,
                  reconsume_times, prepared)
        topic_part = bytes((len(topic_bytes),)) + topic_bytes
        overhead = record_length(sys_flag, 0, len(topic_bytes), 0)
        pack = _FIXED[sys_flag & _HOST_FLAGS].pack
        born_ip, store_ip = _pack_ip(born_host[0]), _pack_ip(store_host[0])
        born_port, store_port = born_host[1], store_host[1]
    id_prefix = _message_id_prefix(store_host)
    i16 = _I16.pack
    crc32 = zlib.crc32
    parts, ids, dispatch = [], [], []
    offset = commit_log_offset
    for record, props in zip(records, properties):
        body = record.body
        record.store_timestamp = store_timestamp
        record.body_crc = crc = crc32(body) & 0x7FFFFFFF
        record.commit_log_offset = offset
        record.queue_offset = queue_offset
        if shared is not None and (
                record.topic, record.queue_id, record.sys_flag, record.magic_code,
                record.born_host, record.store_host, record.born_timestamp,
                record.reconsume_times, record.prepared_transaction_offset) == shared:
            size = overhead + len(body) + len(props)
            try:
                parts += (pack(size, magic, crc, queue_id, record.flag, queue_offset, offset,
                               sys_flag, born_timestamp, born_ip, born_port, store_timestamp,
                               store_ip, store_port, reconsume_times, prepared, len(body)),
                          body, topic_part, i16(len(props)), props)
            except struct.error as exc:
                raise CodecError("record field out of range: %s" % exc) from None
        else:
            data = encode_record(record, props)
            size = len(data)
            parts.append(data)
        if record.store_host == store_host and 0 <= offset <= _MAX_LONG:
            ids.append(id_prefix + "%016X" % offset)
        else:
            ids.append(create_message_id(record.store_host, offset))
        dispatch.append((record.topic, record.queue_id, queue_offset, offset, record.sys_flag,
                         store_timestamp, record.prepared_transaction_offset, record.properties,
                         size))
        offset += size
        queue_offset += 1
    return b"".join(parts), ids, dispatch


def write_stored_batch(buffer, position, total, records, properties, store_timestamp,
                       commit_log_offset, queue_offset):
    """:func:`encode_stored_batch` of records of ``total`` bytes written into the writable
    ``buffer`` (a segment's mapping) at ``position``; returns the message ids and the
    dispatch fields. ValueError when ``total`` bytes from ``position`` do not fit the
    buffer and CodecError when the records are not ``total`` bytes, with nothing written."""
    if position < 0 or total < 0 or position + total > len(buffer):
        raise ValueError("the records do not fit the buffer")
    data, ids, dispatch = encode_stored_batch(records, properties, store_timestamp,
                                              commit_log_offset, queue_offset)
    if len(data) != total:
        raise CodecError("records of %d bytes were checked as %d" % (len(data), total))
    buffer[position:position + total] = data
    return ids, dispatch


#: The Python :func:`write_stored_batch`, the reference of its C version.
python_write_stored_batch = write_stored_batch
if speedups is not None:
    def write_stored_batch(buffer, position, total, records, properties,  # noqa: F811
                           store_timestamp, commit_log_offset, queue_offset):
        """:func:`python_write_stored_batch`, in C for the usual batch (see
        ``speedups.write_stored_batch``)."""
        if not isinstance(properties, (list, tuple)):
            properties = list(properties)  # both writers may read them
        written = speedups.write_stored_batch(buffer, position, total, records, properties,
                                              store_timestamp, commit_log_offset, queue_offset)
        if written is None:
            return python_write_stored_batch(buffer, position, total, records, properties,
                                             store_timestamp, commit_log_offset, queue_offset)
        return written


def write_packed_batch(buffer, position, total, batch, store_timestamp, commit_log_offset,
                       queue_offset):
    """:func:`write_stored_batch` of the records of ``batch`` (a :class:`PackedBatch` that
    :func:`pack_batch` made), in C straight from its body when it can (else of its
    records): the message ids and the dispatch fields, and the same errors."""
    written = speedups.write_packed_batch(
        buffer, position, total, batch.data, batch.batch_raw, batch.batch_parsed,
        batch.prototype, store_timestamp, commit_log_offset, queue_offset, batch.count)
    if written is None:  # a field out of range, or records not of total bytes
        records = batch.records()
        return write_stored_batch(buffer, position, total, records,
                                  [r.stored_properties for r in records], store_timestamp,
                                  commit_log_offset, queue_offset)
    return written
