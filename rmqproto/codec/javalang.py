"""Java library semantics the formats depend on: ``String.hashCode`` and the store's masked CRC32."""

import zlib
from functools import lru_cache

__all__ = ["java_string_hash", "masked_crc32"]


@lru_cache(maxsize=65536)
def java_string_hash(text):
    """Java ``String.hashCode()`` over UTF-16 code units, as a signed 32-bit int (reference §3.7)."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def masked_crc32(data):
    """``UtilAll.crc32``: IEEE CRC32 with the top bit cleared (reference "Conventions")."""
    return zlib.crc32(data) & 0x7FFFFFFF
