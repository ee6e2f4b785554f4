"""DLedger 0.3.1.2 RPC: request/response codes and the fastjson bodies (``DLedgerRpcNettyService``).

Peers exchange remoting frames whose ``code`` is a :class:`DLedgerRequestCode`
(responses always say 200) and whose body is the fastjson JSON of one of the classes
below. Every class has ``to_json()`` / ``from_json(data)`` that match
``JSON.toJSONBytes(obj)`` and ``JSON.parseObject(bytes, Class)`` of DLedger:

* keys in alphabetical order, ``None`` left out, primitives always written
  (so defaults such as ``"term":-1`` appear);
* ``byte[]`` as standard Base64 with padding; enums by name (an ordinal is also
  accepted on input, as fastjson does);
* :class:`PushEntryRequest` also writes the values of its derived getters
  (``batch``, ``count``, ``firstEntryIndex``, ``lastEntryIndex``, ``totalSize``);
  they are ignored on input, like Java does;
* unknown keys are ignored; a missing key keeps the Java field default.

Bodies are written by ``orjson`` when that gives fastjson's bytes (no string needing one
of the escapes where the two differ), else by :func:`rmqproto.codec.fastjson.dumps`.

``to_fields()`` gives the Java bean view (getter name → value, ``byte[]`` as hex,
``None`` kept), the shape the golden vectors record.
"""

import base64
import binascii
import enum
import re

import orjson

from rmqproto.codec import fastjson
from rmqproto.codec.dledger import DLedgerEntry
from rmqproto.errors import CodecError

__all__ = [
    "DLedgerRequestCode", "DLedgerResponseCode", "VoteResult", "ParseResult", "PushEntryType",
    "RequestOrResponse", "VoteRequest", "VoteResponse", "HeartBeatRequest", "HeartBeatResponse",
    "PushEntryRequest", "PushEntryResponse", "AppendEntryRequest", "BatchAppendEntryRequest",
    "AppendEntryResponse", "GetEntriesRequest", "GetEntriesResponse", "MetadataRequest",
    "MetadataResponse", "PullEntriesRequest", "PullEntriesResponse",
    "LeadershipTransferRequest", "LeadershipTransferResponse", "RPC_TYPES",
    "entry_to_json", "entry_from_json",
]


class DLedgerRequestCode(enum.IntEnum):
    """``DLedgerRequestCode``: the remoting ``code`` of each RPC."""

    UNKNOWN = -1
    METADATA = 50000
    APPEND = 50001
    GET = 50002
    VOTE = 51001
    HEART_BEAT = 51002
    PULL = 51003
    PUSH = 51004
    LEADERSHIP_TRANSFER = 51005


class DLedgerResponseCode(enum.IntEnum):
    """``DLedgerResponseCode``: the ``code`` inside a response body."""

    UNKNOWN = -1
    SUCCESS = 200
    TIMEOUT = 300
    METADATA_ERROR = 301
    NETWORK_ERROR = 302
    UNSUPPORTED = 303
    UNKNOWN_GROUP = 400
    UNKNOWN_MEMBER = 401
    UNEXPECTED_MEMBER = 402
    EXPIRED_TERM = 403
    NOT_LEADER = 404
    NOT_FOLLOWER = 405
    INCONSISTENT_STATE = 406
    INCONSISTENT_TERM = 407
    INCONSISTENT_INDEX = 408
    INCONSISTENT_LEADER = 409
    INDEX_OUT_OF_RANGE = 410
    UNEXPECTED_ARGUMENT = 411
    REPEATED_REQUEST = 412
    REPEATED_PUSH = 413
    DISK_ERROR = 414
    DISK_FULL = 415
    TERM_NOT_READY = 416
    FALL_BEHIND_TOO_MUCH = 417
    TAKE_LEADERSHIP_FAILED = 418
    INDEX_LESS_THAN_LOCAL_BEGIN = 419
    REQUEST_WITH_EMPTY_BODYS = 420
    PUSH_REQUEST_IS_FULL = 421
    INTERNAL_ERROR = 500
    TERM_CHANGED = 501
    WAIT_QUORUM_ACK_TIMEOUT = 502
    LEADER_PENDING_FULL = 503
    ILLEGAL_MEMBER_STATE = 504
    LEADER_NOT_READY = 505
    LEADER_TRANSFERRING = 506

    @classmethod
    def of(cls, code):
        """``DLedgerResponseCode.valueOf(int)``: unknown numbers map to UNKNOWN."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN


class VoteResult(enum.Enum):
    """``VoteResponse.RESULT``, in ordinal order."""

    UNKNOWN = 0
    ACCEPT = 1
    REJECT_UNKNOWN_LEADER = 2
    REJECT_UNEXPECTED_LEADER = 3
    REJECT_EXPIRED_VOTE_TERM = 4
    REJECT_ALREADY_VOTED = 5
    REJECT_ALREADY_HAS_LEADER = 6
    REJECT_TERM_NOT_READY = 7
    REJECT_TERM_SMALL_THAN_LEDGER = 8
    REJECT_EXPIRED_LEDGER_TERM = 9
    REJECT_SMALL_LEDGER_END_INDEX = 10
    REJECT_TAKING_LEADERSHIP = 11


class ParseResult(enum.Enum):
    """``VoteResponse.ParseResult``: a candidate's verdict on one voting round (``DLedgerLeaderElector``)."""

    WAIT_TO_REVOTE = 0
    REVOTE_IMMEDIATELY = 1
    PASSED = 2
    WAIT_TO_VOTE_NEXT = 3


class PushEntryType(enum.Enum):
    """``PushEntryRequest.Type`` (``DLedgerEntryPusher``)."""

    APPEND = 0
    COMMIT = 1
    COMPARE = 2
    TRUNCATE = 3


# ---------------------------------------------------------------- value kinds

def _fail(key, expected, value):
    raise CodecError("%s must be %s, got %r" % (key, expected, value))


class _Integer:
    """A Java ``int``/``long`` (or boxed ``Long`` when nullable)."""

    def __init__(self, bits, nullable=False):
        self.low, self.high = -2 ** (bits - 1), 2 ** (bits - 1) - 1
        self.nullable = nullable
        self.what = "a %d-bit integer" % bits

    def check(self, key, value):
        if value is None and self.nullable:
            return None
        if type(value) is not int or not self.low <= value <= self.high:
            _fail(key, self.what, value)
        return value

    to_json = to_field = from_json = check


class _String:
    nullable = True

    def check(self, key, value):
        if value is not None and not isinstance(value, str):
            _fail(key, "a string", value)
        return value

    to_json = to_field = from_json = check


class _Enum:
    nullable = True

    def __init__(self, enum_type):
        self.enum_type = enum_type

    def to_json(self, key, value):
        if value is None:
            return None
        if not isinstance(value, self.enum_type):
            _fail(key, self.enum_type.__name__, value)
        return value.name

    to_field = to_json

    def from_json(self, key, value):
        if value is None:
            return None
        try:
            if isinstance(value, str):
                return self.enum_type[value]
            if type(value) is int:
                return self.enum_type(value)
        except (KeyError, ValueError):
            pass
        _fail(key, "a %s name" % self.enum_type.__name__, value)


class _Bytes:
    """``byte[]``: Base64 in JSON (fastjson also reads an array of numbers)."""

    nullable = True

    def _check(self, key, value):
        if value is not None and not isinstance(value, (bytes, bytearray, memoryview)):
            _fail(key, "bytes", value)
        return value

    def to_json(self, key, value):
        return None if self._check(key, value) is None else base64.b64encode(value).decode()

    def to_field(self, key, value):
        return None if self._check(key, value) is None else bytes(value).hex()

    def from_json(self, key, value):
        if value is None:
            return None
        if isinstance(value, str):
            try:
                return base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                _fail(key, "Base64", value)
        if isinstance(value, list) and all(type(b) is int and -128 <= b <= 255 for b in value):
            return bytes(b & 0xFF for b in value)
        _fail(key, "Base64 or a byte array", value)


class _List:
    nullable = True

    def __init__(self, item):
        self.item = item

    def _map(self, method, key, value):
        if value is None:
            return None
        if not isinstance(value, (list, tuple)):
            _fail(key, "a list", value)
        return [getattr(self.item, method)(key, item) for item in value]

    def to_json(self, key, value):
        return self._map("to_json", key, value)

    def to_field(self, key, value):
        return self._map("to_field", key, value)

    def from_json(self, key, value):
        return self._map("from_json", key, value)


class _StringMap:
    """``Map<String,String>``, written in the order a ``java.util.HashMap`` iterates."""

    nullable = True

    def check(self, key, value):
        if value is None:
            return None
        if not isinstance(value, dict) or not all(
                isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in value.items()):
            _fail(key, "a map of strings", value)
        return value

    def to_json(self, key, value):
        if self.check(key, value) is None:
            return None
        return {k: value[k] for k in fastjson.java_hashmap_order(value)}

    to_field = to_json
    from_json = check


_INT = _Integer(32)
_LONG = _Integer(64)
_BOXED_LONG = _Integer(64, nullable=True)
_STRING = _String()
_BYTES = _Bytes()


class _Field:
    __slots__ = ("attr", "key", "kind", "default")

    def __init__(self, attr, key, kind, default=None):
        self.attr, self.key, self.kind, self.default = attr, key, kind, default

    def initial(self):
        return list(self.default) if isinstance(self.default, list) else self.default


# ---------------------------------------------------------------- entries in JSON

#: ``DLedgerEntry`` as a JSON bean; every numeric field defaults to 0 in Java.
_ENTRY_FIELDS = (
    _Field("body", "body", _BYTES), _Field("body_crc", "bodyCrc", _INT, 0),
    _Field("chain_crc", "chainCrc", _INT, 0), _Field("channel", "channel", _INT, 0),
    _Field("index", "index", _LONG, 0), _Field("magic", "magic", _INT, 0),
    _Field("pos", "pos", _LONG, 0), _Field("size", "size", _INT, 0),
    _Field("term", "term", _LONG, 0),
)


def _bean_view(fields, obj, method):
    return {f.key: getattr(f.kind, method)(f.key, getattr(obj, f.attr)) for f in fields}


def _json_writers(fields):
    """``(key, attribute, kind.to_json)`` of ``fields`` sorted by key: :func:`_json_bean`'s."""
    return tuple((f.key, f.attr, f.kind.to_json) for f in sorted(fields, key=lambda f: f.key))


def _json_bean(writers, obj):
    """``fastjson.bean`` of the JSON view of ``obj``: keys in order, ``None`` left out."""
    attrs = obj.__dict__
    return {key: value for key, attr, write in writers
            if (value := write(key, attrs[attr])) is not None}


def _from_bean(fields, data, what):
    if not isinstance(data, dict):
        _fail(what, "a JSON object", data)
    values = {}
    for f in fields:
        value = data.get(f.key)
        if value is not None:
            values[f.attr] = f.kind.from_json(f.key, value)
        elif f.key in data and f.kind.nullable:
            values[f.attr] = None  # an explicit null overrides the field's initial value
        else:
            values[f.attr] = f.initial()
    return values


class _EntryKind:
    nullable = True

    def to_json(self, key, value):
        return None if value is None else entry_to_json(value)

    def to_field(self, key, value):
        return None if value is None else _bean_view(_ENTRY_FIELDS, value, "to_field")

    def from_json(self, key, value):
        return None if value is None else entry_from_json(value)


_ENTRY_WRITERS = _json_writers(_ENTRY_FIELDS)


def entry_to_json(entry):
    """The JSON bean of a :class:`DLedgerEntry` (a dict, ``None`` body left out)."""
    return _json_bean(_ENTRY_WRITERS, entry)


def entry_from_json(data):
    """A :class:`DLedgerEntry` from its JSON bean (missing numbers are 0, like Java)."""
    return DLedgerEntry(**_from_bean(_ENTRY_FIELDS, data, "entry"))


_ENTRY = _EntryKind()
_ENTRY_LIST = _List(_ENTRY)


# ---------------------------------------------------------------- messages

_BASE_FIELDS = (
    _Field("code", "code", _INT, 200), _Field("group", "group", _STRING),
    _Field("leader_id", "leaderId", _STRING), _Field("local_id", "localId", _STRING),
    _Field("remote_id", "remoteId", _STRING), _Field("term", "term", _LONG, -1),
)


#: Where orjson's output differs from fastjson's: control characters other than the short
#: escapes (orjson writes lower-case hex), DEL, U+0080–U+009F and U+2028/U+2029 (orjson
#: leaves them as they are).
_NOT_AS_FASTJSON = re.compile(rb"\\u00|\x7f|\xc2[\x80-\x9f]|\xe2\x80[\xa8\xa9]")


def dumps(bean):
    """``fastjson.dumps(bean)`` for a bean view (str keys; str, int, bool, list, dict values):
    orjson's bytes when they are fastjson's, else fastjson's writer."""
    try:
        data = orjson.dumps(bean)
    except (TypeError, orjson.JSONEncodeError):
        return fastjson.dumps(bean)
    return fastjson.dumps(bean) if _NOT_AS_FASTJSON.search(data) else data


class RequestOrResponse:
    """Fields every DLedger request and response carries (``RequestOrResponse``).

    Construct with keyword arguments named like the attributes (``leader_id=...``);
    unset ones take the Java defaults (``code`` 200, ``term`` -1, ids None).
    """

    FIELDS = _BASE_FIELDS
    #: JSON keys of fields only our members write (DLedger's Java class has none of them).
    EXTENSIONS = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._prepare()

    @classmethod
    def _prepare(cls):
        """The per-class tables :meth:`__init__` uses: the attributes, the defaults."""
        cls._ATTRS = frozenset(f.attr for f in cls.FIELDS)
        cls._DEFAULTS = {f.attr: f.default for f in cls.FIELDS
                         if not isinstance(f.default, list)}
        cls._LIST_DEFAULTS = tuple(f for f in cls.FIELDS if isinstance(f.default, list))
        cls._WRITERS = _json_writers(cls.FIELDS)

    def __init__(self, **values):
        attrs = self.__dict__
        attrs.update(self._DEFAULTS)
        for f in self._LIST_DEFAULTS:
            attrs[f.attr] = f.initial()
        if values:
            if not self._ATTRS.issuperset(values):
                raise TypeError("%s has no field %s" % (type(self).__name__, ", ".join(
                    name for name in values if name not in self._ATTRS)))
            attrs.update(values)

    def derived(self):
        """Values of getters that are not fields (JSON key → value)."""
        return {}

    def to_json(self):
        """The body bytes ``JSON.toJSONBytes`` writes for this object."""
        bean = _json_bean(self._WRITERS, self)
        derived = self.derived()
        if derived:
            bean.update(derived)
            bean = fastjson.bean(**bean)
        return dumps(bean)

    @classmethod
    def from_json(cls, data):
        """Parse a body as ``JSON.parseObject(bytes, cls)`` does."""
        message = cls.__new__(cls)
        message.__dict__.update(_from_bean(cls.FIELDS, fastjson.loads(data), cls.__name__))
        return message

    def to_fields(self):
        """The Java bean view: every getter's value, ``byte[]`` as hex, nulls kept."""
        view = _bean_view(self.FIELDS, self, "to_field")
        view.update(self.derived())
        return view

    def __eq__(self, other):
        return type(other) is type(self) and self.to_fields() == other.to_fields()

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % (f.attr, getattr(self, f.attr)) for f in self.FIELDS))


RequestOrResponse._prepare()


def _message(name, doc, *extra, base=RequestOrResponse):
    """A message class: ``base`` plus ``extra`` fields."""
    fields = tuple(sorted(base.FIELDS + extra, key=lambda f: f.key))
    return type(name, (base,), {"__doc__": doc, "FIELDS": fields, "__module__": __name__})


VoteRequest = _message(
    "VoteRequest", "RequestVote from a candidate (``leader_id`` = candidate, ``term`` = its term).",
    _Field("ledger_end_index", "ledgerEndIndex", _LONG, -1),
    _Field("ledger_end_term", "ledgerEndTerm", _LONG, -1))

VoteResponse = _message(
    "VoteResponse", "Answer to a vote; ``term`` is the voter's current term.",
    _Field("vote_result", "voteResult", _Enum(VoteResult), VoteResult.UNKNOWN))

HeartBeatRequest = _message("HeartBeatRequest", "Leader heartbeat (base fields only).")
HeartBeatResponse = _message("HeartBeatResponse", "Heartbeat answer; ``code`` and ``term`` matter.")
MetadataRequest = _message("MetadataRequest", "Asks for the group's peers and leader.")
LeadershipTransferResponse = _message("LeadershipTransferResponse",
                                      "Answer to a leadership transfer.")

PushEntryResponse = _message(
    "PushEntryResponse", "A follower's answer to a push: ``index`` (None for COMMIT) and its range.",
    _Field("index", "index", _BOXED_LONG), _Field("begin_index", "beginIndex", _LONG, 0),
    _Field("end_index", "endIndex", _LONG, 0), _Field("count", "count", _INT, 0))

AppendEntryRequest = _message("AppendEntryRequest", "Client append of one ``body``.",
                              _Field("body", "body", _BYTES))

BatchAppendEntryRequest = _message(
    "BatchAppendEntryRequest", "Append of several bodies (``batch_msgs``).",
    _Field("batch_msgs", "batchMsgs", _List(_BYTES)), base=AppendEntryRequest)

AppendEntryResponse = _message(
    "AppendEntryResponse", "Result of an append: the entry's ``index`` and data position ``pos``.",
    _Field("index", "index", _LONG, -1), _Field("pos", "pos", _LONG, -1))

GetEntriesRequest = _message(
    "GetEntriesRequest", "Reads entries from the leader.",
    _Field("begin_index", "beginIndex", _BOXED_LONG), _Field("max_size", "maxSize", _INT, 0),
    _Field("index_list", "indexList", _List(_BOXED_LONG)))

GetEntriesResponse = _message("GetEntriesResponse", "The entries read (at most one in 0.3.1.2).",
                              _Field("entries", "entries", _ENTRY_LIST, []))

MetadataResponse = _message(
    "MetadataResponse", "``peers`` (member id → address, HashMap order) and ``leader_id``; "
    "our members also tell their ``term``, ``ledger_end_index`` and ``committed_index`` (not "
    "in DLedger 0.3.1.2's class: null there, so left out of the JSON and ignored by Java).",
    _Field("peers", "peers", _StringMap()),
    _Field("ledger_end_index", "ledgerEndIndex", _BOXED_LONG),
    _Field("committed_index", "committedIndex", _BOXED_LONG))
MetadataResponse.EXTENSIONS = ("ledgerEndIndex", "committedIndex")

PullEntriesRequest = _message(
    "PullEntriesRequest", "Declared by DLedger but not served.",
    _Field("node_id", "nodeId", _STRING), _Field("begin_index", "beginIndex", _BOXED_LONG))

PullEntriesResponse = _message("PullEntriesResponse", "Declared by DLedger but not served.",
                               _Field("entries", "entries", _ENTRY_LIST, []))

LeadershipTransferRequest = _message(
    "LeadershipTransferRequest", "Asks ``transferee_id`` to take over from ``transfer_id``.",
    _Field("transfer_id", "transferId", _STRING),
    _Field("transferee_id", "transfereeId", _STRING),
    _Field("take_leadership_ledger_index", "takeLeadershipLedgerIndex", _LONG, 0))


class _NonNullEntryList(_List):
    """``batchEntry``: a getter-only list fastjson fills in place, so null reads as empty."""

    nullable = False


class PushEntryRequest(RequestOrResponse):
    """Leader → follower replication (AppendEntries): one ``entry`` or a ``batch_entry`` list.

    ``total_size`` is the (Java ``int``) sum of the batch entries' ``size`` fields, as
    ``addEntry`` accumulates it (a single ``entry`` does not count). Java's decoder leaves
    ``totalSize`` at 0 because it has no setter.
    """

    FIELDS = tuple(sorted(_BASE_FIELDS + (
        _Field("commit_index", "commitIndex", _LONG, -1),
        _Field("type", "type", _Enum(PushEntryType), PushEntryType.APPEND),
        _Field("entry", "entry", _ENTRY),
        _Field("batch_entry", "batchEntry", _NonNullEntryList(_ENTRY), []),
    ), key=lambda f: f.key))

    @property
    def total_size(self):
        total = sum(e.size for e in self.batch_entry) & 0xFFFFFFFF  # a Java int sum wraps
        return total - (1 << 32) if total & 0x80000000 else total

    def _ends(self):
        if self.batch_entry:
            return self.batch_entry[0].index, self.batch_entry[-1].index, len(self.batch_entry)
        if self.entry is not None:
            return self.entry.index, self.entry.index, 1
        return -1, -1, 0

    def derived(self):
        first, last, count = self._ends()
        return {"batch": bool(self.batch_entry), "count": count, "firstEntryIndex": first,
                "lastEntryIndex": last, "totalSize": self.total_size}


#: Request code → (request class, response class).
RPC_TYPES = {
    DLedgerRequestCode.METADATA: (MetadataRequest, MetadataResponse),
    DLedgerRequestCode.APPEND: (AppendEntryRequest, AppendEntryResponse),
    DLedgerRequestCode.GET: (GetEntriesRequest, GetEntriesResponse),
    DLedgerRequestCode.VOTE: (VoteRequest, VoteResponse),
    DLedgerRequestCode.HEART_BEAT: (HeartBeatRequest, HeartBeatResponse),
    DLedgerRequestCode.PULL: (PullEntriesRequest, PullEntriesResponse),
    DLedgerRequestCode.PUSH: (PushEntryRequest, PushEntryResponse),
    DLedgerRequestCode.LEADERSHIP_TRANSFER: (LeadershipTransferRequest,
                                             LeadershipTransferResponse),
}
