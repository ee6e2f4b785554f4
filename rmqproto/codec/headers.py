"""Typed custom headers: the ``extFields`` of requests and responses (Java ``RemotingCommand#decodeCommandCustomHeader``).

Each class declares its fields the way the RocketMQ 4.9.8 Java class does: wire name,
Java type, ``@CFNotNull`` (``required``) and initial value, in declaration order, with
the fields of a Java superclass (``RpcRequestHeader.bname``) after the class's own.
Python attribute names are the wire names spelled in snake case (``SendMessageRequestHeaderV2``
names its one-letter keys after the V1 fields they stand for).

:meth:`CustomHeader.to_ext_fields` gives the ``extFields`` in the order Java's wire
encoder writes them: ``makeCustomHeaderToNet`` fills a ``java.util.HashMap`` (header
fields taken from a ``HashSet<Field>``, so the emulation below hashes
``declaringClass.getName()`` xor field name to find the insertion order), while the
binary encoding of a ``FastCodesHeader`` class writes its own fixed field list instead.

:meth:`CustomHeader.from_ext_fields` parses as ``decodeCommandCustomHeader`` does, but
strictly: a missing required field raises :class:`~rmqproto.errors.MissingFieldError` and
an unparsable value :class:`~rmqproto.errors.CodecError`, where Java logs the parse error
and leaves the field unset (and the ``FastCodesHeader`` classes only log missing fields).
"""

import keyword
import math
import re
import sys
from functools import lru_cache, partial

from rmqproto.codec.codes import RequestCode
from rmqproto.codec.fastjson import java_double_str, java_hashmap_order
from rmqproto.codec.frame import SERIALIZE_ROCKETMQ
from rmqproto.codec.javalang import java_string_hash
from rmqproto.codec.native import speedups
from rmqproto.errors import CodecError, MissingFieldError

__all__ = [
    "Field", "CustomHeader", "HEADER_CLASSES", "REQUEST_HEADERS", "RESPONSE_HEADERS",
    "request_header_class", "response_header_class",
]

_PROTOCOL = "org.apache.rocketmq.common.protocol.header."
_NAMESRV = _PROTOCOL + "namesrv."
_RPC = "org.apache.rocketmq.common.rpc."

#: Every declared (concrete) header class by its Java simple name.
HEADER_CLASSES = {}

# ---------------------------------------------------------------- Java value semantics

# Double.parseDouble: whitespace trimmed, optional sign, decimal digits with optional
# exponent, optional float/double suffix, or NaN / Infinity.
_DOUBLE_TEXT = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?)", re.ASCII)


def _java_trim(text):
    """``String.trim``: strips every char <= U+0020 at both ends."""
    return text.strip("".join(map(chr, range(0x21))))


def _parse_integral(bits):
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def parse(text):
        # Integer.parseInt / Long.parseLong: optional sign, then (Unicode) decimal digits only.
        if text.isdecimal() or (text[:1] in ("+", "-") and text[1:].isdecimal()):
            value = int(text)
            if low <= value <= high:
                return value
        raise ValueError(text)

    return parse


def _parse_boolean(text):
    return text.lower() == "true"  # Boolean.parseBoolean never fails


def _parse_double(text):
    text = _java_trim(text)
    if not _DOUBLE_TEXT.fullmatch(text):
        raise ValueError(text)
    return float(text.rstrip("fFdD").replace("Infinity", "inf"))


def _format_integral(bits):
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def fmt(value):
        if type(value) is bool or not isinstance(value, int) or not low <= value <= high:
            raise CodecError("%r is not a %d-bit Java integer" % (value, bits))
        return str(int(value))

    return fmt


def _format_string(value):
    if not isinstance(value, str):
        raise CodecError("%r is not a string" % (value,))
    return value


def _format_boolean(value):
    if type(value) is not bool:
        raise CodecError("%r is not a boolean" % (value,))
    return "true" if value else "false"


def _format_double(value):
    """``Double.toString`` (fastjson's writer says ``null`` where Java says NaN / Infinity)."""
    if type(value) is bool or not isinstance(value, (int, float)):
        raise CodecError("%r is not a number" % (value,))
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return java_double_str(value)


def _identity(text):
    return text


class _JavaType:
    """A Java field type of a custom header: how ``toString`` writes it and how decoding parses it."""

    __slots__ = ("name", "parse", "format", "primitive_default")

    def __init__(self, name, parse, fmt, primitive_default=None):
        self.name = name
        self.parse = parse
        self.format = fmt
        self.primitive_default = primitive_default


_JAVA_TYPES = {}
for _names, _parse, _fmt, _zero in (
        (("String",), _identity, _format_string, None),
        # an Integer or Boolean field takes few distinct values (queue ids, flags, counts):
        # their texts are parsed once
        (("Integer", "int"), lru_cache(maxsize=4096)(_parse_integral(32)),
         _format_integral(32), 0),
        (("Long", "long"), _parse_integral(64), _format_integral(64), 0),
        (("Boolean", "boolean"), lru_cache(maxsize=256)(_parse_boolean), _format_boolean, False),
        (("Double", "double"), _parse_double, _format_double, 0.0)):
    for _name in _names:
        _JAVA_TYPES[_name] = _JavaType(_name, _parse, _fmt, _zero if _name.islower() else None)


# ---------------------------------------------------------------- declarations

def _snake(name):
    """``queueOffset`` -> ``queue_offset``, ``clientID`` -> ``client_id``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


class Field:
    """One field of a custom header as the Java class declares it.

    ``wire`` is the Java field name (the ``extFields`` key), ``java_type`` its declared type
    (``"String"``, ``"Integer"``, ``"int"``, ``"Long"``, ``"long"``, ``"Boolean"``,
    ``"boolean"``, ``"Double"``, ``"double"``), ``required`` mirrors ``@CFNotNull`` and
    ``default`` the field initializer (a primitive without one starts at 0 / false and is
    therefore always sent).
    """

    __slots__ = ("wire", "java_type", "required", "default", "name", "declaring_class", "type")

    def __init__(self, wire, java_type, required=False, default=None, name=None):
        self.wire = wire
        self.java_type = java_type
        self.type = _JAVA_TYPES[java_type]
        self.required = required
        self.default = self.type.primitive_default if default is None else default
        self.name = name or _snake(wire)
        self.declaring_class = None

    def __repr__(self):
        return "Field(%r, %r%s)" % (self.wire, self.java_type, ", required=True" * self.required)


def _required(wire, java_type, **kw):
    return Field(wire, java_type, required=True, **kw)


def _hashset_order(fields):
    """Iteration order of Java's ``HashSet<Field>`` over ``fields`` (wire names).

    ``Field.hashCode`` is ``declaringClass.getName().hashCode() ^ name.hashCode()``; a
    ``HashMap`` whose key hashes are those ints orders them as an ``Integer``-keyed map.
    """
    hashes = {}
    for field in fields:
        code = java_string_hash(field.declaring_class) ^ java_string_hash(field.wire)
        hashes[code] = field.wire
    if len(hashes) != len(fields):  # pragma: no cover - would need two equal Field hashes
        raise AssertionError("Field hash collision")
    return tuple(hashes[h] for h in java_hashmap_order(list(hashes), long_keys=False))


_NO_FIELDS = {}


def _missing(cls, wire):
    raise MissingFieldError("the custom field <%s> of %s is null" % (wire, cls.__name__))


def _unparsable(cls, wire, text):
    raise CodecError("the custom field <%s> of %s is not a valid %s: %r" % (
        wire, cls.__name__, cls.field(wire).java_type, text)) from None


def _compile_decoder(cls, target, decoders, not_decoded=()):
    """A function ``ext_fields -> header`` that makes a ``target`` instance with its attributes
    set from ``ext_fields`` (a dict of strings, or None) as ``decoders`` (a
    ``CustomHeader._decoders`` table of ``cls``) say, and those of ``not_decoded``
    (``(attribute, initial value)`` pairs) to their initial values; errors name ``cls``.

    The function is written out field by field (no loop, no ``setattr``): every request
    header is decoded this way, the send path's for every message."""
    lines = ["def decode(ext_fields):",
             "    get = (ext_fields or _NO_FIELDS).get",
             "    header = new(target)"]
    namespace = {"_NO_FIELDS": _NO_FIELDS, "new": target.__new__, "target": target,
                 "missing": partial(_missing, cls), "unparsable": partial(_unparsable, cls),
                 "_ERRORS": (ValueError, TypeError, AttributeError)}
    for i, (wire, name, parse, required, default) in enumerate(decoders):
        if not name.isidentifier() or keyword.iskeyword(name):  # pragma: no cover
            raise AssertionError("header attribute %r is not a name" % name)
        namespace["w%d" % i], namespace["p%d" % i], namespace["d%d" % i] = wire, parse, default
        lines.append("    text = get(w%d)" % i)
        lines.append("    if text is None:")
        lines.append("        missing(w%d)" % i if required else
                     "        header.%s = d%d" % (name, i))
        if parse is None:
            lines.append("    else:\n        header.%s = text" % name)
        else:
            lines += ["    else:",
                      "        try:",
                      "            header.%s = p%d(text)" % (name, i),
                      "        except _ERRORS:",
                      "            unparsable(w%d, text)" % i]
    for i, (name, default) in enumerate(not_decoded):
        namespace["n%d" % i] = default
        lines.append("    header.%s = n%d" % (name, i))
    lines.append("    return header")
    exec("\n".join(lines), namespace)  # noqa: S102 - source built from the declarations only
    return namespace["decode"]


def _native_decoder(python_decode, target, decoders, not_decoded=()):
    """``python_decode`` (from :func:`_compile_decoder`) in C when every decoded field is a
    String, Integer, Long or Boolean (the C version hands every ``ext_fields`` it does not
    decode itself to ``python_decode``, so values and errors stay the same); otherwise
    ``python_decode`` itself."""
    kinds = {None: 0, _JAVA_TYPES["Integer"].parse: 1, _JAVA_TYPES["Long"].parse: 2,
             _JAVA_TYPES["Boolean"].parse: 3}
    if speedups is None or any(parse not in kinds for _, _, parse, _, _ in decoders):
        return python_decode
    fields = tuple((wire, sys.intern(name), kinds[parse], bool(required), default)
                   for wire, name, parse, required, default in decoders)
    plan = (target, fields, tuple((sys.intern(name), default) for name, default in not_decoded),
            python_decode)
    return partial(speedups.decode_header, plan)


@lru_cache(maxsize=1024)
def _hashmap_order(keys):
    return java_hashmap_order(keys)


class _HeaderType(type):
    """Completes a header class from its ``fields``: slots, inherited fields, Java field order."""

    def __new__(mcs, name, bases, namespace):
        own = tuple(namespace.get("fields", ()))
        namespace["__slots__"] = tuple(f.name for f in own)
        cls = super().__new__(mcs, name, bases, namespace)
        for field in own:
            field.declaring_class = cls.java_class
        inherited = tuple(f for base in cls.__mro__[1:] for f in base.__dict__.get("fields", ()))
        cls.all_fields = own + inherited
        cls._insertion = _hashset_order(cls.all_fields)
        # a FastCodesHeader's own decode() reads only its list (SendMessageRequestHeaderV2
        # ignores the inherited bname)
        cls._decoded = frozenset(f.wire for f in cls.all_fields
                                 if cls.fast_fields is None or f.wire in cls.fast_fields)
        # what from_ext_fields does per field: (wire name, attribute, parser or None for a
        # String, required, initial value) for each field decoded; (attribute, initial
        # value) for the others
        cls._decoders = tuple(
            (f.wire, f.name, None if f.type.parse is _identity else f.type.parse, f.required,
             f.default) for f in cls.all_fields if f.wire in cls._decoded)
        cls._not_decoded = tuple((f.name, f.default) for f in cls.all_fields
                                 if f.wire not in cls._decoded)
        #: the written-out Python decoder, the reference of the C one in ``_decode``
        cls._python_decode = staticmethod(
            _compile_decoder(cls, cls, cls._decoders, cls._not_decoded))
        cls._decode = staticmethod(_native_decoder(cls._python_decode, cls, cls._decoders,
                                                   cls._not_decoded))
        if cls.java_class and not namespace.get("abstract"):
            HEADER_CLASSES[name] = cls
        return cls


class CustomHeader(metaclass=_HeaderType):
    """Base of every custom header; subclasses set ``java_class`` and ``fields``.

    ``all_fields`` lists the class's own fields, then its superclasses'. ``fast_fields``
    (wire names) marks a ``FastCodesHeader`` class: its binary header writes exactly those
    fields, in that order, instead of the ``HashMap`` order.
    """

    java_class = None
    fields = ()
    fast_fields = None

    def __init__(self, **values):
        for field in self.all_fields:
            setattr(self, field.name, values.pop(field.name, field.default))
        if values:
            raise TypeError("%s has no field(s) %s" % (type(self).__name__, ", ".join(values)))

    # -- encoding

    def to_ext_fields(self, serialize_type=0, extra=None):
        """The ``extFields`` dict Java's wire encoder produces for this header.

        ``extra`` holds fields added to the command before encoding (``addExtField``, e.g.
        ``MSG_REGION`` on send responses); a header field of the same name wins. With
        ``serialize_type`` 1 (ROCKETMQ) a ``FastCodesHeader`` class writes its fixed list
        first and ``extra`` after it; otherwise everything is in ``HashMap`` order.
        """
        values = {}
        for field in self.all_fields:
            value = getattr(self, field.name)
            if value is not None:
                values[field.wire] = field.type.format(value)
        extra = dict(extra or ())
        if serialize_type == SERIALIZE_ROCKETMQ and self.fast_fields is not None:
            out = {wire: values[wire] for wire in self.fast_fields if wire in values}
            for key in _hashmap_order(tuple(extra)):
                out.setdefault(key, extra[key])
            return out
        keys = tuple(dict.fromkeys([*extra, *(w for w in self._insertion if w in values)]))
        extra.update(values)
        return {key: extra[key] for key in _hashmap_order(keys)}

    # -- decoding

    @classmethod
    def from_ext_fields(cls, ext_fields):
        """Parse ``ext_fields`` (a ``dict`` of strings, or ``None``) into a header."""
        header = cls._decode(ext_fields)
        header.check_fields()
        return header

    @classmethod
    def field(cls, wire):
        """The :class:`Field` named ``wire`` on the wire."""
        return next(f for f in cls.all_fields if f.wire == wire)

    def check_fields(self):
        """The class's own ``checkFields`` rule; raise ``CodecError`` when it fails."""

    # -- plumbing

    def as_dict(self):
        """``{python name: value}`` of every field, in declaration order."""
        return {f.name: getattr(self, f.name) for f in self.all_fields}

    def __eq__(self, other):
        return type(other) is type(self) and other.as_dict() == self.as_dict()

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % item for item in self.as_dict().items() if item[1] is not None))


def _header(java_class, *fields, base=CustomHeader, fast=None, doc=None):
    """Declare a header class named after ``java_class`` (a name relative to the header package)."""
    qualified = java_class if java_class.startswith("org.") else _PROTOCOL + java_class
    simple = qualified.rsplit(".", 1)[1]
    namespace = {"java_class": qualified, "fields": fields, "fast_fields": fast,
                 "__doc__": doc or "``%s``." % simple,
                 "__module__": __name__}
    return _HeaderType(simple, (base,), namespace)


# ---------------------------------------------------------------- the 4.9.8 header classes

class RpcRequestHeader(CustomHeader):
    """``RpcRequestHeader`` (4.9.5+): the optional broker name ``bname``."""

    java_class = _RPC + "RpcRequestHeader"
    abstract = True
    fields = (Field("bname", "String"),)


def _rpc(java_class, *fields, **kw):
    return _header(java_class, *fields, base=RpcRequestHeader, **kw)


S, I, L, B = "String", "Integer", "Long", "Boolean"

# NameServer (DefaultRequestProcessor)
PutKVConfigRequestHeader = _header(
    "namesrv.PutKVConfigRequestHeader",
    _required("namespace", S), _required("key", S), _required("value", S))
GetKVConfigRequestHeader = _header(
    "namesrv.GetKVConfigRequestHeader", _required("namespace", S), _required("key", S))
GetKVConfigResponseHeader = _header("namesrv.GetKVConfigResponseHeader", Field("value", S))
DeleteKVConfigRequestHeader = _header(
    "namesrv.DeleteKVConfigRequestHeader", _required("namespace", S), _required("key", S))
GetKVListByNamespaceRequestHeader = _header(
    "namesrv.GetKVListByNamespaceRequestHeader", _required("namespace", S))
RegisterBrokerRequestHeader = _header(
    "namesrv.RegisterBrokerRequestHeader",
    _required("brokerName", S), _required("brokerAddr", S), _required("clusterName", S),
    _required("haServerAddr", S), _required("brokerId", L), Field("compressed", "boolean"),
    Field("bodyCrc32", I, default=0, name="body_crc32"))
RegisterBrokerResponseHeader = _header(
    "namesrv.RegisterBrokerResponseHeader", Field("haServerAddr", S), Field("masterAddr", S))
UnRegisterBrokerRequestHeader = _header(
    "namesrv.UnRegisterBrokerRequestHeader",
    _required("brokerName", S), _required("brokerAddr", S), _required("clusterName", S),
    _required("brokerId", L))
QueryDataVersionRequestHeader = _header(
    "namesrv.QueryDataVersionRequestHeader",
    _required("brokerName", S), _required("brokerAddr", S), _required("clusterName", S),
    _required("brokerId", L))
QueryDataVersionResponseHeader = _header(
    "namesrv.QueryDataVersionResponseHeader", _required("changed", B))
GetRouteInfoRequestHeader = _header(
    "namesrv.GetRouteInfoRequestHeader", _required("topic", S), Field("acceptStandardJsonOnly", B))
WipeWritePermOfBrokerRequestHeader = _header(
    "namesrv.WipeWritePermOfBrokerRequestHeader", _required("brokerName", S))
WipeWritePermOfBrokerResponseHeader = _header(
    "namesrv.WipeWritePermOfBrokerResponseHeader", _required("wipeTopicCount", I))
AddWritePermOfBrokerRequestHeader = _header(
    "namesrv.AddWritePermOfBrokerRequestHeader", _required("brokerName", S))
AddWritePermOfBrokerResponseHeader = _header(
    "namesrv.AddWritePermOfBrokerResponseHeader", _required("addTopicCount", I))
DeleteTopicFromNamesrvRequestHeader = _header(
    "namesrv.DeleteTopicFromNamesrvRequestHeader", _required("topic", S), Field("clusterName", S))
RegisterOrderTopicRequestHeader = _header(
    "namesrv.RegisterOrderTopicRequestHeader",
    _required("topic", S), _required("orderTopicString", S))
GetTopicsByClusterRequestHeader = _header(
    "GetTopicsByClusterRequestHeader", _required("cluster", S))

# Sending (SendMessageProcessor)
_SEND_FIELDS = (
    ("producerGroup", S, True), ("topic", S, True), ("defaultTopic", S, True),
    ("defaultTopicQueueNums", I, True), ("queueId", I, True), ("sysFlag", I, True),
    ("bornTimestamp", L, True), ("flag", I, True), ("properties", S, False),
    ("reconsumeTimes", I, False), ("unitMode", "boolean", False))
SendMessageRequestHeader = _rpc(
    "SendMessageRequestHeader",
    *(Field(w, t, required=r) for w, t, r in _SEND_FIELDS),
    Field("batch", "boolean"), Field("maxReconsumeTimes", I))
_V2_LETTERS = "abcdefghijklmn"
SendMessageRequestHeaderV2 = _rpc(
    "SendMessageRequestHeaderV2",
    *(Field(letter, t, required=r, name=_snake(w))
      for letter, (w, t, r) in zip(_V2_LETTERS, _SEND_FIELDS)),
    Field("l", I, name="max_reconsume_times"), Field("m", "boolean", name="batch"),
    Field("n", S, name="broker_name"),
    fast=tuple(_V2_LETTERS),
    doc="``SendMessageRequestHeaderV2``: one-letter keys a..n (``SendMessageRequestHeaderV2``).")


def _to_v2(self):
    """``createSendMessageRequestHeaderV2``: ``bname`` travels as ``n``."""
    values = self.as_dict()
    values["broker_name"] = values.pop("bname")
    return SendMessageRequestHeaderV2(**values)


def _to_v1(self):
    """``createSendMessageRequestHeaderV1``: ``n`` becomes ``bname``, V2's own ``bname`` is dropped."""
    header = _V1.__new__(_V1)
    for name in _V1_COPIED:
        setattr(header, name, getattr(self, name))
    header.bname = self.broker_name
    return header


_V1 = SendMessageRequestHeader
_V1_COPIED = tuple(f.name for f in _V1.all_fields if f.name != "bname")
_V2_AS_V1 = tuple((wire, "bname" if name == "broker_name" else name, *rest)
                  for wire, name, *rest in SendMessageRequestHeaderV2._decoders)
SendMessageRequestHeader.to_v2 = _to_v2
#: ``from_ext_fields(ext_fields).to_v1()`` in one pass, as the send path needs it for every
#: message: V2's fields decoded straight into a V1 header, ``n`` as ``bname``.
SendMessageRequestHeaderV2.python_v1_from_ext_fields = staticmethod(
    _compile_decoder(SendMessageRequestHeaderV2, _V1, _V2_AS_V1))
SendMessageRequestHeaderV2.v1_from_ext_fields = staticmethod(_native_decoder(
    SendMessageRequestHeaderV2.python_v1_from_ext_fields, _V1, _V2_AS_V1))
SendMessageRequestHeaderV2.to_v1 = _to_v1

SendMessageResponseHeader = _header(
    "SendMessageResponseHeader",
    _required("msgId", S), _required("queueId", I), _required("queueOffset", L),
    Field("transactionId", S),
    fast=("msgId", "queueId", "queueOffset", "transactionId"))
ReplyMessageRequestHeader = _header(
    "ReplyMessageRequestHeader",
    *(Field(w, t, required=r) for w, t, r in _SEND_FIELDS),
    _required("bornHost", S), _required("storeHost", S), _required("storeTimestamp", "long"))

# Pulling
_PULL_FIELDS = (
    _required("consumerGroup", S), _required("topic", S), _required("queueId", I),
    _required("queueOffset", L), _required("maxMsgNums", I), _required("sysFlag", I),
    _required("commitOffset", L), _required("suspendTimeoutMillis", L),
    Field("subscription", S), _required("subVersion", L), Field("expressionType", S))
PullMessageRequestHeader = _rpc(
    "PullMessageRequestHeader", *_PULL_FIELDS,
    fast=tuple(f.wire for f in _PULL_FIELDS) + ("bname",))
PullMessageResponseHeader = _header(
    "PullMessageResponseHeader",
    _required("suggestWhichBrokerId", L), _required("nextBeginOffset", L),
    _required("minOffset", L), _required("maxOffset", L),
    fast=("suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset"))

# Offsets
QueryConsumerOffsetRequestHeader = _rpc(
    "QueryConsumerOffsetRequestHeader",
    _required("consumerGroup", S), _required("topic", S), _required("queueId", I))
QueryConsumerOffsetResponseHeader = _header(
    "QueryConsumerOffsetResponseHeader", _required("offset", L))
UpdateConsumerOffsetRequestHeader = _rpc(
    "UpdateConsumerOffsetRequestHeader",
    _required("consumerGroup", S), _required("topic", S), _required("queueId", I),
    _required("commitOffset", L))
UpdateConsumerOffsetResponseHeader = _header("UpdateConsumerOffsetResponseHeader")
SearchOffsetRequestHeader = _rpc(
    "SearchOffsetRequestHeader",
    _required("topic", S), _required("queueId", I), _required("timestamp", L))
SearchOffsetResponseHeader = _header("SearchOffsetResponseHeader", _required("offset", L))
GetMaxOffsetRequestHeader = _rpc(
    "GetMaxOffsetRequestHeader", _required("topic", S), _required("queueId", I))
GetMaxOffsetResponseHeader = _header("GetMaxOffsetResponseHeader", _required("offset", L))
GetMinOffsetRequestHeader = _rpc(
    "GetMinOffsetRequestHeader", _required("topic", S), _required("queueId", I))
GetMinOffsetResponseHeader = _header("GetMinOffsetResponseHeader", _required("offset", L))
GetEarliestMsgStoretimeRequestHeader = _rpc(
    "GetEarliestMsgStoretimeRequestHeader", _required("topic", S), _required("queueId", I))
GetEarliestMsgStoretimeResponseHeader = _header(
    "GetEarliestMsgStoretimeResponseHeader", _required("timestamp", L))

# Messages and transactions
QueryMessageRequestHeader = _header(
    "QueryMessageRequestHeader",
    _required("topic", S), _required("key", S), _required("maxNum", I),
    _required("beginTimestamp", L), _required("endTimestamp", L))
QueryMessageResponseHeader = _header(
    "QueryMessageResponseHeader",
    _required("indexLastUpdateTimestamp", L), _required("indexLastUpdatePhyoffset", L))
ViewMessageRequestHeader = _header("ViewMessageRequestHeader", _required("offset", L))
ViewMessageResponseHeader = _header("ViewMessageResponseHeader")
ConsumerSendMsgBackRequestHeader = _rpc(
    "ConsumerSendMsgBackRequestHeader",
    _required("offset", L), _required("group", S), _required("delayLevel", I),
    Field("originMsgId", S), Field("originTopic", S), Field("unitMode", "boolean"),
    Field("maxReconsumeTimes", I))

#: ``MessageSysFlag`` transaction values ``EndTransactionRequestHeader.checkFields`` accepts.
_END_TRANSACTION_TYPES = (0, 8, 12)  # NOT_TYPE, COMMIT_TYPE, ROLLBACK_TYPE


class EndTransactionRequestHeader(RpcRequestHeader):
    """``EndTransactionRequestHeader``: ``commitOrRollback`` must be 0, 8 or 12."""

    java_class = _PROTOCOL + "EndTransactionRequestHeader"
    fields = (
        _required("producerGroup", S), _required("tranStateTableOffset", L),
        _required("commitLogOffset", L), _required("commitOrRollback", I),
        Field("fromTransactionCheck", B, default=False), _required("msgId", S),
        Field("transactionId", S))

    def check_fields(self):
        if self.commit_or_rollback not in _END_TRANSACTION_TYPES:
            raise CodecError("commitOrRollback field wrong: %r" % (self.commit_or_rollback,))


EndTransactionResponseHeader = _header("EndTransactionResponseHeader")
CheckTransactionStateRequestHeader = _rpc(
    "CheckTransactionStateRequestHeader",
    _required("tranStateTableOffset", L), _required("commitLogOffset", L), Field("msgId", S),
    Field("transactionId", S), Field("offsetMsgId", S))


class CheckTransactionStateResponseHeader(CustomHeader):
    """``CheckTransactionStateResponseHeader``: ``commitOrRollback`` must be COMMIT (8) or ROLLBACK (12)."""

    java_class = _PROTOCOL + "CheckTransactionStateResponseHeader"
    fields = (
        _required("producerGroup", S), _required("tranStateTableOffset", L),
        _required("commitLogOffset", L), _required("commitOrRollback", I))

    def check_fields(self):
        if self.commit_or_rollback not in _END_TRANSACTION_TYPES[1:]:
            raise CodecError("commitOrRollback field wrong: %r" % (self.commit_or_rollback,))


ResumeCheckHalfMessageRequestHeader = _header(
    "ResumeCheckHalfMessageRequestHeader", Field("msgId", S))

# Topics and subscription groups
_TOPIC_FILTER_TYPES = ("SINGLE_TAG", "MULTI_TAG")


class CreateTopicRequestHeader(CustomHeader):
    """``CreateTopicRequestHeader`` (UPDATE_AND_CREATE_TOPIC): ``topicFilterType`` is checked."""

    java_class = _PROTOCOL + "CreateTopicRequestHeader"
    fields = (
        _required("topic", S), _required("defaultTopic", S), _required("readQueueNums", I),
        _required("writeQueueNums", I), _required("perm", I), _required("topicFilterType", S),
        Field("topicSysFlag", I), _required("order", B, default=False))

    def check_fields(self):
        if self.topic_filter_type not in _TOPIC_FILTER_TYPES:
            raise CodecError("topicFilterType = [%s] value invalid" % (self.topic_filter_type,))


DeleteTopicRequestHeader = _header("DeleteTopicRequestHeader", _required("topic", S))
GetTopicStatsInfoRequestHeader = _header("GetTopicStatsInfoRequestHeader", _required("topic", S))
DeleteSubscriptionGroupRequestHeader = _header(
    "DeleteSubscriptionGroupRequestHeader",
    _required("groupName", S), Field("removeOffset", "boolean"))
QueryTopicConsumeByWhoRequestHeader = _header(
    "QueryTopicConsumeByWhoRequestHeader", _required("topic", S))
QueryConsumeTimeSpanRequestHeader = _header(
    "QueryConsumeTimeSpanRequestHeader", _required("topic", S), _required("group", S))
QueryConsumeQueueRequestHeader = _header(
    "QueryConsumeQueueRequestHeader",
    Field("topic", S), Field("queueId", "int"), Field("index", "long"), Field("count", "int"),
    Field("consumerGroup", S))
QueryCorrectionOffsetHeader = _header(
    "QueryCorrectionOffsetHeader",
    Field("filterGroups", S), _required("compareGroup", S), _required("topic", S))
CloneGroupOffsetRequestHeader = _header(
    "CloneGroupOffsetRequestHeader",
    _required("srcGroup", S), _required("destGroup", S), Field("topic", S),
    Field("offline", "boolean"))
ResetOffsetRequestHeader = _header(
    "ResetOffsetRequestHeader",
    _required("topic", S), _required("group", S), _required("timestamp", "long"),
    _required("isForce", "boolean"))
GetConsumeStatsRequestHeader = _header(
    "GetConsumeStatsRequestHeader", _required("consumerGroup", S), Field("topic", S))
GetConsumeStatsInBrokerHeader = _header(
    "GetConsumeStatsInBrokerHeader", _required("isOrder", "boolean"))
ViewBrokerStatsDataRequestHeader = _header(
    "ViewBrokerStatsDataRequestHeader", _required("statsName", S), _required("statsKey", S))

# Clients and connections
UnregisterClientRequestHeader = _header(
    "UnregisterClientRequestHeader",
    _required("clientID", S), Field("producerGroup", S), Field("consumerGroup", S))
UnregisterClientResponseHeader = _header("UnregisterClientResponseHeader")
GetConsumerListByGroupRequestHeader = _header(
    "GetConsumerListByGroupRequestHeader", _required("consumerGroup", S))
GetConsumerListByGroupResponseHeader = _header("GetConsumerListByGroupResponseHeader")
NotifyConsumerIdsChangedRequestHeader = _header(
    "NotifyConsumerIdsChangedRequestHeader", _required("consumerGroup", S))
GetConsumerConnectionListRequestHeader = _header(
    "GetConsumerConnectionListRequestHeader", _required("consumerGroup", S))
GetProducerConnectionListRequestHeader = _header(
    "GetProducerConnectionListRequestHeader", _required("producerGroup", S))
GetAllProducerInfoRequestHeader = _header("GetAllProducerInfoRequestHeader")
GetConsumerRunningInfoRequestHeader = _header(
    "GetConsumerRunningInfoRequestHeader",
    _required("consumerGroup", S), _required("clientId", S), Field("jstackEnable", "boolean"))
GetConsumerStatusRequestHeader = _header(
    "GetConsumerStatusRequestHeader",
    _required("topic", S), _required("group", S), Field("clientAddr", S))
ConsumeMessageDirectlyResultRequestHeader = _header(
    "ConsumeMessageDirectlyResultRequestHeader",
    _required("consumerGroup", S), Field("clientId", S), Field("msgId", S), Field("brokerName", S))

# Broker configuration and ACL (RMQ4 only)
GetAllTopicConfigResponseHeader = _header("GetAllTopicConfigResponseHeader")
GetBrokerConfigResponseHeader = _header("GetBrokerConfigResponseHeader", _required("version", S))
CreateAccessConfigRequestHeader = _header(
    "CreateAccessConfigRequestHeader",
    _required("accessKey", S), Field("secretKey", S), Field("whiteRemoteAddress", S),
    Field("admin", "boolean"), Field("defaultTopicPerm", S), Field("defaultGroupPerm", S),
    Field("topicPerms", S), Field("groupPerms", S))
DeleteAccessConfigRequestHeader = _header(
    "DeleteAccessConfigRequestHeader", _required("accessKey", S))
UpdateGlobalWhiteAddrsConfigRequestHeader = _header(
    "UpdateGlobalWhiteAddrsConfigRequestHeader",
    _required("globalWhiteAddrs", S), _required("aclFileFullPath", S))
GetBrokerAclConfigResponseHeader = _header(
    "GetBrokerAclConfigResponseHeader",
    _required("version", S), Field("allAclFileVersion", S), _required("brokerName", S),
    _required("brokerAddr", S), _required("clusterName", S))

del S, I, L, B

# ---------------------------------------------------------------- code -> header class

_RC = RequestCode

#: The header class the 4.9.8 receiver decodes a request's ``extFields`` with.
REQUEST_HEADERS = {
    _RC.PUT_KV_CONFIG: PutKVConfigRequestHeader,
    _RC.GET_KV_CONFIG: GetKVConfigRequestHeader,
    _RC.DELETE_KV_CONFIG: DeleteKVConfigRequestHeader,
    _RC.GET_KVLIST_BY_NAMESPACE: GetKVListByNamespaceRequestHeader,
    _RC.REGISTER_BROKER: RegisterBrokerRequestHeader,
    _RC.UNREGISTER_BROKER: UnRegisterBrokerRequestHeader,
    _RC.QUERY_DATA_VERSION: QueryDataVersionRequestHeader,
    _RC.GET_ROUTEINFO_BY_TOPIC: GetRouteInfoRequestHeader,
    _RC.WIPE_WRITE_PERM_OF_BROKER: WipeWritePermOfBrokerRequestHeader,
    _RC.ADD_WRITE_PERM_OF_BROKER: AddWritePermOfBrokerRequestHeader,
    _RC.DELETE_TOPIC_IN_NAMESRV: DeleteTopicFromNamesrvRequestHeader,
    _RC.GET_TOPICS_BY_CLUSTER: GetTopicsByClusterRequestHeader,
    _RC.SEND_MESSAGE: SendMessageRequestHeader,
    _RC.SEND_MESSAGE_V2: SendMessageRequestHeaderV2,
    _RC.SEND_BATCH_MESSAGE: SendMessageRequestHeaderV2,
    _RC.SEND_REPLY_MESSAGE: SendMessageRequestHeader,
    _RC.SEND_REPLY_MESSAGE_V2: SendMessageRequestHeaderV2,
    _RC.PUSH_REPLY_MESSAGE_TO_CLIENT: ReplyMessageRequestHeader,
    _RC.PULL_MESSAGE: PullMessageRequestHeader,
    _RC.QUERY_CONSUMER_OFFSET: QueryConsumerOffsetRequestHeader,
    _RC.UPDATE_CONSUMER_OFFSET: UpdateConsumerOffsetRequestHeader,
    _RC.SEARCH_OFFSET_BY_TIMESTAMP: SearchOffsetRequestHeader,
    _RC.GET_MAX_OFFSET: GetMaxOffsetRequestHeader,
    _RC.GET_MIN_OFFSET: GetMinOffsetRequestHeader,
    _RC.GET_EARLIEST_MSG_STORETIME: GetEarliestMsgStoretimeRequestHeader,
    _RC.QUERY_MESSAGE: QueryMessageRequestHeader,
    _RC.VIEW_MESSAGE_BY_ID: ViewMessageRequestHeader,
    _RC.CONSUMER_SEND_MSG_BACK: ConsumerSendMsgBackRequestHeader,
    _RC.END_TRANSACTION: EndTransactionRequestHeader,
    _RC.CHECK_TRANSACTION_STATE: CheckTransactionStateRequestHeader,
    _RC.RESUME_CHECK_HALF_MESSAGE: ResumeCheckHalfMessageRequestHeader,
    _RC.UPDATE_AND_CREATE_TOPIC: CreateTopicRequestHeader,
    _RC.DELETE_TOPIC_IN_BROKER: DeleteTopicRequestHeader,
    _RC.GET_TOPIC_STATS_INFO: GetTopicStatsInfoRequestHeader,
    _RC.DELETE_SUBSCRIPTIONGROUP: DeleteSubscriptionGroupRequestHeader,
    _RC.QUERY_TOPIC_CONSUME_BY_WHO: QueryTopicConsumeByWhoRequestHeader,
    _RC.QUERY_CONSUME_TIME_SPAN: QueryConsumeTimeSpanRequestHeader,
    _RC.QUERY_CONSUME_QUEUE: QueryConsumeQueueRequestHeader,
    _RC.QUERY_CORRECTION_OFFSET: QueryCorrectionOffsetHeader,
    _RC.CLONE_GROUP_OFFSET: CloneGroupOffsetRequestHeader,
    _RC.INVOKE_BROKER_TO_RESET_OFFSET: ResetOffsetRequestHeader,
    _RC.RESET_CONSUMER_CLIENT_OFFSET: ResetOffsetRequestHeader,
    _RC.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: GetConsumerStatusRequestHeader,
    _RC.GET_CONSUMER_STATUS_FROM_CLIENT: GetConsumerStatusRequestHeader,
    _RC.GET_CONSUME_STATS: GetConsumeStatsRequestHeader,
    _RC.GET_BROKER_CONSUME_STATS: GetConsumeStatsInBrokerHeader,
    _RC.VIEW_BROKER_STATS_DATA: ViewBrokerStatsDataRequestHeader,
    _RC.UNREGISTER_CLIENT: UnregisterClientRequestHeader,
    _RC.GET_CONSUMER_LIST_BY_GROUP: GetConsumerListByGroupRequestHeader,
    _RC.NOTIFY_CONSUMER_IDS_CHANGED: NotifyConsumerIdsChangedRequestHeader,
    _RC.GET_CONSUMER_CONNECTION_LIST: GetConsumerConnectionListRequestHeader,
    _RC.GET_PRODUCER_CONNECTION_LIST: GetProducerConnectionListRequestHeader,
    _RC.GET_ALL_PRODUCER_INFO: GetAllProducerInfoRequestHeader,
    _RC.GET_CONSUMER_RUNNING_INFO: GetConsumerRunningInfoRequestHeader,
    _RC.CONSUME_MESSAGE_DIRECTLY: ConsumeMessageDirectlyResultRequestHeader,
    _RC.UPDATE_AND_CREATE_ACL_CONFIG: CreateAccessConfigRequestHeader,
    _RC.DELETE_ACL_CONFIG: DeleteAccessConfigRequestHeader,
    _RC.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: UpdateGlobalWhiteAddrsConfigRequestHeader,
}

#: The header class of a successful response's ``extFields``, keyed by the *request* code.
RESPONSE_HEADERS = {
    _RC.GET_KV_CONFIG: GetKVConfigResponseHeader,
    _RC.REGISTER_BROKER: RegisterBrokerResponseHeader,
    _RC.QUERY_DATA_VERSION: QueryDataVersionResponseHeader,
    _RC.WIPE_WRITE_PERM_OF_BROKER: WipeWritePermOfBrokerResponseHeader,
    _RC.ADD_WRITE_PERM_OF_BROKER: AddWritePermOfBrokerResponseHeader,
    _RC.SEND_MESSAGE: SendMessageResponseHeader,
    _RC.SEND_MESSAGE_V2: SendMessageResponseHeader,
    _RC.SEND_BATCH_MESSAGE: SendMessageResponseHeader,
    _RC.SEND_REPLY_MESSAGE: SendMessageResponseHeader,
    _RC.SEND_REPLY_MESSAGE_V2: SendMessageResponseHeader,
    _RC.PULL_MESSAGE: PullMessageResponseHeader,
    _RC.QUERY_CONSUMER_OFFSET: QueryConsumerOffsetResponseHeader,
    _RC.UPDATE_CONSUMER_OFFSET: UpdateConsumerOffsetResponseHeader,
    _RC.SEARCH_OFFSET_BY_TIMESTAMP: SearchOffsetResponseHeader,
    _RC.GET_MAX_OFFSET: GetMaxOffsetResponseHeader,
    _RC.GET_MIN_OFFSET: GetMinOffsetResponseHeader,
    _RC.GET_EARLIEST_MSG_STORETIME: GetEarliestMsgStoretimeResponseHeader,
    _RC.QUERY_MESSAGE: QueryMessageResponseHeader,
    _RC.VIEW_MESSAGE_BY_ID: ViewMessageResponseHeader,
    _RC.END_TRANSACTION: EndTransactionResponseHeader,
    _RC.UNREGISTER_CLIENT: UnregisterClientResponseHeader,
    _RC.GET_CONSUMER_LIST_BY_GROUP: GetConsumerListByGroupResponseHeader,
    _RC.GET_ALL_TOPIC_CONFIG: GetAllTopicConfigResponseHeader,
    _RC.GET_BROKER_CONFIG: GetBrokerConfigResponseHeader,
    _RC.GET_BROKER_CLUSTER_ACL_INFO: GetBrokerAclConfigResponseHeader,
}

del _RC


def request_header_class(code):
    """The header class of request ``code`` (any int), or ``None`` when it has none."""
    return REQUEST_HEADERS.get(code)


def response_header_class(request_code):
    """The header class of the response to ``request_code``, or ``None``."""
    return RESPONSE_HEADERS.get(request_code)
