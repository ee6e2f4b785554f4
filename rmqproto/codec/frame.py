"""The remoting frame and its two header encodings (Java ``RemotingCommand``, ``RocketMQSerializable``).

A frame on the wire is ``[int32 length][int8 serialize type][int24 header length]
[header][body]`` where ``length`` counts everything after itself. The header is
either fastjson JSON (serialize type 0) or the binary "ROCKETMQ" layout (type 1).

The construct declarations (:data:`FRAME`, :data:`BINARY_HEADER`) are the
specification; :func:`encode_frame` / :func:`decode_frame` are the fast paths used
on the wire, and the test-suite proves the two agree byte for byte.
"""

import enum
import re
import struct
from functools import partial

import construct as cs
import orjson

from rmqproto.codec import fastjson
from rmqproto.codec.construct_util import parse_or_raise
from rmqproto.codec.native import speedups
from rmqproto.errors import (
    BadHeaderLengthError,
    CodecError,
    FrameTooLargeError,
    MalformedHeaderError,
    TruncatedError,
)

__all__ = [
    "FRAME", "BINARY_HEADER", "MAX_FRAME_LENGTH", "SERIALIZE_JSON", "SERIALIZE_ROCKETMQ",
    "FLAG_RESPONSE", "FLAG_ONEWAY", "LANGUAGE_CODES", "RemotingCommand",
    "encode_frame", "decode_frame", "FrameDecoder", "parse_frame_declared", "build_frame_declared",
    "JsonResponseTemplate", "response_frame", "python_response_frame", "split_frames",
    "python_split_frames",
]

SERIALIZE_JSON = 0
SERIALIZE_ROCKETMQ = 1
_SERIALIZE_NAMES = {SERIALIZE_JSON: "JSON", SERIALIZE_ROCKETMQ: "ROCKETMQ"}

FLAG_RESPONSE = 1
FLAG_ONEWAY = 2

#: Netty's limit: 4 + length may not exceed this (``com.rocketmq.remoting.frameMaxLength``).
MAX_FRAME_LENGTH = 16 * 1024 * 1024

#: ``LanguageCode`` names and their one-byte codes.
LANGUAGE_CODES = {
    "JAVA": 0, "CPP": 1, "DOTNET": 2, "PYTHON": 3, "DELPHI": 4, "ERLANG": 5, "RUBY": 6,
    "OTHER": 7, "HTTP": 8, "GO": 9, "PHP": 10, "OMS": 11, "RUST": 12, "NODE_JS": 13,
}
_LANGUAGE_NAMES = {code: name for name, code in LANGUAGE_CODES.items()}

# ---------------------------------------------------------------- declarations

#: A whole frame, length prefix included (``RemotingCommand#encode``, ``NettyDecoder``).
FRAME = cs.Struct(
    "length" / cs.Int32sb,
    "serialize_type" / cs.Int8ub,
    "header_length" / cs.Int24ub,
    cs.Check(cs.this.length >= 4),
    cs.Check(cs.this.header_length <= cs.this.length - 4),
    "header" / cs.Bytes(cs.this.header_length),
    "body" / cs.Bytes(cs.this.length - 4 - cs.this.header_length),
)

# Lengths are signed as Java reads them (``readShort`` / ``readInt``); zero reads as null.
_EXT_ENTRY = cs.Struct(
    "key" / cs.PascalString(cs.Int16sb, "utf8"),
    "value" / cs.PascalString(cs.Int32sb, "utf8"),
)

#: The binary "ROCKETMQ" header (``RocketMQSerializable``).
BINARY_HEADER = cs.Struct(
    "code" / cs.Int16sb,
    "language" / cs.Int8ub,
    "version" / cs.Int16sb,
    "opaque" / cs.Int32sb,
    "flag" / cs.Int32sb,
    "remark" / cs.PascalString(cs.Int32sb, "utf8"),
    "ext_fields" / cs.Prefixed(cs.Int32sb, cs.FocusedSeq(
        "entries", "entries" / cs.GreedyRange(_EXT_ENTRY), cs.Terminated)),
    cs.Terminated,
)


class RemotingCommand:
    """One request or response of the remoting protocol (``RemotingCommand``).

    ``ext_fields`` maps strings to strings (``None`` when absent). As in Java, a decoded
    entry may hold ``None``: a JSON ``null`` or an empty string in the binary header (Java
    reads a zero length as ``null``); the JSON encoder leaves such entries out, the binary
    one writes them back as zero lengths. ``language`` is the
    ``LanguageCode`` name; a peer's unknown language is kept as received (the name, the
    binary code, or ``None`` for JSON ``null``), as a 4.9.8 server accepts it too.
    ``serialize_type`` is 0 (JSON) or 1 (ROCKETMQ).
    """

    __slots__ = ("code", "language", "version", "opaque", "flag", "remark",
                 "ext_fields", "serialize_type", "body")

    def __init__(self, code, opaque=0, flag=0, ext_fields=None, body=b"", remark=None,
                 language="JAVA", version=0, serialize_type=SERIALIZE_JSON):
        self.code = code
        self.opaque = opaque
        self.flag = flag
        self.ext_fields = ext_fields
        self.body = body
        self.remark = remark
        self.language = language
        self.version = version
        self.serialize_type = serialize_type

    @property
    def is_response(self):
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self):
        return bool(self.flag & FLAG_ONEWAY)

    def response(self, code, remark=None, ext_fields=None, body=b"", version=0):
        """A response to this request: same opaque and serialize type, response flag set.

        Like Java's ``createResponseCommand`` it says ``JAVA`` and carries the
        responder's ``version``.
        """
        return RemotingCommand(code, opaque=self.opaque, flag=FLAG_RESPONSE,
                               ext_fields=ext_fields, body=body, remark=remark,
                               version=version, serialize_type=self.serialize_type)

    def _key(self):
        return (self.code, self.language, self.version, self.opaque, self.flag, self.remark,
                self.ext_fields or None, self.serialize_type, bytes(self.body))

    def __eq__(self, other):
        return isinstance(other, RemotingCommand) and self._key() == other._key()

    def __repr__(self):
        return ("RemotingCommand(code=%r, opaque=%r, flag=%r, ext_fields=%r, remark=%r, "
                "language=%r, version=%r, serialize_type=%r, body=<%d bytes>)" % (
                    self.code, self.opaque, self.flag, self.ext_fields, self.remark,
                    self.language, self.version, self.serialize_type, len(self.body)))


# ---------------------------------------------------------------- JSON header

def encode_json_header(cmd):
    """The JSON header fastjson writes for ``cmd`` (bean fields alphabetical, nulls omitted).

    orjson writes it whenever that is provably the same text (:func:`_orjson_json_header`),
    otherwise :func:`fastjson_json_header` does; the test-suite checks the two agree.
    """
    header = _orjson_json_header(cmd)
    return header if header is not None else fastjson_json_header(cmd)


def _orjson_json_header(cmd):
    """The header as orjson writes it, or ``None`` when that could differ from fastjson.

    With every field a plain ``int`` or ``str`` (no null ext value) the two writers lay out
    the same JSON. Their strings differ in three places only: DEL and non-ASCII text, which
    orjson writes raw and fastjson escapes, and the hex digits of a control character's
    ``\\u00XX`` escape, lower case in orjson and upper case in fastjson. Both write ``"``,
    ``\\`` and the other control characters alike (``\\b \\t \\n \\f \\r``, ``\\u0001``:
    the properties' separators). So an ASCII result without DEL and without an escape that
    has a hex letter is fastjson's text.
    """
    code, flag, opaque, version = _int_code(cmd.code), cmd.flag, cmd.opaque, cmd.version
    language, remark, ext = cmd.language, cmd.remark, cmd.ext_fields
    if not (type(code) is int and type(flag) is int and type(opaque) is int
            and type(version) is int and type(language) is str
            and (remark is None or type(remark) is str)):
        return None
    header = {"code": code}
    if ext is not None:
        if ext and set(map(type, ext.values())) != _STR_ONLY:
            return None
        header["extFields"] = ext
    header["flag"] = flag
    header["language"] = language
    header["opaque"] = opaque
    if remark is not None:
        header["remark"] = remark
    header["serializeTypeCurrentRPC"] = _SERIALIZE_NAMES[cmd.serialize_type]
    header["version"] = version
    try:
        text = orjson.dumps(header)
    except orjson.JSONEncodeError:  # a key that is not a string, an int beyond 64 bits
        return None
    if text.isascii() and b"\x7f" not in text and (
            b"\\u" not in text or _LOWER_HEX_ESCAPE.search(text) is None):
        return text
    return None


_STR_ONLY = {str}
#: orjson's escapes of the control characters whose hex digits hold a letter (0x0B, 0x0E,
#: 0x0F, 0x1A-0x1F); a match may also be an escaped backslash followed by such text, which
#: only sends that header to fastjson's writer.
_LOWER_HEX_ESCAPE = re.compile(rb"\\u00(?:0[bef]|1[a-f])")


def _int_code(code):
    """A ``RequestCode``/``ResponseCode`` member as the plain int it stands for (its ``str``
    is the member's name before Python 3.11); any other value as it is."""
    return int(code) if isinstance(code, enum.IntEnum) else code


def fastjson_json_header(cmd):
    """The JSON header written string by string with fastjson's rules (every case)."""
    ext = cmd.ext_fields
    parts = ['{"code":', str(_int_code(cmd.code))]
    if ext is not None:
        parts.append(',"extFields":')
        parts.append(_json_map(ext))
    parts += [',"flag":', str(cmd.flag)]
    language = cmd.language
    if type(language) is int:  # a binary code we have no name for: Java holds null here
        language = _LANGUAGE_NAMES.get(language)
    if language is not None:
        parts += [',"language":', fastjson._quote(language, False)]
    parts += [',"opaque":', str(cmd.opaque)]
    if cmd.remark is not None:
        parts.append(',"remark":')
        parts.append(fastjson._quote(cmd.remark, False))
    parts += [',"serializeTypeCurrentRPC":"', _SERIALIZE_NAMES[cmd.serialize_type],
              '","version":', str(cmd.version), "}"]
    return "".join(parts).encode("utf-8")


def _json_map(ext):
    quote = fastjson._quote
    return "{" + ",".join(quote(k, False) + ":" + quote(v, False)
                          for k, v in ext.items() if k is not None and v is not None) + "}"


def _as_int(value, name):
    if type(value) is not int:
        raise MalformedHeaderError("header field %s must be an integer, got %r" % (name, value))
    return value


def decode_json_header(data, serialize_type=SERIALIZE_JSON):
    """Parse a JSON header into a body-less :class:`RemotingCommand`."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise MalformedHeaderError("invalid JSON header: %s" % (exc,)) from None
    if not isinstance(obj, dict):
        raise MalformedHeaderError("JSON header is not an object")
    get = obj.get
    ext = get("extFields")
    if ext is not None:
        if not isinstance(ext, dict):
            raise MalformedHeaderError("extFields is not an object")
        if set(map(type, ext.values())) != _STR_ONLY:  # the usual case: strings only
            _ext_values_as_strings(ext)
    remark = get("remark")
    if remark is not None and not isinstance(remark, str):
        raise MalformedHeaderError("remark is not a string")
    language = get("language", "JAVA")
    if language is not None and not isinstance(language, (str, int)):
        raise MalformedHeaderError("language is neither a name nor a code")
    code, opaque, flag, version = (get("code", 0), get("opaque", 0), get("flag", 0),
                                   get("version", 0))
    if not (type(code) is int and type(opaque) is int and type(flag) is int
            and type(version) is int):
        for name, value in (("code", code), ("opaque", opaque), ("flag", flag),
                            ("version", version)):
            _as_int(value, name)
    return RemotingCommand(code, opaque, flag, ext, b"", remark, language, version,
                           serialize_type)


def _ext_values_as_strings(ext):
    """Java reads every ``extFields`` value as a string: numbers, booleans and the like
    become their JSON text, nulls stay; objects and arrays are refused."""
    for key, value in ext.items():
        if type(value) is not str and value is not None:
            if isinstance(value, (dict, list)):
                raise MalformedHeaderError("extFields value of %r is not a string" % key)
            ext[key] = orjson.dumps(value).decode()


# ---------------------------------------------------------------- binary header

_BIN_FIXED = struct.Struct(">hBhii")  # code, language, version, opaque, flag
_I32 = struct.Struct(">i")
_U16 = struct.Struct(">H")
#: Java reads the key length as a signed short: a longer key cannot be read back.
_MAX_KEY_LENGTH = 0x7FFF


def _s16(value):
    """Java's ``(short)`` cast, used for code and version in the binary header."""
    value &= 0xFFFF
    return value - 0x10000 if value & 0x8000 else value


def _language_code(language):
    if type(language) is int and 0 <= language <= 0xFF:
        return language
    try:
        return LANGUAGE_CODES[language]
    except (KeyError, TypeError):
        raise CodecError("language %r has no binary code" % (language,)) from None


def encode_binary_header(cmd):
    """The "ROCKETMQ" binary header for ``cmd`` (``RocketMQSerializable#rocketMQProtocolEncode``)."""
    language = _language_code(cmd.language)
    remark = cmd.remark.encode("utf-8") if cmd.remark else b""
    ext = bytearray()
    if cmd.ext_fields:
        for key, value in cmd.ext_fields.items():
            # None is written as the zero length it was read from (Java reads either as null)
            kb = key.encode("utf-8") if key is not None else b""
            if len(kb) > _MAX_KEY_LENGTH:
                raise CodecError("ext field key of %d bytes exceeds Java's signed 16-bit length"
                                 % len(kb))
            vb = value.encode("utf-8") if value is not None else b""
            ext += _U16.pack(len(kb)) + kb + _I32.pack(len(vb)) + vb
    return b"".join((
        _BIN_FIXED.pack(_s16(cmd.code), language, _s16(cmd.version), cmd.opaque, cmd.flag),
        _I32.pack(len(remark)), remark, _I32.pack(len(ext)), bytes(ext)))


def decode_binary_header(data):
    """Parse a "ROCKETMQ" binary header into a body-less :class:`RemotingCommand`."""
    data = bytes(data)
    end = len(data)
    if end < 17:
        raise MalformedHeaderError("binary header shorter than 17 bytes")
    code, language, version, opaque, flag = _BIN_FIXED.unpack_from(data, 0)
    name = _LANGUAGE_NAMES.get(language, language)
    pos = 13
    (remark_len,) = _I32.unpack_from(data, pos)
    pos += 4
    if remark_len < 0 or pos + remark_len + 4 > end:
        raise MalformedHeaderError("bad remark length %d" % remark_len)
    remark = _utf8(data[pos:pos + remark_len]) if remark_len else None
    pos += remark_len
    (ext_len,) = _I32.unpack_from(data, pos)
    pos += 4
    if ext_len < 0 or pos + ext_len != end:
        raise MalformedHeaderError("bad ext fields length %d" % ext_len)
    ext = {} if ext_len else None
    while pos < end:
        if pos + 2 > end:
            raise MalformedHeaderError("truncated ext field key length")
        (klen,) = _U16.unpack_from(data, pos)
        pos += 2
        if klen > _MAX_KEY_LENGTH or pos + klen + 4 > end:
            raise MalformedHeaderError("bad ext field key length %d" % klen)
        key = _utf8(data[pos:pos + klen]) if klen else None
        pos += klen
        (vlen,) = _I32.unpack_from(data, pos)
        pos += 4
        if vlen < 0 or pos + vlen > end:
            raise MalformedHeaderError("truncated ext field value")
        ext[key] = _utf8(data[pos:pos + vlen]) if vlen else None
        pos += vlen
    return RemotingCommand(code, opaque=opaque, flag=flag, ext_fields=ext, remark=remark,
                           language=name, version=version, serialize_type=SERIALIZE_ROCKETMQ)


def _utf8(raw):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedHeaderError("header text is not UTF-8: %s" % (exc,)) from None


# ---------------------------------------------------------------- whole frames

_PREFIX = struct.Struct(">iI")


def encode_frame(cmd):
    """The complete wire bytes of ``cmd``, length prefix included."""
    if cmd.serialize_type == SERIALIZE_JSON:
        header = encode_json_header(cmd)
    elif cmd.serialize_type == SERIALIZE_ROCKETMQ:
        header = encode_binary_header(cmd)
    else:
        raise CodecError("unknown serialize type %r" % (cmd.serialize_type,))
    body = cmd.body or b""
    if len(header) > 0xFFFFFF:
        raise CodecError("header of %d bytes exceeds the 24-bit header length" % len(header))
    return b"".join((_PREFIX.pack(4 + len(header) + len(body),
                                  (cmd.serialize_type << 24) | len(header)), header, body))


class JsonResponseTemplate:
    """Whole frames of JSON responses without a body or remark that differ only in their
    code, opaque and some ``extFields`` values: what :func:`encode_frame` writes for them,
    made of a header it wrote once, cut where those values go.

    ``ext_fields`` gives the keys in their order and the constant values; the keys in
    ``varying`` take their values from :attr:`frame`, in that order. ``version`` and
    ``language`` are the responder's. The values go into the JSON as they are, so they must
    be text JSON writes unescaped: ints, and strings of ASCII letters, digits and ``,``
    (message ids).

    ``frame(code, opaque, *values)`` is the whole frame (length prefix included) of the
    response with ``code`` to the request with ``opaque``, ``values`` those of the
    ``varying`` keys (:func:`response_frame` with this template's plan).
    """

    _CODE, _OPAQUE = -7654321987, -7654321986  # markers no real value takes

    def __init__(self, ext_fields, varying, version, language="JAVA"):
        slots = {key: "~slot%d~" % i for i, key in enumerate(varying)}
        cmd = RemotingCommand(self._CODE, opaque=self._OPAQUE, flag=FLAG_RESPONSE,
                              ext_fields=dict(ext_fields, **slots), language=language,
                              version=version, serialize_type=SERIALIZE_JSON)
        header = fastjson_json_header(cmd)
        markers = [str(self._CODE), str(self._OPAQUE)] + ['"%s"' % s for s in slots.values()]
        markers = [marker.encode() for marker in markers]
        if any(header.count(marker) != 1 for marker in markers):
            raise CodecError("a constant of the response template holds a marker")
        quotes = [0, 0] + [1] * len(slots)  # a slot's value goes between its quotes
        places = sorted((header.index(marker) + q, i, len(marker) - 2 * q)
                        for i, (marker, q) in enumerate(zip(markers, quotes)))
        parts, start = [], 0
        for at, _, length in places:
            parts.append(header[start:at])
            start = at + length
        parts.append(header[start:])
        order = tuple(i for _, i, _ in places)
        self.frame = partial(response_frame, (tuple(parts), order, python_response_frame))


def python_response_frame(plan, *values):
    """The whole JSON frame (length prefix included) whose header is ``plan``'s ``parts``
    with ``values`` between them, the value ``values[order[i]]`` after ``parts[i]``: ints in
    decimal, strings as they are. ``plan`` is ``(parts, order, python_response_frame)``."""
    parts, order = plan[0], plan[1]
    if len(values) != len(order) or len(parts) != len(order) + 1:
        raise TypeError("%d values for a template of %d" % (len(values), len(order)))
    pieces = [parts[0]]
    for index, part in zip(order, parts[1:]):
        value = values[index]
        if isinstance(value, int):
            pieces.append(b"%d" % value)
        elif isinstance(value, str):
            pieces.append(value.encode())
        else:
            raise TypeError("a response template value is an int or a str, not %r" % (value,))
        pieces.append(part)
    header = b"".join(pieces)
    return _PREFIX.pack(4 + len(header), len(header)) + header


#: :func:`python_response_frame`, in C where the speedups are built.
response_frame = python_response_frame if speedups is None else speedups.response_frame


def decode_frame(frame):
    """Decode one frame *without* its length prefix (what :class:`FrameDecoder` yields)."""
    if len(frame) < 4:
        raise TruncatedError("frame shorter than its 4-byte header-length word")
    word = int.from_bytes(frame[:4], "big")
    serialize_type = word >> 24
    header_length = word & 0xFFFFFF
    if header_length > len(frame) - 4:
        raise BadHeaderLengthError(
            "header length %d exceeds frame length %d" % (header_length, len(frame) - 4))
    header = frame[4:4 + header_length]
    if serialize_type == SERIALIZE_JSON:
        cmd = decode_json_header(header)
    elif serialize_type == SERIALIZE_ROCKETMQ:
        cmd = decode_binary_header(header)
    else:
        raise MalformedHeaderError("unknown serialize type %d" % serialize_type)
    cmd.body = bytes(frame[4 + header_length:])
    return cmd


#: The Python :func:`decode_frame`, the reference of its C version.
python_decode_frame = decode_frame
if speedups is not None:
    #: :func:`python_decode_frame` in C for a JSON frame with the usual header (the rest
    #: goes to the Python one).
    decode_frame = partial(speedups.decode_frame,  # noqa: F811
                           (RemotingCommand, python_decode_frame))


def parse_frame_declared(data):
    """Decode a whole frame (prefix included) through the construct declarations only."""
    parsed = parse_or_raise(FRAME, data)
    if parsed.serialize_type == SERIALIZE_JSON:
        cmd = decode_json_header(parsed.header)
    elif parsed.serialize_type == SERIALIZE_ROCKETMQ:
        header = parse_or_raise(BINARY_HEADER, parsed.header)
        name = _LANGUAGE_NAMES.get(header.language, header.language)
        ext = {e.key or None: e.value or None for e in header.ext_fields} \
            if header.ext_fields else None
        cmd = RemotingCommand(header.code, opaque=header.opaque, flag=header.flag,
                              ext_fields=ext, remark=header.remark or None, language=name,
                              version=header.version, serialize_type=SERIALIZE_ROCKETMQ)
    else:
        raise MalformedHeaderError("unknown serialize type %d" % parsed.serialize_type)
    cmd.body = parsed.body
    return cmd


def build_frame_declared(cmd):
    """Encode ``cmd`` through the construct declarations (and fastjson's writer) only."""
    if cmd.serialize_type == SERIALIZE_JSON:
        header = fastjson_json_header(cmd)
    else:
        ext = [dict(key=k or "", value=v or "") for k, v in (cmd.ext_fields or {}).items()]
        header = BINARY_HEADER.build(dict(
            code=_s16(cmd.code), language=_language_code(cmd.language),
            version=_s16(cmd.version), opaque=cmd.opaque, flag=cmd.flag,
            remark=cmd.remark or "", ext_fields=ext))
    body = cmd.body or b""
    return FRAME.build(dict(length=4 + len(header) + len(body),
                            serialize_type=cmd.serialize_type, header_length=len(header),
                            header=header, body=body))


def python_split_frames(data, max_frame_length):
    """``(frames, used, error)``: the whole frames at the start of ``data`` (without their
    length prefixes), the bytes they take, and the :class:`CodecError` of a bad length
    prefix right after them (``None`` when there is none)."""
    frames = []
    pos = 0
    size = len(data)
    unpack = _I32.unpack_from
    while size - pos >= 4:
        (length,) = unpack(data, pos)
        if length < 4:
            return frames, pos, BadHeaderLengthError("frame length %d is too small" % length)
        if length + 4 > max_frame_length:
            return frames, pos, FrameTooLargeError("frame of %d bytes exceeds the %d-byte limit"
                                                   % (length + 4, max_frame_length))
        end = pos + 4 + length
        if end > size:
            break
        frames.append(bytes(data[pos + 4:end]))
        pos = end
    return frames, pos, None


#: :func:`python_split_frames`, in C (for bytes and bytearrays) where the speedups are built.
split_frames = python_split_frames if speedups is None else partial(
    speedups.split_frames, python_split_frames)


class FrameDecoder:
    """Splits a byte stream into frames, whatever the chunking (``NettyDecoder``).

    :meth:`feed` returns the complete frames (without length prefix) as ``bytes``.
    A length prefix announcing more than ``max_frame_length`` raises
    :class:`FrameTooLargeError` before any of that frame is buffered.
    """

    def __init__(self, max_frame_length=MAX_FRAME_LENGTH):
        self.max_frame_length = max_frame_length
        self._buffer = bytearray()

    def feed(self, data):
        """Add ``data``; the list of frames it completes (raises on a bad length prefix)."""
        frames, error = self.take(data)
        if error is not None:
            raise error
        return frames

    def take(self, data):
        """Add ``data``; ``(frames, error)``: the frames it completes and the
        :class:`CodecError` of a bad length prefix after them, or ``None``.

        The frames before a bad length prefix are the peer's to be answered, as Netty
        passes them on before closing the channel.
        """
        buf = self._buffer
        if buf:
            buf += data
            data = buf
        # else whole frames are sliced from ``data`` itself and only a rest is buffered
        frames, pos, error = split_frames(data, self.max_frame_length)
        if data is buf:
            del buf[:pos]
        elif pos < len(data):
            buf += data[pos:]
        return frames, error

    @property
    def buffered(self):
        """Bytes held for a frame not yet complete."""
        return len(self._buffer)
