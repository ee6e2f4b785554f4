"""Java library semantics the formats depend on: ``String.hashCode``, ``Math.abs`` and the store's CRC32."""

import sys
import zlib
from functools import lru_cache
from operator import mul

from rmqproto.codec.native import speedups

__all__ = ["java_string_hash", "java_string_hash_uncached", "java_string_hash_continued",
           "java_abs_int", "masked_crc32", "to_int32"]

_MASK32 = 0xFFFFFFFF
_UTF16_NATIVE = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"

# 31**k mod 2**32: the hash of code units u[0..n) is sum(u[n-1-k] * 31**k) mod 2**32,
# summed at C speed with map(mul, reversed(units), _POWERS).
_POWERS_LEN = 4096
_POWERS = [pow(31, k, 1 << 32) for k in range(_POWERS_LEN)]


def to_int32(value):
    """Java's ``(int)`` narrowing of an integer: the low 32 bits as a signed value."""
    value &= _MASK32
    return value - 0x100000000 if value & 0x80000000 else value


# An ASCII code unit u is 31 * q + r (r < 31, q < 5), so the hash sum of u[i] * 31**(n-1-i)
# is int(r digits, 31) + 31 * int(q digits, 31): two translations and two parses, in C.
# Text whose units all lie in [48, 79) ('0'-'9', 'A'-'N': hex message ids) needs one: the
# sum is int((u - 48) digits, 31) + 48 * (31**(n-1) + ... + 1); other units translate to
# '!', which no parse accepts. Texts up to the smallest limit Python may put on int()
# parsing take these ways.
_BASE31 = b"0123456789abcdefghijklmnopqrstu"
_LOW_DIGITS = bytes(_BASE31[u % 31] for u in range(128)) + bytes(128)
_HIGH_DIGITS = bytes(_BASE31[u // 31] for u in range(128)) + bytes(128)
_NARROW_FROM = 48
_NARROW_DIGITS = bytes(_BASE31[u - _NARROW_FROM] if 0 <= u - _NARROW_FROM < 31 else ord("!")
                       for u in range(256))
_BASE31_MAX_LEN = 640
#: ``_NARROW_FROM * (31**(n-1) + ... + 31 + 1)`` by n.
_NARROW_SUMS = [0]
for _power in _POWERS[:_BASE31_MAX_LEN]:
    _NARROW_SUMS.append(_NARROW_SUMS[-1] + _NARROW_FROM * _power)
del _power


@lru_cache(maxsize=65536)
def java_string_hash(text):
    """Java ``String.hashCode()`` over UTF-16 code units, as a signed 32-bit int (the tags code).

    Characters outside the BMP count as their two surrogate code units, exactly as in
    Java; lone surrogates (e.g. from ``surrogateescape``) are hashed as the unit they are.
    """
    if text.isascii():
        if 0 < len(text) <= _BASE31_MAX_LEN:
            return java_string_hash_continued(0, text)
        units = text.encode("ascii")  # ASCII characters are their own UTF-16 code units
    else:
        units = memoryview(text.encode(_UTF16_NATIVE, "surrogatepass")).cast("H")
    if len(units) <= _POWERS_LEN:
        return to_int32(sum(map(mul, reversed(units), _POWERS)))
    h = 0
    for unit in units:
        h = (31 * h + unit) & _MASK32
    return to_int32(h)


#: :func:`java_string_hash` without the cache, for texts that seldom repeat (index keys).
java_string_hash_uncached = java_string_hash.__wrapped__


def java_string_hash_continued(prefix_hash, text):
    """``(prefix + text).hashCode()`` from ``prefix.hashCode()``: prefix_hash * 31**len(text)
    + ``text.hashCode()`` (mod 2**32, len in UTF-16 code units); no string is built."""
    n = len(text)
    if 0 < n <= _BASE31_MAX_LEN and text.isascii():
        units = text.encode("ascii")  # ASCII characters are their own UTF-16 code units
        narrow = units.translate(_NARROW_DIGITS)
        if 33 not in narrow:  # no "!"
            h = int(narrow, 31) + _NARROW_SUMS[n]
        else:
            h = int(units.translate(_LOW_DIGITS), 31) + 31 * int(units.translate(_HIGH_DIGITS), 31)
        h = (h + prefix_hash * _POWERS[n]) & _MASK32
        return h - 0x100000000 if h & 0x80000000 else h
    n = len(text.encode(_UTF16_NATIVE, "surrogatepass")) // 2
    return to_int32(prefix_hash * pow(31, n, 1 << 32) + java_string_hash_uncached(text))


#: The Python :func:`java_string_hash_continued`, the reference of its C version.
python_java_string_hash_continued = java_string_hash_continued
if speedups is not None:
    java_string_hash_continued = speedups.java_string_hash_continued  # noqa: F811


def java_abs_int(value):
    """Java ``Math.abs(int)``: ``Integer.MIN_VALUE`` stays negative (it has no positive twin)."""
    return to_int32(abs(value))


#: ``zlib.crc32``, or its C twin folding with PCLMULQDQ (about 3 times faster on 1 KiB).
_crc32 = speedups.crc32 if speedups is not None else zlib.crc32


def masked_crc32(data):
    """``UtilAll.crc32``: IEEE CRC32 with the top bit cleared."""
    return _crc32(data) & 0x7FFFFFFF
