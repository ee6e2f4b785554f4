"""JSON exactly as RocketMQ's fastjson 1.x writes and reads it (``docs/codecs/bodies.md``).

Writing rules, checked against fastjson 1.2.69 (the version RocketMQ 4.9.8 ships):

* bean fields come in alphabetical order and ``None`` fields are left out
  (callers build such objects with :func:`bean`);
* maps keep their own order: a Python ``dict`` is written in insertion order, so a
  decoded document re-encodes byte for byte; :func:`java_hashmap_order` gives the
  order a ``java.util.HashMap`` would iterate in, for maps built afresh;
* strings escape ``"`` and ``\\``, ``\\b \\t \\n \\f \\r`` with short escapes, the other
  control characters, DEL, U+0080–U+009F and U+2028/U+2029 as ``\\uXXXX`` with
  upper-case hex, and leave everything else as UTF-8;
* with ``browser_compatible`` (the NameServer's "standard JSON" route answers) every
  non-ASCII character and ``/`` are escaped too, and map keys are always quoted;
* maps with integer keys are written with *unquoted* keys (``{0:"a"}``) and maps
  keyed by beans with the key object itself (``{{"queueId":0}:1}``, see
  :class:`ObjectKey`); with ``browser_compatible`` such keys become strings holding
  their default-mode JSON (``{"0":"a"}``), and integers beyond +-(2**53 - 1) are
  written as strings;
* ``sort_maps`` (``SerializerFeature.MapSortField``) orders every map by key, numbers
  numerically and strings by UTF-16 code units, like ``java.util.TreeMap``;
* doubles are written as ``Double.toString`` would (shortest digits, ``1.0E10``);
  NaN and the infinities as ``null``.

Reading accepts standard JSON, fastjson's unquoted integer keys and object keys
(returned as :class:`ObjectKey`). Every failure raises
:class:`~rmqproto.errors.MalformedHeaderError` (a ``CodecError``).
"""

import re

import orjson

from rmqproto.codec.javalang import java_string_hash
from rmqproto.errors import CodecError, MalformedHeaderError

__all__ = ["bean", "dumps", "loads", "java_hashmap_order", "java_double_str", "ObjectKey"]


def bean(**fields):
    """A dict laid out as fastjson writes a Java bean: keys sorted, ``None`` dropped."""
    return {k: fields[k] for k in sorted(fields) if fields[k] is not None}


def _escape_table(browser_compatible):
    table = {c: "\\u%04X" % c for c in range(0x20)}
    table.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"})
    table.update({c: "\\u%04X" % c for c in range(0x7F, 0xA0)})
    table.update({0x22: '\\"', 0x5C: "\\\\", 0x2028: "\\u2028", 0x2029: "\\u2029"})
    if browser_compatible:
        table[0x2F] = "\\/"
    return table


_PLAIN_ESCAPES = _escape_table(False)
_BROWSER_ESCAPES = _escape_table(True)
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _browser_escape_non_ascii(match):
    encoded = match.group(0).encode("utf-16-be")
    return "".join("\\u%02X%02X" % (encoded[i], encoded[i + 1]) for i in range(0, len(encoded), 2))


def _quote(text, browser_compatible):
    if browser_compatible:
        escaped = _NON_ASCII.sub(_browser_escape_non_ascii, text.translate(_BROWSER_ESCAPES))
    else:
        escaped = text.translate(_PLAIN_ESCAPES)
    return '"' + escaped + '"'


class ObjectKey:
    """A map key that is itself a JSON object, as fastjson writes ``Map<MessageQueue, …>``.

    Hashable and immutable; ``members`` is the key's object (a bean-ordered dict).
    """

    __slots__ = ("members", "_hash")

    def __init__(self, members):
        self.members = dict(members)
        self._hash = hash(dumps(self.members, sort_maps=True))

    def __eq__(self, other):
        return isinstance(other, ObjectKey) and self.members == other.members

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return "ObjectKey(%r)" % (self.members,)


_MAX_SAFE_INTEGER = (1 << 53) - 1
_DOUBLE_MIN_VALUE = 5e-324


def java_double_str(value):
    """``Double.toString``-style text of ``value`` as fastjson's RyuDouble writes it."""
    if value != value or value in (float("inf"), float("-inf")):
        return "null"
    if abs(value) == _DOUBLE_MIN_VALUE:  # RyuDouble prints Double.MIN_VALUE as Java does, not shortest
        return "-4.9E-324" if value < 0 else "4.9E-324"
    text = repr(float(value))
    sign = "-" if text.startswith("-") else ""
    mantissa, _, exponent = text.lstrip("-").partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    # decimal exponent of the first significant digit
    if whole.strip("0"):
        exp = len(whole.lstrip("0")) - 1
    else:
        exp = -(len(fraction) - len(fraction.lstrip("0")) + 1)
    exp += int(exponent or 0)
    digits = digits.rstrip("0") or "0"
    if digits == "0":
        return sign + "0.0"
    if -3 <= exp < 7:
        if exp < 0:
            return sign + "0." + "0" * (-exp - 1) + digits
        point = exp + 1
        integral = digits[:point].ljust(point, "0")
        return sign + integral + "." + (digits[point:] or "0")
    return sign + digits[0] + "." + (digits[1:] or "0") + "E" + str(exp)


def _java_sort_key(key):
    if isinstance(key, str):
        return key.encode("utf-16-be", "surrogatepass")
    return key


class _Writer:
    __slots__ = ("out", "browser_compatible", "sort_maps")

    def __init__(self, browser_compatible, sort_maps):
        self.out = []
        self.browser_compatible = browser_compatible
        self.sort_maps = sort_maps

    def key(self, key):
        if isinstance(key, str):
            return _quote(key, self.browser_compatible)
        if isinstance(key, ObjectKey):
            text = dumps(key.members).decode("utf-8")
        elif isinstance(key, int) and not isinstance(key, bool):
            text = "%d" % key  # the number also of an IntEnum, whose str was its name before 3.11
        else:
            raise CodecError("JSON map key must be str, int or ObjectKey, not %r" % (key,))
        return _quote(text, True) if self.browser_compatible else text

    def value(self, value):
        out = self.out
        if isinstance(value, str):
            out.append(_quote(value, self.browser_compatible))
        elif value is True:
            out.append("true")
        elif value is False:
            out.append("false")
        elif value is None:
            out.append("null")
        elif isinstance(value, int):
            if self.browser_compatible and not -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
                out.append('"%d"' % value)
            else:
                out.append("%d" % value)
        elif isinstance(value, float):
            out.append(java_double_str(value))
        elif isinstance(value, dict):
            self.map(value)
        elif isinstance(value, (list, tuple)):
            out.append("[")
            for i, item in enumerate(value):
                if i:
                    out.append(",")
                self.value(item)
            out.append("]")
        else:
            raise CodecError("cannot write %r as JSON" % (type(value).__name__,))

    def map(self, value):
        items = value.items()
        if self.sort_maps:
            try:
                items = sorted(items, key=lambda item: _java_sort_key(item[0]))
            except TypeError:  # keys TreeMap cannot compare: fastjson keeps the map as it is
                pass
        out = self.out
        out.append("{")
        first = True
        for key, item in items:
            if item is None:  # fastjson leaves null map values out
                continue
            if not first:
                out.append(",")
            first = False
            out.append(self.key(key))
            out.append(":")
            self.value(item)
        out.append("}")


def dumps(value, browser_compatible=False, sort_maps=False):
    """Encode ``value`` (dicts, lists, str, int, float, bool, None) as fastjson would, as bytes.

    ``browser_compatible`` and ``sort_maps`` mirror ``SerializerFeature.BrowserCompatible``
    and ``MapSortField``; the NameServer's standard-JSON answers use both.
    """
    writer = _Writer(browser_compatible, sort_maps)
    writer.value(value)
    try:
        return "".join(writer.out).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CodecError("text cannot be written as UTF-8: %s" % (exc,)) from None


# Tokens outside strings: a string literal is matched whole, so a key pattern can
# only fire between tokens.
_UNQUOTED_KEY = re.compile(rb'"(?:[^"\\]|\\.)*"|([{,]\s*)(-?\d+)(\s*:)', re.S)


def _quote_numeric_keys(data):
    def fix(match):
        if match.group(1) is None:
            return match.group(0)
        return match.group(1) + b'"' + match.group(2) + b'"' + match.group(3)

    return _UNQUOTED_KEY.sub(fix, data)


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"')
_LITERALS = {"true": True, "false": False, "null": None}
_MAX_DEPTH = 200  # RocketMQ bodies nest a handful of levels


class _Reader:
    """Recursive-descent reader of fastjson's dialect: standard JSON plus non-string keys."""

    __slots__ = ("text", "pos")

    def __init__(self, text):
        self.text = text
        self.pos = 0

    def fail(self, what):
        raise MalformedHeaderError("invalid JSON: %s at offset %d" % (what, self.pos))

    def skip(self):
        self.pos = _WS.match(self.text, self.pos).end()

    def document(self):
        value = self.value(0)
        self.skip()
        if self.pos != len(self.text):
            self.fail("trailing data")
        return value

    def value(self, depth):
        if depth > _MAX_DEPTH:
            self.fail("nesting too deep")
        self.skip()
        text, pos = self.text, self.pos
        char = text[pos:pos + 1]
        if char == "{":
            return self.object(depth)
        if char == "[":
            return self.array(depth)
        if char == '"':
            return self.string()
        for word, literal in _LITERALS.items():
            if text.startswith(word, pos):
                self.pos = pos + len(word)
                return literal
        match = _NUMBER.match(text, pos)
        if not match:
            self.fail("unexpected character")
        self.pos = match.end()
        if match.group(1) or match.group(2):
            return float(match.group(0))
        return int(match.group(0))

    def string(self):
        match = _STRING.match(self.text, self.pos)
        if not match:
            self.fail("bad string")
        self.pos = match.end()
        try:
            return orjson.loads(match.group(0).encode("utf-8", "surrogatepass"))
        except orjson.JSONDecodeError:
            self.fail("bad string escape")

    def object(self, depth):
        self.pos += 1
        result = {}
        self.skip()
        if self.text.startswith("}", self.pos):
            self.pos += 1
            return result
        while True:
            self.skip()
            key = self.value(depth + 1)
            if isinstance(key, dict):
                key = ObjectKey(key)
            elif isinstance(key, (list, float)) or key is None or isinstance(key, bool):
                self.fail("unsupported map key")
            self.skip()
            if not self.text.startswith(":", self.pos):
                self.fail("expected ':'")
            self.pos += 1
            result[key] = self.value(depth + 1)
            self.skip()
            char = self.text[self.pos:self.pos + 1]
            self.pos += 1
            if char == "}":
                return result
            if char != ",":
                self.fail("expected ',' or '}'")

    def array(self, depth):
        self.pos += 1
        result = []
        self.skip()
        if self.text.startswith("]", self.pos):
            self.pos += 1
            return result
        while True:
            result.append(self.value(depth + 1))
            self.skip()
            char = self.text[self.pos:self.pos + 1]
            self.pos += 1
            if char == "]":
                return result
            if char != ",":
                self.fail("expected ',' or ']'")


def loads(data):
    """Decode JSON bytes written by fastjson.

    Standard JSON goes straight to orjson; unquoted integer keys are read as strings
    (``"0"``), object keys as :class:`ObjectKey`; typed decoders convert them back.
    """
    try:
        return orjson.loads(data)
    except (orjson.JSONDecodeError, TypeError):
        pass
    try:
        return orjson.loads(_quote_numeric_keys(bytes(data)))
    except (orjson.JSONDecodeError, TypeError, ValueError):
        pass
    try:
        text = bytes(data).decode("utf-8")
    except (UnicodeDecodeError, TypeError, ValueError) as exc:
        raise MalformedHeaderError("invalid JSON: %s" % (exc,)) from None
    try:
        return _Reader(text).document()
    except RecursionError:
        raise MalformedHeaderError("invalid JSON: nesting too deep") from None


def _java_key_hash(key, long_keys):
    if isinstance(key, str):
        return java_string_hash(key) & 0xFFFFFFFF
    if not long_keys:  # Integer.hashCode is the value itself
        return key & 0xFFFFFFFF
    value = key & 0xFFFFFFFFFFFFFFFF  # Long.hashCode: (int)(v ^ (v >>> 32))
    return (value ^ (value >> 32)) & 0xFFFFFFFF


def java_hashmap_order(keys, long_keys=True):
    """Order ``keys`` (inserted in this order) as a default ``java.util.HashMap`` iterates them.

    Buckets are ``(h ^ (h >>> 16)) & (capacity - 1)``; capacity starts at 16 and
    doubles whenever the size passes three quarters of it; within a bucket the
    insertion order is kept (resizing splits buckets without reordering). Integer
    keys hash as ``Long`` unless ``long_keys`` is false (then as ``Integer``).
    """
    keys = list(dict.fromkeys(keys))
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2
    mask = capacity - 1

    def bucket(key):
        h = _java_key_hash(key, long_keys)
        return (h ^ (h >> 16)) & mask

    return sorted(keys, key=bucket)  # sorted() is stable: insertion order within a bucket
