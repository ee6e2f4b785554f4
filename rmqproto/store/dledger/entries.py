"""The pure rules of a commit log kept in DLedger entries (Java ``DLedgerCommitLog``).

* :class:`EntryScan` reads dispatch fields out of DLedger data bytes with
  ``DLedgerCommitLog#checkMessageAndReturnSize``'s recognition rule: read
  ``[int magic][int next]``; when ``next`` is the commit log's message or blank magic code
  the bytes are a classic record (the region below ``dividedCommitlogOffset`` of an upgraded
  log); when ``magic`` is -1 they are a DLedger end-of-file blank; otherwise they are an
  entry whose body (48 bytes further) is a complete commit-log record.
* :func:`put_status` is the ``AppendEntryResponse`` code → ``PutMessageStatus`` mapping of
  ``DLedgerCommitLog#asyncPutMessage``.
* :func:`split_records` cuts records encoded back to back into one body per entry.
* :func:`set_physical_offset` is the append hook's rewrite of a record's PHYSICALOFFSET to
  ``entry.pos + 48`` (``DLedgerCommitLog``'s ``AppendHook``).
"""

import struct

from rmqproto.codec import dledger as entry_codec
from rmqproto.codec import message as msg
from rmqproto.codec.dledger_rpc import DLedgerResponseCode as Code
from rmqproto.errors import CodecError
from rmqproto.store.results import PutMessageStatus

__all__ = ["EntryScan", "put_status", "split_records", "set_physical_offset",
           "PHYSICAL_OFFSET_POSITION", "BODY_OFFSET"]

#: Where an entry's body (the record) starts: ``DLedgerEntry.BODY_OFFSET``.
BODY_OFFSET = entry_codec.BODY_OFFSET
#: ``MessageDecoder.PHY_POS_POSITION``: the PHYSICALOFFSET field of a record.
PHYSICAL_OFFSET_POSITION = 28
_HEAD = struct.Struct(">ii")
_LONG = struct.Struct(">q")
_PHYSICAL_OFFSET_END = PHYSICAL_OFFSET_POSITION + _LONG.size
_COMMIT_LOG_MAGICS = frozenset((msg.MESSAGE_MAGIC_CODE, msg.MESSAGE_MAGIC_CODE_V2,
                                msg.BLANK_MAGIC_CODE))

_STATUS = {
    Code.SUCCESS: PutMessageStatus.PUT_OK,
    Code.NOT_LEADER: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    Code.INCONSISTENT_LEADER: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    Code.LEADER_NOT_READY: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    Code.DISK_FULL: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    # not FLUSH_SLAVE_TIMEOUT, which some clients ignore (a comment in Java's code says so)
    Code.WAIT_QUORUM_ACK_TIMEOUT: PutMessageStatus.OS_PAGECACHE_BUSY,
    Code.LEADER_PENDING_FULL: PutMessageStatus.OS_PAGECACHE_BUSY,
}


def put_status(code):
    """The put status of a settled DLedger append's response ``code``; any code Java's
    switch leaves out (TERM_CHANGED, LEADER_TRANSFERRING, ...) is UNKNOWN_ERROR."""
    return _STATUS.get(code, PutMessageStatus.UNKNOWN_ERROR)


def set_physical_offset(body_pos, body):
    """The append hook: ``body`` (a record, a ``bytearray``) with its PHYSICALOFFSET set to
    ``body_pos``, the absolute position of the record in the data files. A body too short
    to be a record (an entry a DLedger client appended) is left as it is (Java's hook would
    throw, failing the append)."""
    if len(body) >= _PHYSICAL_OFFSET_END:
        _LONG.pack_into(body, PHYSICAL_OFFSET_POSITION, body_pos)
    return body


def split_records(data, dispatch_fields):
    """The records encoded back to back in ``data``, one ``bytearray`` each (their sizes are
    the last of their :data:`~rmqproto.codec.message.DISPATCH_FIELDS`)."""
    bodies = []
    pos = 0
    view = memoryview(data)
    for fields in dispatch_fields:
        size = fields[-1]
        bodies.append(bytearray(view[pos:pos + size]))
        pos += size
    return bodies


class EntryScan:
    """The dispatch fields of the records in ``buffer`` (the readable bytes of one data
    segment) from ``start``, read :meth:`take` batches at a time, as
    :class:`~rmqproto.codec.message.DispatchScan` reads a classic segment: ``position`` is
    the offset after the last entry read, ``stop`` says why the scan ended (``"blank"``: the
    segment is closed and the log goes on in the next; ``"empty"``: no more whole entry;
    ``"corrupt"``: a header that is neither, ``error`` says how). An entry whose body is not
    a record is passed over (Java's reput skips it too); its position goes to ``skipped``.
    """

    def __init__(self, buffer, start=0, check_crc=False):
        self.buffer = buffer
        self.position = start
        self.check_crc = check_crc
        self.stop = None
        self.error = None
        self.skipped = []

    def take(self, max_count, limit=None):
        """Up to ``max_count`` records' fields; none once ``position`` reaches ``limit``."""
        fields = []
        buffer, check_crc = self.buffer, self.check_crc
        size = len(buffer)
        pos = self.position
        while len(fields) < max_count and self.stop is None:
            if limit is not None and pos >= limit:
                break
            if size - pos < 8:  # the end of what is readable
                self.stop = "empty"
                break
            first, second = _HEAD.unpack_from(buffer, pos)
            if second in _COMMIT_LOG_MAGICS:
                if second == msg.BLANK_MAGIC_CODE:
                    self.stop = "blank"
                    break
                try:
                    record = msg.decode_dispatch_fields(buffer, pos, check_crc)
                except CodecError as exc:
                    self._corrupt(exc)
                    break
                fields.append(record)
                pos += record[-1]
                continue
            if first == entry_codec.BLANK_MAGIC_CODE:
                self.stop = "blank"
                break
            if first == 0 and second == 0:
                self.stop = "empty"
                break
            if first != entry_codec.CURRENT_MAGIC or second < BODY_OFFSET:
                self._corrupt(CodecError("neither an entry nor a record at %d (%d, %d)"
                                         % (pos, first, second)))
                break
            end = pos + second
            if end > size:
                self.stop = "empty"
                break
            try:
                fields.append(msg.decode_dispatch_fields(buffer[:end], pos + BODY_OFFSET,
                                                         check_crc))
            except CodecError:
                self.skipped.append(pos)
            pos = end
        self.position = pos
        return fields

    def _corrupt(self, error):
        self.stop = "corrupt"
        self.error = error.with_traceback(None)  # no frames holding the mapping
