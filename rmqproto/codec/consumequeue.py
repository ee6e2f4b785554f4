"""ConsumeQueue units: 20-byte pointers from a queue's logical offsets into the commit log (``ConsumeQueue``).

:data:`CQ_UNIT` is the specification; :func:`encode_unit`, :func:`decode_unit` and
:func:`decode_units` (bulk, for whole files) are the ``struct`` fast paths.
"""

import struct
from typing import NamedTuple

import construct as cs

from rmqproto.codec.construct_util import build_or_raise, parse_or_raise
from rmqproto.codec.native import speedups
from rmqproto.errors import CodecError, TruncatedError

__all__ = [
    "CQ_STORE_UNIT_SIZE", "DEFAULT_MAPPED_FILE_SIZE", "CQ_UNIT", "ConsumeQueueUnit", "BLANK_UNIT",
    "MAX_EXT_ADDR", "encode_unit", "decode_unit", "decode_units", "encode_units",
    "is_ext_addr", "unit_position", "mapped_file_size", "valid_units",
]

CQ_STORE_UNIT_SIZE = 20
#: ``mappedFileSizeConsumeQueue`` default: 300 000 units.
DEFAULT_MAPPED_FILE_SIZE = 300000 * CQ_STORE_UNIT_SIZE
#: Tags codes at or below this are addresses into ``consumequeue_ext`` (``ConsumeQueueExt.MAX_ADDR``).
MAX_EXT_ADDR = -(1 << 31) - 1

#: One unit (``ConsumeQueue#putMessagePositionInfo``).
CQ_UNIT = cs.Struct(
    "commit_log_offset" / cs.Int64sb,
    "size" / cs.Int32sb,
    "tags_code" / cs.Int64sb,
)

_UNIT = struct.Struct(">qiq")


class ConsumeQueueUnit(NamedTuple):
    """Where a message is (commit-log offset and TOTALSIZE) and its tags code."""

    commit_log_offset: int
    size: int
    tags_code: int

    @property
    def is_valid(self):
        """What recovery accepts: offset ≥ 0 and size > 0 (blank filler units are "valid" too)."""
        return self.commit_log_offset >= 0 and self.size > 0

    @property
    def is_blank(self):
        """A filler unit written before the first real unit of a queue that starts late."""
        return self == BLANK_UNIT


#: ``fillPreBlank``'s filler unit ``[0][Integer.MAX_VALUE][0]``.
BLANK_UNIT = ConsumeQueueUnit(0, 0x7FFFFFFF, 0)


def is_ext_addr(tags_code):
    """Whether ``tags_code`` addresses the consume-queue extension file."""
    return tags_code <= MAX_EXT_ADDR


def encode_unit(unit):
    """The 20 bytes of ``unit`` (any ``(offset, size, tags_code)`` triple)."""
    try:
        return _UNIT.pack(*unit)
    except struct.error as exc:
        raise CodecError("consume-queue unit out of range: %s" % exc) from None


def encode_units(units):
    """Several units back to back: the first three items ``(offset, size, tags_code)`` of
    each tuple of ``units`` (the C speedups encode them when they can)."""
    if speedups is not None:
        if not isinstance(units, (list, tuple)):
            units = list(units)  # the fallback may need them again
        data = speedups.encode_units(units)
        if data is not None:
            return data
    return b"".join([encode_unit(u[:3]) for u in units])


def decode_unit(buffer, offset=0):
    """The unit at byte ``offset`` of ``buffer``."""
    if len(buffer) - offset < CQ_STORE_UNIT_SIZE or offset < 0:
        raise TruncatedError("no complete consume-queue unit at %d" % offset)
    return ConsumeQueueUnit._make(_UNIT.unpack_from(buffer, offset))


def decode_units(buffer):
    """Every unit of ``buffer`` (a whole number of units), decoded in bulk."""
    if len(buffer) % CQ_STORE_UNIT_SIZE:
        raise TruncatedError("%d bytes is not a whole number of units" % len(buffer))
    return list(map(ConsumeQueueUnit._make, _UNIT.iter_unpack(buffer)))


def valid_units(buffer):
    """The units of a consume-queue file up to the first one recovery would stop at."""
    units = decode_units(buffer[:len(buffer) - len(buffer) % CQ_STORE_UNIT_SIZE])
    for count, unit in enumerate(units):
        if not unit.is_valid:
            return units[:count]
    return units


def parse_unit_declared(data):
    """Decode one unit through :data:`CQ_UNIT` only."""
    p = parse_or_raise(CQ_UNIT, data)
    return ConsumeQueueUnit(p.commit_log_offset, p.size, p.tags_code)


def build_unit_declared(unit):
    """Encode one unit through :data:`CQ_UNIT` only."""
    return build_or_raise(CQ_UNIT, unit._asdict())


def mapped_file_size(configured=DEFAULT_MAPPED_FILE_SIZE):
    """``getMappedFileSizeConsumeQueue``: the configured size rounded up to whole units."""
    return -(-configured // CQ_STORE_UNIT_SIZE) * CQ_STORE_UNIT_SIZE


def unit_position(logical_offset, file_size=DEFAULT_MAPPED_FILE_SIZE):
    """``(file start offset, position in that file)`` of logical offset ``logical_offset``.

    The file start offset is also the file's name (see :mod:`rmqproto.codec.storefile`).
    """
    if logical_offset < 0:
        raise CodecError("negative logical offset %d" % logical_offset)
    absolute = logical_offset * CQ_STORE_UNIT_SIZE
    return absolute - absolute % file_size, absolute % file_size
