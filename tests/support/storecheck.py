"""An offline consistency check of a store directory: the commit log against its consume
queues (``docs/store.md``).

:func:`check_store` walks the commit log the way recovery does (sizes and body CRCs) and
reads every consume queue the way its recovery does (units up to the first invalid one).
It reports, as text in ``StoreCheck.problems``:

* a segment of the wrong size, a gap or an unexpected name in the segment files;
* a record whose stored PHYSICALOFFSET is not where it lies;
* a unit that points at no record, at a record of another queue or queue offset, with
  another size or tags code (for ``SCHEDULE_TOPIC_XXXX``, the delivery time);
* a record missing from its queue, filler units after a real one, and non-zero bytes
  after the last unit (stale units a later recovery would read again).

Run it on a directory no broker is writing to, or while the broker is idle.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path

from rmqproto.codec import consumequeue as cq
from rmqproto.codec import message as msg
from rmqproto.codec.storefile import file_name_to_offset
from rmqproto.errors import CodecError
from rmqproto.store.config import STORE_SETTINGS
from rmqproto.store.dispatch import parse_delay_levels, tags_code_of

__all__ = ["StoreCheck", "check_store"]

_NOT_DISPATCHED = (msg.TRANSACTION_PREPARED_TYPE, msg.TRANSACTION_ROLLBACK_TYPE)


@dataclass
class StoreCheck:
    """What the walk found: the commit log's end (where recovery truncates), why the walk
    stopped there (``"blank"``, ``"empty"`` or ``"corrupt"``), the records by offset, each
    queue's units from its first logical offset, and the problems."""

    log_end: int = 0
    stop: str = "empty"
    records: dict = field(default_factory=dict)
    queues: dict = field(default_factory=dict)
    first_offsets: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)

    def queue_records(self, topic, queue_id):
        """The records a queue points at, in queue order (filler units left out)."""
        return [self.records[u.commit_log_offset] for u in self.queues.get((topic, queue_id), ())
                if not u.is_blank and u.commit_log_offset in self.records]


def _segments(directory, file_size, problems, what):
    """``[(start offset, bytes)]`` of the fixed-size files of ``directory``, in order."""
    if not directory.is_dir():
        return []
    segments = []
    for name in sorted(os.listdir(directory)):
        try:
            start = file_name_to_offset(name)
        except CodecError:
            problems.append("%s: unexpected file %s" % (what, name))
            continue
        data = (directory / name).read_bytes()
        if len(data) != file_size:
            problems.append("%s/%s: %d bytes, not %d" % (what, name, len(data), file_size))
        if start % file_size:
            problems.append("%s/%s: not on a file boundary" % (what, name))
        if segments and start != segments[-1][0] + file_size:
            problems.append("%s/%s: does not follow %020d" % (what, name, segments[-1][0]))
        segments.append((start, data))
    return segments


def _walk_commit_log(segments, check):
    """Every valid record, from the first segment to the first thing that is not a record."""
    for index, (start, data) in enumerate(segments):
        scan = msg.iter_records(data, 0, True)
        for record in scan:
            offset = start + scan.position - record.store_size
            if record.commit_log_offset != offset:
                check.problems.append("record at %d says PHYSICALOFFSET %d"
                                      % (offset, record.commit_log_offset))
            check.records[offset] = record
        check.log_end, check.stop = start + scan.position, scan.stop
        if scan.stop != "blank":
            later = [s for s, d in segments[index + 1:] if any(d)]
            if later:
                check.problems.append("the commit log ends at %d (%s) but segment %020d holds data"
                                      % (check.log_end, scan.stop, later[0]))
            return


def _read_queue(topic, queue_id, segments, check, delay_table):
    """Check one queue's units against the records and note them in ``check``."""
    where = "consumequeue/%s/%d" % (topic, queue_id)
    first = segments[0][0] // cq.CQ_STORE_UNIT_SIZE if segments else 0
    data = b"".join(d for _, d in segments)
    units = cq.valid_units(data)
    if any(data[len(units) * cq.CQ_STORE_UNIT_SIZE:]):
        check.problems.append("%s: non-zero bytes after unit %d" % (where, first + len(units)))
    seen_real = False
    for index, unit in enumerate(units):
        logical = first + index
        if unit.is_blank:
            if seen_real:
                check.problems.append("%s: filler unit at %d after real units" % (where, logical))
            continue
        seen_real = True
        record = check.records.get(unit.commit_log_offset)
        if record is None:
            check.problems.append("%s: unit %d points at %d, where no record starts (log end %d)"
                                  % (where, logical, unit.commit_log_offset, check.log_end))
            continue
        found = (record.topic, record.queue_id, record.queue_offset, record.store_size,
                 tags_code_of(record, delay_table))
        wanted = (topic, queue_id, logical, unit.size, unit.tags_code)
        if found != wanted:
            check.problems.append("%s: unit %d is %s, the record at %d is %s"
                                  % (where, logical, wanted, unit.commit_log_offset, found))
    check.queues[(topic, queue_id)] = units
    check.first_offsets[(topic, queue_id)] = first


def check_store(root, commit_log_file_size, cq_file_size,
                message_delay_level=STORE_SETTINGS.resolve()[0]["messageDelayLevel"]):
    """Check the store under ``root`` (``commitlog/`` and ``consumequeue/``) written with
    these ``mappedFileSizeCommitLog`` / ``mappedFileSizeConsumeQueue`` / ``messageDelayLevel``
    settings; a :class:`StoreCheck`."""
    root = Path(root)
    check = StoreCheck()
    delay_table = parse_delay_levels(message_delay_level)
    _walk_commit_log(_segments(root / "commitlog", commit_log_file_size, check.problems,
                               "commitlog"), check)
    cq_file_size = cq.mapped_file_size(cq_file_size)
    queues_dir = root / "consumequeue"
    for topic in sorted(os.listdir(queues_dir)) if queues_dir.is_dir() else ():
        for name in sorted(os.listdir(queues_dir / topic)):
            if not name.isdigit():
                check.problems.append("consumequeue/%s: unexpected entry %s" % (topic, name))
                continue
            segments = _segments(queues_dir / topic / name, cq_file_size, check.problems,
                                 "consumequeue/%s/%s" % (topic, name))
            _read_queue(topic, int(name), segments, check, delay_table)
    for offset, record in check.records.items():
        if msg.transaction_type(record.sys_flag) in _NOT_DISPATCHED:
            continue
        key = (record.topic, record.queue_id)
        first = check.first_offsets.get(key, 0)
        units = check.queues.get(key, [])
        index = record.queue_offset - first
        if index < 0:
            continue  # its consume-queue file was deleted by retention
        if index >= len(units) or units[index].commit_log_offset != offset:
            check.problems.append("record at %d (%s/%d offset %d) is not in its consume queue"
                                  % (offset, record.topic, record.queue_id, record.queue_offset))
    return check
