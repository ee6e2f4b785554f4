"""The store checkpoint file (``StoreCheckpoint``).

One OS page: the timestamps (ms) of the last flushed commit log, consume queues
and index, and in RMQ5 two more offsets (zero in files written by 4.x).
"""

import struct
from typing import NamedTuple

import construct as cs

from rmqproto.codec.construct_util import build_or_raise, parse_or_raise
from rmqproto.errors import CodecError, TruncatedError

__all__ = ["CHECKPOINT_FILE_SIZE", "CHECKPOINT", "Checkpoint", "encode_checkpoint",
           "decode_checkpoint"]

#: ``MappedFile.OS_PAGE_SIZE``: the size of the file.
CHECKPOINT_FILE_SIZE = 4096

#: The used head of the page; the rest is zeros.
CHECKPOINT = cs.Struct(
    "physic_msg_timestamp" / cs.Int64sb,
    "logics_msg_timestamp" / cs.Int64sb,
    "index_msg_timestamp" / cs.Int64sb,
    "master_flushed_offset" / cs.Int64sb,  # RMQ5 only
    "confirm_phy_offset" / cs.Int64sb,  # RMQ5 only
)

_HEAD = struct.Struct(">qqqqq")
_V4_LENGTH = 24


class Checkpoint(NamedTuple):
    """The checkpoint values; the last two exist only in RMQ5 (0 otherwise)."""

    physic_msg_timestamp: int
    logics_msg_timestamp: int
    index_msg_timestamp: int
    master_flushed_offset: int = 0
    confirm_phy_offset: int = 0

    def min_timestamp(self):
        """``getMinTimestamp``: min(physic, logics) − 3 s, floored at 0 (recovery start)."""
        return max(min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000, 0)

    def min_timestamp_index(self):
        """``getMinTimestampIndex``: also bounded by the index timestamp."""
        return min(self.min_timestamp(), self.index_msg_timestamp)


def encode_checkpoint(checkpoint):
    """The whole 4096-byte file."""
    try:
        head = _HEAD.pack(*checkpoint)
    except struct.error as exc:
        raise CodecError("checkpoint value out of range: %s" % exc) from None
    return head + bytes(CHECKPOINT_FILE_SIZE - len(head))


def decode_checkpoint(data):
    """Read a checkpoint file (4.x files need only the first 24 bytes)."""
    if len(data) < _V4_LENGTH:
        raise TruncatedError("checkpoint of %d bytes is shorter than %d" % (len(data), _V4_LENGTH))
    if len(data) < _HEAD.size:
        data = bytes(data[:_V4_LENGTH]) + bytes(_HEAD.size - _V4_LENGTH)
    return Checkpoint._make(_HEAD.unpack_from(data))


def parse_checkpoint_declared(data):
    """Decode a checkpoint through :data:`CHECKPOINT` only."""
    p = parse_or_raise(CHECKPOINT, data)
    return Checkpoint(*(p[name] for name in Checkpoint._fields))


def build_checkpoint_declared(checkpoint):
    """Encode the 4096-byte file through :data:`CHECKPOINT` only."""
    head = build_or_raise(CHECKPOINT, checkpoint._asdict())
    return head + bytes(CHECKPOINT_FILE_SIZE - len(head))
