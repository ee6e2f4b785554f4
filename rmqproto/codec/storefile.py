"""Names and positions of the store's fixed-size mapped files (``UtilAll#offset2FileName``).

CommitLog and ConsumeQueue segments, and DLedger's data and index segments
(``MmapFileList``), are named after the absolute offset of their first byte, zero-padded to 20
decimal digits (``UtilAll.offset2FileName``, ``DLedgerUtils.offset2FileName``).
"""

from rmqproto.errors import CodecError

__all__ = ["FILE_NAME_DIGITS", "offset_to_file_name", "file_name_to_offset", "segment_start"]

FILE_NAME_DIGITS = 20


def offset_to_file_name(offset):
    """``UtilAll.offset2FileName``: ``offset`` as at least 20 zero-padded decimal digits."""
    if offset < 0:
        raise CodecError("negative file offset %d" % offset)
    return "%020d" % offset


def file_name_to_offset(name):
    """The starting offset a segment's file name stands for (the inverse of :func:`offset_to_file_name`)."""
    if len(name) < FILE_NAME_DIGITS or not name.isascii() or not name.isdigit():
        raise CodecError("%r is not a 20-digit segment file name" % (name,))
    return int(name)


def segment_start(offset, file_size):
    """Start offset of the segment of ``file_size`` bytes holding absolute ``offset``."""
    if offset < 0 or file_size <= 0:
        raise CodecError("bad offset %d or file size %d" % (offset, file_size))
    return offset - offset % file_size
