"""``java.util.Properties`` text: the format of ``broker.conf``, ``namesrv.properties`` and
DLedger's checkpoint files.

Reading follows ``Properties.load``: ``#``/``!`` comments, ``key=value``, ``key: value`` or
``key value``, backslash line continuations, ``\\t \\n \\r \\f \\uXXXX`` escapes and
``\\x`` for any other ``x``. Writing escapes what ``Properties.store`` escapes.
"""

import re

from rmqproto.errors import CodecError

__all__ = ["parse_properties", "load_properties", "dump_properties", "java_text"]

_WS = " \t\f"
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text):
    """Join continued lines (an odd number of trailing backslashes) and drop comments/blanks."""
    pending = None
    for raw in re.split(r"\r\n|\r|\n", text):
        line = raw.lstrip(_WS)
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        continued = trailing % 2 == 1
        if continued:
            line = line[:-1]
        pending = line if pending is None else pending + line
        if not continued:
            yield pending
            pending = None
    if pending is not None:
        yield pending


def _unescape(text):
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 == len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2:i + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise CodecError("malformed \\uxxxx escape in properties text")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_SIMPLE_ESCAPES.get(nxt, nxt))
            i += 2
    # \u escapes are UTF-16 code units: join surrogate pairs into one character.
    return "".join(out).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _split(line):
    """Key up to the first unescaped separator; then ``=``/``:`` with optional blanks around it."""
    i = 0
    while i < len(line) and line[i] not in "=:" + _WS:
        i += 2 if line[i] == "\\" else 1
    rest = line[i:].lstrip(_WS)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_WS)
    return line[:i], rest


def parse_properties(text):
    """Parse properties text into an ordered ``dict`` (a later duplicate key wins, as in Java)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("latin-1")
    result = {}
    for line in _logical_lines(text):
        key, value = _split(line)
        result[_unescape(key)] = _unescape(value)
    return result


def load_properties(path):
    """Read a ``.properties`` file (ISO-8859-1 with ``\\u`` escapes, as ``Properties.load``)."""
    with open(path, "rb") as fh:
        return parse_properties(fh.read())


def _escape(text, is_key):
    out = []
    for i, ch in enumerate(text):
        if ch == " " and (is_key or i == 0):
            out.append("\\ ")
        elif ch in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[ch])
        elif ch in "=:#!\\":
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            out.extend("\\u%04X" % unit for unit in _utf16_units(ch))
        else:
            out.append(ch)
    return "".join(out)


def _utf16_units(ch):
    data = ch.encode("utf-16-be", "surrogatepass")
    return [(data[i] << 8) | data[i + 1] for i in range(0, len(data), 2)]


def java_text(value):
    """``String.valueOf(value)`` as Java prints a setting: booleans as ``true``/``false``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def dump_properties(values):
    """Properties text for ``values`` (``key=value`` lines, values as Java prints them,
    escaped as ``Properties.store``); None values are left out, as ``MixAll.properties2String``
    leaves out Java's nulls."""
    return "".join("%s=%s\n" % (_escape(str(k), True), _escape(java_text(v), False))
                   for k, v in values.items() if v is not None)
