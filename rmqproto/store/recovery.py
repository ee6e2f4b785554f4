"""Recovery decisions after a clean stop or a crash (``recoverNormally`` / ``recoverAbnormally``).

The rules, as pure functions over segment buffers (``CommitLog#recoverNormally``, ``docs/store.md``):

* after a clean stop (no ``abort`` file) the walk starts at the third-last commit-log
  segment; after a crash at the newest segment whose first record was stored at or
  before the checkpoint's minimum timestamp (else the first segment);
* the walk follows records with the size and (``checkCRCOnRecover``) CRC checks of the
  scanner, crosses to the next segment at an end-of-file blank, and stops at the first
  thing that is not a valid record: that offset is the new end of the commit log;
* consume-queue units pointing at or past that end are dropped, and dispatching
  resumes at the largest commit-log position the consume queues cover.
"""

import struct

from rmqproto.codec import message as msg

__all__ = ["normal_start_index", "abnormal_start_index", "first_record_timestamp",
           "walk_commit_log", "reput_start_offset"]

_TS = struct.Struct(">q")


def normal_start_index(file_count):
    """A clean stop: walk the last three segments."""
    return max(file_count - 3, 0)


def first_record_timestamp(buffer):
    """``isMappedFileMatchedRecover``'s view of a segment: the store timestamp of its first
    record, or None when it does not start with a version-1 record (or the time is 0)."""
    if len(buffer) < 64 or _int(buffer, 4) != msg.MESSAGE_MAGIC_CODE:
        return None
    sys_flag = _int(buffer, 36)
    pos = 56 if not sys_flag & msg.BORNHOST_V6_FLAG else 68
    (timestamp,) = _TS.unpack_from(buffer, pos)
    return timestamp or None


def _int(buffer, pos):
    return int.from_bytes(buffer[pos:pos + 4], "big", signed=True)


def abnormal_start_index(first_timestamps, min_timestamp):
    """A crash: the newest segment whose first record is at or before ``min_timestamp``
    (``first_timestamps`` from :func:`first_record_timestamp`), else 0."""
    for index in range(len(first_timestamps) - 1, -1, -1):
        ts = first_timestamps[index]
        if ts is not None and ts <= min_timestamp:
            return index
    return 0


def walk_commit_log(segments, start_index, check_crc, on_record=None):
    """Walk ``segments`` (``[(file_from_offset, buffer)]``, in order) from ``start_index``;
    returns the offset after the last valid record (the truncation point).

    ``on_record(fields)`` sees the :func:`~rmqproto.codec.message.decode_dispatch_fields`
    tuple of each valid record (an abnormal recovery re-dispatches them).
    """
    if not segments:
        return 0
    index = start_index
    while True:
        start, buffer = segments[index]
        scan = msg.iter_dispatch_fields(buffer, 0, check_crc)
        for record in scan:
            if on_record is not None:
                on_record(record)
        if scan.stop == "blank" and index + 1 < len(segments):
            index += 1
            continue
        return start + scan.position


def reput_start_offset(max_physic_offsets, commit_log_min_offset):
    """Where dispatching resumes: the largest commit-log end the consume queues cover,
    never below the commit log's first offset (nor 0)."""
    offset = max(max_physic_offsets, default=commit_log_min_offset)
    return max(offset, commit_log_min_offset, 0)
