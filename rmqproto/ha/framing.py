"""What an HA slave checks before it acknowledges replicated bytes: whole commit-log
records, framed as the broker's recovery frames them (``CommitLog.checkMessageAndReturnSize``:
the magic code, TOTALSIZE against the lengths of the fields, the body CRC of the BODYCRC
field every 4.9 record carries), and a segment's end-of-file blank filling exactly the
rest of its file.

:func:`check_records` is the reference; the receive loop's C twin
(``HAReceiver.check_records``, ``rmqproto/codec/hareceiver.c``) walks the same way, and
:func:`records_checker` picks the C one where it is built. See docs/ha-slave.md,
"Checking before acknowledging".
"""

import struct

from rmqproto.codec import message as msg
from rmqproto.codec.javalang import masked_crc32
from rmqproto.codec.native import speedups
from rmqproto.errors import CodecError

__all__ = ["check_records", "records_checker", "MIN_RECORD_LENGTH"]

_HEAD = struct.Struct(">ii")  # TOTALSIZE, MAGICCODE
_BODY_CRC = struct.Struct(">i")  # after them
#: The smallest record: IPv4 hosts, empty body, topic and properties (``calMsgLength``).
MIN_RECORD_LENGTH = 91
_MAGICS = (msg.MESSAGE_MAGIC_CODE, msg.MESSAGE_MAGIC_CODE_V2)


def check_records(buffer, pos, end, offset, file_size, check_crc):
    """Walk the whole records of ``buffer[pos:end]``, whose first byte is at commit-log
    ``offset`` (a record start), in segments of ``file_size`` bytes.

    Returns ``(stop, why)``: ``stop`` is the position in ``buffer`` after the last whole
    record (or blank) that passed; ``why`` is None when the walk stopped at bytes that are
    not complete yet, else why the record at ``stop`` is refused."""
    view = memoryview(buffer)[:end]
    while end - pos >= 8:
        total, magic = _HEAD.unpack_from(view, pos)
        in_file = file_size - offset % file_size
        if magic == msg.BLANK_MAGIC_CODE:
            if total != in_file:
                return pos, "a blank of %d bytes where %d are left in the file" % (total, in_file)
            if end - pos < total:
                return pos, None
        elif magic not in _MAGICS:
            return pos, "magic code 0x%08X is not a record's" % (magic & 0xFFFFFFFF)
        elif not MIN_RECORD_LENGTH <= total <= in_file:
            return pos, "TOTALSIZE %d outside [%d, %d] (the bytes left in the file)" % (
                total, MIN_RECORD_LENGTH, in_file)
        elif end - pos < total:
            return pos, None
        else:
            why = _check_record(view, pos, check_crc)
            if why is not None:
                return pos, why
        pos += total
        offset += total
    return pos, None


def _check_record(view, pos, check_crc):
    try:
        layout = msg._record_layout(view, pos)  # recovery's framing checks, shared
    except CodecError as exc:
        return str(exc)
    if check_crc:
        body_pos, body_length = layout[2], layout[3]
        (body_crc,) = _BODY_CRC.unpack_from(view, pos + 8)
        crc = masked_crc32(view[body_pos:body_pos + body_length])
        if crc != body_crc:
            return "BODYCRC %d but the body's CRC is %d" % (body_crc, crc)
    return None


def records_checker():
    """:func:`check_records`, or its C twin where the speedups are built."""
    if speedups is not None and hasattr(speedups.HAReceiver, "check_records"):
        return speedups.HAReceiver.check_records
    return check_records
