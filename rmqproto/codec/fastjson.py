"""JSON exactly as RocketMQ's fastjson 1.x writes and reads it (reference "Conventions").

Writing rules, checked against fastjson 1.2.69 (the version RocketMQ 4.9.8 ships):

* bean fields come in alphabetical order and ``None`` fields are left out
  (callers build such objects with :func:`bean`);
* maps keep their own order: a Python ``dict`` is written in insertion order, so a
  decoded document re-encodes byte for byte; :func:`java_hashmap_order` gives the
  order a ``java.util.HashMap`` would iterate in, for maps built afresh;
* strings escape ``"`` and ``\\``, ``\\b \\t \\n \\f \\r`` with short escapes, the other
  control characters, DEL and U+2028/U+2029 as ``\\uXXXX`` with upper-case hex, and
  leave everything else as UTF-8;
* with ``browser_compatible`` (the NameServer's "standard JSON" route answers) every
  non-ASCII character and ``/`` are escaped too, and map keys are always quoted;
* maps with integer keys are written with *unquoted* keys (``{0:"a"}``) unless
  ``browser_compatible`` is set.

Reading accepts standard JSON and fastjson's unquoted integer keys. Every failure
raises :class:`~rmqproto.errors.MalformedHeaderError` (a ``CodecError``).
"""

import re

import orjson

from rmqproto.codec.javalang import java_string_hash
from rmqproto.errors import CodecError, MalformedHeaderError

__all__ = ["bean", "dumps", "loads", "java_hashmap_order"]


def bean(**fields):
    """A dict laid out as fastjson writes a Java bean: keys sorted, ``None`` dropped."""
    return {k: fields[k] for k in sorted(fields) if fields[k] is not None}


def _escape_table(browser_compatible):
    table = {c: "\\u%04X" % c for c in range(0x20)}
    table.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"})
    table.update({0x22: '\\"', 0x5C: "\\\\", 0x7F: "\\u007F", 0x2028: "\\u2028", 0x2029: "\\u2029"})
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


def _key(key, browser_compatible):
    if isinstance(key, bool) or not isinstance(key, (str, int)):
        raise CodecError("JSON map key must be str or int, not %r" % (key,))
    if isinstance(key, int) and not browser_compatible:
        return str(key)
    return _quote(str(key), browser_compatible)


def _write(value, out, browser_compatible):
    if isinstance(value, str):
        out.append(_quote(value, browser_compatible))
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif value is None:
        out.append("null")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(repr(value))
    elif isinstance(value, dict):
        out.append("{")
        first = True
        for key, item in value.items():
            if not first:
                out.append(",")
            first = False
            out.append(_key(key, browser_compatible))
            out.append(":")
            _write(item, out, browser_compatible)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out, browser_compatible)
        out.append("]")
    else:
        raise CodecError("cannot write %r as JSON" % (type(value).__name__,))


def dumps(value, browser_compatible=False):
    """Encode ``value`` (dicts, lists, str, int, float, bool, None) as fastjson would, as bytes."""
    out = []
    _write(value, out, browser_compatible)
    return "".join(out).encode("utf-8")


# Tokens outside strings: a string literal is matched whole, so a key pattern can
# only fire between tokens.
_UNQUOTED_KEY = re.compile(rb'"(?:[^"\\]|\\.)*"|([{,]\s*)(-?\d+)(\s*:)', re.S)


def _quote_numeric_keys(data):
    def fix(match):
        if match.group(1) is None:
            return match.group(0)
        return match.group(1) + b'"' + match.group(2) + b'"' + match.group(3)

    return _UNQUOTED_KEY.sub(fix, data)


def loads(data):
    """Decode JSON bytes written by fastjson (standard JSON or unquoted integer keys)."""
    try:
        return orjson.loads(data)
    except (orjson.JSONDecodeError, TypeError):
        pass
    try:
        return orjson.loads(_quote_numeric_keys(bytes(data)))
    except (orjson.JSONDecodeError, TypeError, ValueError) as exc:
        raise MalformedHeaderError("invalid JSON: %s" % (exc,)) from None


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
