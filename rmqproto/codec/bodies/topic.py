"""Topic configuration bodies and REGISTER_BROKER's body (``RegisterBrokerBody``, ``TopicConfig``).

``RegisterBrokerBody`` travels plain (fastjson JSON) or, when the broker sets
``compressedRegister``, as a zlib stream (Java ``Deflater(BEST_COMPRESSION)``) of
length-prefixed parts: the DataVersion JSON, each topic as the text
``"<name> <read> <write> <perm> <filterType>"``, and the filter-server list JSON.
"""

import re
import struct
import zlib

from rmqproto.codec import fastjson
from rmqproto.codec.bodies._bean import (
    BOOL, INT, LONG, STRING, BeanOf, EnumOf, JavaEnum, JsonBean, ListOf, MapOf, json_bean, member,
)
from rmqproto.errors import CodecError

__all__ = [
    "PERM_PRIORITY", "PERM_READ", "PERM_WRITE", "PERM_INHERIT", "TOPIC_SYS_FLAG_UNIT",
    "TOPIC_SYS_FLAG_UNIT_SUB", "perm_to_string", "TopicFilterType", "DataVersion", "TopicConfig",
    "TopicConfigSerializeWrapper", "RegisterBrokerBody", "MAX_INFLATED_REGISTER_BODY",
    "TopicConfigAndQueueMapping",
]

#: ``PermName`` bits.
PERM_PRIORITY = 8
PERM_READ = 4
PERM_WRITE = 2
PERM_INHERIT = 1

#: ``TopicSysFlag`` bits.
TOPIC_SYS_FLAG_UNIT = 1
TOPIC_SYS_FLAG_UNIT_SUB = 2


def perm_to_string(perm):
    """``PermName.perm2String``: ``"RW-"``, ``"R--"``, … (X for INHERIT)."""
    return "".join(flag if perm & bit else "-"
                   for flag, bit in (("R", PERM_READ), ("W", PERM_WRITE), ("X", PERM_INHERIT)))


class TopicFilterType(JavaEnum):
    SINGLE_TAG = "SINGLE_TAG"
    MULTI_TAG = "MULTI_TAG"


@json_bean
class DataVersion(JsonBean):
    """``{"counter":n,"timestamp":ms}``; Java stamps new versions with the clock, here 0 until set."""

    timestamp: int = member(LONG, default=0)
    counter: int = member(LONG, default=0)

    def next_version(self, now_ms):
        """The version after this one (``DataVersion.nextVersion`` with the clock passed in)."""
        return DataVersion(timestamp=now_ms, counter=self.counter + 1)


@json_bean
class TopicConfig(JsonBean):
    """A topic's queues and permissions; defaults are ``TopicConfig``'s (16/16, RW, SINGLE_TAG)."""

    topic_name: str = member(STRING)
    read_queue_nums: int = member(INT, default=16)
    write_queue_nums: int = member(INT, default=16)
    perm: int = member(INT, default=PERM_READ | PERM_WRITE)
    topic_filter_type: TopicFilterType = member(EnumOf(TopicFilterType), default=TopicFilterType.SINGLE_TAG)
    topic_sys_flag: int = member(INT, default=0)
    order: bool = member(BOOL, default=False)

    def to_text(self):
        """``TopicConfig.encode()``: the compressed register body's line (sysFlag and order are lost)."""
        return "%s %d %d %d %s" % (self.topic_name, self.read_queue_nums, self.write_queue_nums,
                                   self.perm, TopicFilterType(self.topic_filter_type).value)

    @classmethod
    def from_text(cls, text):
        """``TopicConfig.decode(String)``; raises ``CodecError`` where Java would fail."""
        parts = text.split(" ")
        while parts and not parts[-1]:  # String.split drops trailing empty strings
            parts.pop()
        if len(parts) != 5:
            raise CodecError("topic config text %r does not have five fields" % (text,))
        name, read, write, perm, filter_type = parts
        numbers = [_java_parse_int(field) for field in (read, write, perm)]
        return cls(name, *numbers, topic_filter_type=EnumOf(TopicFilterType).decode(filter_type, "topicFilterType"))


@json_bean
class TopicConfigAndQueueMapping(TopicConfig):
    """GET_TOPIC_CONFIG's body (RocketMQ 5's ``TopicConfigAndQueueMapping``): a topic config
    with RocketMQ 5's ``attributes``. Its ``mappingDetail`` (a static topic's logical queues)
    is left out: a 4.9-style broker has no static topics, and Java writes none for them."""

    attributes: dict = member(MapOf(STRING, STRING), factory=dict)

    @classmethod
    def of(cls, topic_config):
        """The body for one of the broker's :class:`TopicConfig`."""
        return cls(**{spec.attr: getattr(topic_config, spec.attr) for spec in TopicConfig._specs})


_JAVA_INT = re.compile(r"[+-]?[0-9]+\Z")


def _java_parse_int(text):
    if not _JAVA_INT.match(text) or not -(1 << 31) <= int(text) < (1 << 31):
        raise CodecError("%r is not a Java int" % (text,))
    return int(text)


@json_bean
class TopicConfigSerializeWrapper(JsonBean):
    """GET_ALL_TOPIC_CONFIG's body and the pre-V3_0_11 register body (``TopicConfigSerializeWrapper``)."""

    topic_config_table: dict = member(MapOf(STRING, BeanOf(TopicConfig)), factory=dict)
    data_version: DataVersion = member(BeanOf(DataVersion), factory=DataVersion)


#: Cap on the inflated size of a compressed register body (the frame limit is 16 MiB).
MAX_INFLATED_REGISTER_BODY = 256 * 1024 * 1024

_INT32 = struct.Struct(">i")


@json_bean
class RegisterBrokerBody(JsonBean):
    """REGISTER_BROKER's body, plain or compressed (``RegisterBrokerBody#encode``/``decode``)."""

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = member(
        BeanOf(TopicConfigSerializeWrapper), factory=TopicConfigSerializeWrapper)
    filter_server_list: list = member(ListOf(STRING), factory=list)

    def encode(self, compressed=False):
        """``RegisterBrokerBody.encode(compress)``."""
        return self.to_compressed() if compressed else self.to_json()

    @classmethod
    def decode(cls, data, compressed=None):
        """``RegisterBrokerBody.decode(data, compressed)``; ``None`` tells the two apart by the first byte."""
        if compressed is None:
            compressed = bytes(data[:1]) != b"{"
        return cls.from_compressed(data) if compressed else cls.from_json(data)

    def to_compressed(self):
        """The zlib stream; Python's zlib level 9 gives Java's ``Deflater(BEST_COMPRESSION)`` bytes."""
        wrapper = self.topic_config_serialize_wrapper
        parts = _framed(wrapper.data_version.to_json()) + [_INT32.pack(len(wrapper.topic_config_table))]
        for topic_config in wrapper.topic_config_table.values():
            parts.extend(_framed(topic_config.to_text().encode("utf-8")))
        parts.extend(_framed(fastjson.dumps(list(self.filter_server_list))))
        compressor = zlib.compressobj(9)
        return compressor.compress(b"".join(parts)) + compressor.flush()

    @classmethod
    def from_compressed(cls, data):
        """Inflate and read the parts; trailing bytes after them are ignored, as Java does.

        Like Java, a filter-server list that is not a JSON array of strings reads as empty.
        """
        reader = _InflatedReader(data)
        data_version = DataVersion.from_json(reader.part())
        table = {}
        for _ in range(reader.int32()):
            topic_config = TopicConfig.from_text(reader.part().decode("utf-8", "replace"))
            table[topic_config.topic_name] = topic_config
        filter_list_json = reader.part()
        try:
            filter_servers = ListOf(STRING).decode(fastjson.loads(filter_list_json), "filterServerList")
        except CodecError:
            filter_servers = []
        wrapper = TopicConfigSerializeWrapper(topic_config_table=table, data_version=data_version)
        return cls(topic_config_serialize_wrapper=wrapper, filter_server_list=filter_servers)


def _framed(payload):
    return [_INT32.pack(len(payload)), payload]


class _InflatedReader:
    """Reads int32-length-prefixed parts from a zlib stream, inflating only what is needed."""

    def __init__(self, data):
        self._inflater = zlib.decompressobj()
        self._pending = bytes(data)
        self._buffer = b""
        self._pos = 0
        self._inflated = 0

    def _need(self, count):
        while len(self._buffer) - self._pos < count:
            if not self._pending:
                raise CodecError("compressed register body ends early")
            if self._inflated > MAX_INFLATED_REGISTER_BODY:
                raise CodecError("compressed register body inflates beyond %d bytes" % MAX_INFLATED_REGISTER_BODY)
            try:
                chunk = self._inflater.decompress(self._pending, 1 << 20)
            except zlib.error as exc:
                raise CodecError("compressed register body: %s" % (exc,)) from None
            self._pending = self._inflater.unconsumed_tail
            self._inflated += len(chunk)
            if not chunk and not self._pending:
                raise CodecError("compressed register body ends early")
            self._buffer = self._buffer[self._pos:] + chunk
            self._pos = 0
        start = self._pos
        self._pos += count
        return self._buffer[start:self._pos]

    def int32(self):
        (value,) = _INT32.unpack(self._need(4))
        if value < 0:
            raise CodecError("negative length or count %d in compressed register body" % value)
        return value

    def part(self):
        return self._need(self.int32())
