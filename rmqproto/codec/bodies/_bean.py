"""Typed JSON beans: dataclasses whose fields know their Java type and JSON name.

A body class is declared with :func:`json_bean` and fields made by :func:`member`;
the declarations give the encoder (fastjson's layout: members in alphabetical
order of their Java names, ``None`` left out) and a strict decoder that raises only
:class:`~rmqproto.errors.CodecError` (``docs/codecs/bodies.md``).
"""

import dataclasses
import enum

from rmqproto.codec import fastjson
from rmqproto.errors import CodecError

__all__ = [
    "JavaEnum", "JsonBean", "json_bean", "member",
    "STRING", "INT", "LONG", "BOOL", "DOUBLE", "EnumOf", "ListOf", "MapOf", "BeanOf",
]

_MISSING = dataclasses.MISSING


class JavaEnum(str, enum.Enum):
    """A Java enum constant: its value is its name, which is what fastjson writes."""

    def __str__(self):
        return self.value


def _fail(path, message):
    raise CodecError("%s: %s" % (path or "body", message))


class JavaType:
    """How one Java type maps to JSON values: ``decode`` checks, ``encode`` converts back."""

    def decode(self, value, path):
        raise NotImplementedError

    def encode(self, value):
        return value

    def decode_key(self, key, path):
        """A map key as the JSON reader hands it over (always a ``str`` in standard JSON)."""
        return self.decode(key, path)

    def encode_key(self, key):
        return self.encode(key)


class _String(JavaType):
    def decode(self, value, path):
        if not isinstance(value, str):
            _fail(path, "expected a string, got %s" % type(value).__name__)
        return value


class _Integer(JavaType):
    """Java ``int`` (32 bits) or ``long`` (64 bits).

    Digit strings are accepted as fastjson does: BrowserCompatible writes longs beyond
    2**53 as strings, and map keys arrive quoted in standard JSON.
    """

    def __init__(self, bits):
        self.low, self.high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def decode(self, value, path):
        if isinstance(value, str):
            digits = value[1:] if value[:1] == "-" else value
            if not (digits.isascii() and digits.isdigit()):
                _fail(path, "%r is not an integer" % value)
            value = int(value)
        elif isinstance(value, bool) or not isinstance(value, int):
            _fail(path, "expected an integer, got %s" % type(value).__name__)
        if not self.low <= value <= self.high:
            _fail(path, "integer %d out of range" % value)
        return value


class _Bool(JavaType):
    def decode(self, value, path):
        if not isinstance(value, bool):
            _fail(path, "expected a boolean, got %s" % type(value).__name__)
        return value


class _Double(JavaType):
    def decode(self, value, path):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            _fail(path, "expected a number, got %s" % type(value).__name__)
        return float(value)


STRING = _String()
INT = _Integer(32)
LONG = _Integer(64)
BOOL = _Bool()
DOUBLE = _Double()


class EnumOf(JavaType):
    """A Java enum, written by name; ``enum_class`` is a ``str`` Enum whose values are the names,
    declared in Java's order.

    Like fastjson's ``EnumDeserializer``, the decoder also takes an integer as the constant's
    ordinal: the C++ client writes its enums (``consumeFromWhere``, ``messageModel`` …) as numbers.
    """

    def __init__(self, enum_class):
        self.enum_class = enum_class

    def decode(self, value, path):
        if isinstance(value, int) and not isinstance(value, bool):
            constants = list(self.enum_class)
            if not 0 <= value < len(constants):
                _fail(path, "ordinal %d is not a %s" % (value, self.enum_class.__name__))
            return constants[value]
        try:
            return self.enum_class(value)
        except (ValueError, TypeError):
            _fail(path, "%r is not a %s" % (value, self.enum_class.__name__))

    def encode(self, value):
        return self.enum_class(value).value


class ListOf(JavaType):
    """A Java ``List`` or ``Set``, kept as a Python list in the order read."""

    def __init__(self, item):
        self.item = item

    def decode(self, value, path):
        if not isinstance(value, list):
            _fail(path, "expected an array, got %s" % type(value).__name__)
        return [self.item.decode(v, "%s[%d]" % (path, i)) for i, v in enumerate(value)]

    def encode(self, value):
        return [self.item.encode(v) for v in value]


class MapOf(JavaType):
    """A Java ``Map``, kept as a dict in the order read (fastjson keeps map order)."""

    def __init__(self, key, value):
        self.key, self.value = key, value

    def decode(self, value, path):
        if not isinstance(value, dict):
            _fail(path, "expected an object, got %s" % type(value).__name__)
        result = {}
        for k, v in value.items():
            key = self.key.decode_key(k, path)
            if v is not None:  # fastjson never writes null map values
                result[key] = self.value.decode(v, "%s[%r]" % (path, k))
        return result

    def encode(self, value):
        return {self.key.encode_key(k): self.value.encode(v) for k, v in value.items()}


class BeanOf(JavaType):
    """A nested bean; as a map key it is written as an object (``fastjson.ObjectKey``)."""

    def __init__(self, bean_class):
        self.bean_class = bean_class

    def decode(self, value, path):
        return self.bean_class.from_value(value, path)

    def encode(self, value):
        return value.to_value()

    def decode_key(self, key, path):
        if isinstance(key, str):  # BrowserCompatible writes the key's JSON as a string
            key = fastjson.loads(key.encode("utf-8", "surrogatepass"))
            members = key if isinstance(key, dict) else None
        else:
            members = key.members if isinstance(key, fastjson.ObjectKey) else None
        if members is None:
            _fail(path, "map key %r is not an object" % (key,))
        return self.decode(members, path)

    def encode_key(self, key):
        return fastjson.ObjectKey(key.to_value())


def member(java_type, json=None, default=_MISSING, factory=_MISSING):
    """A bean field: its Java type, its JSON name if not the attribute's, its Java default.

    A member with neither ``default`` nor ``factory`` is required: decoding a
    document without it raises ``CodecError``.
    """
    metadata = {"java_type": java_type, "json": json}
    if factory is not _MISSING:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


class _Spec:
    __slots__ = ("attr", "json", "java_type", "required")

    def __init__(self, field):
        self.attr = field.name
        self.java_type = field.metadata["java_type"]
        self.json = field.metadata["json"] or _camel(field.name)
        self.required = field.default is _MISSING and field.default_factory is _MISSING


def _camel(name):
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


class JsonBean:
    """Base of the body classes: fastjson-exact ``to_json`` and strict ``from_json``."""

    __slots__ = ()
    _specs = ()

    def to_value(self):
        """The bean as fastjson lays it out: a dict of JSON values, Java names sorted, ``None`` left out."""
        result = {}
        for spec in self._specs:
            value = getattr(self, spec.attr)
            if value is not None:
                result[spec.json] = spec.java_type.encode(value)
        return result

    @classmethod
    def from_value(cls, value, path=""):
        """Build from a decoded JSON value; unknown members are ignored, as fastjson does."""
        if not isinstance(value, dict):
            _fail(path, "expected an object for %s, got %s" % (cls.__name__, type(value).__name__))
        kwargs = {}
        for spec in cls._specs:
            item = value.get(spec.json)
            if item is None:
                if spec.required:
                    _fail(path, "%s lacks required member %r" % (cls.__name__, spec.json))
                continue
            kwargs[spec.attr] = spec.java_type.decode(item, "%s.%s" % (path, spec.json) if path else spec.json)
        return cls(**kwargs)

    def to_json(self, standard=False):
        """fastjson's bytes; ``standard`` adds BrowserCompatible and MapSortField (``acceptStandardJsonOnly``)."""
        return fastjson.dumps(self.to_value(), browser_compatible=standard, sort_maps=standard)

    @classmethod
    def from_json(cls, data):
        """Decode fastjson or standard JSON bytes; raises only ``CodecError``."""
        return cls.from_value(fastjson.loads(data))


def json_bean(cls=None, *, frozen=False):
    """Class decorator: make ``cls`` a dataclass and record its members in Java name order."""
    if cls is None:
        return lambda c: json_bean(c, frozen=frozen)
    cls = dataclasses.dataclass(cls, frozen=frozen)
    specs = [_Spec(f) for f in dataclasses.fields(cls) if "java_type" in f.metadata]
    cls._specs = tuple(sorted(specs, key=lambda spec: spec.json))
    return cls

