"""DLedger's file store: data and index segments, ``checkpoint`` and ``currterm`` (``docs/dledger.md``).

The layout and the rules are those of DLedger 0.3.1.2's ``DLedgerMmapFileStore`` and
``MmapFileList``, so that a directory written by a Java node opens here and the other way
round:

* ``data/``: entries (:func:`rmqproto.codec.dledger.encode_entry`) one after another in
  segments of ``mappedFileSizeForEntryData`` bytes named by their start offset; an entry
  and 8 more bytes must fit in a segment, else the segment is closed with a blank
  ``[int32 -1][int32 remaining]`` and the entry starts the next one;
* ``index/``: the 32-byte unit of entry *i* at byte ``i * 32``;
* ``checkpoint`` (``endIndex``, ``committedIndex``) and ``currterm`` (``currTerm``,
  ``voteLeader``): Java properties text, written through a temporary file and a ``.bak``
  copy as ``IOUtils.string2File`` does (and made durable, which Java does not).

The store checks only what concerns its files (contiguous indexes, positions); the Raft
rules about roles, terms and leaders are the caller's. Every method runs on one thread;
:meth:`DLedgerStore.flush_plan` hands the blocking ``fsync`` work to another.
"""

import re
from dataclasses import dataclass

from zope.interface import implementer

from rmqproto.broker.configfile import load as load_file, persist as persist_file
from rmqproto.codec import dledger as codec
from rmqproto.codec.dledger_rpc import DLedgerResponseCode
from rmqproto.dledger.log import ILedger, LedgerError
from rmqproto.errors import CodecError
from rmqproto.store.faults import FILE_ERRORS, is_disk_full
from rmqproto.store.mappedfile import MappedFileQueue, file_by_offset, run_flush_plan
from rmqproto.store.retention import expired_by_time

__all__ = ["StoreSettings", "DLedgerStore", "TermFile"]

_UNIT = codec.INDEX_UNIT_SIZE
_ENTRY_HEADER = codec.ENTRY_HEADER.struct
_INDEX_UNIT = codec.INDEX_UNIT.struct
#: How much of a segment's tail recovery zeroes: a torn entry is at most one entry, and
#: DLedger encodes an entry in a 4 MiB buffer (``localEntryBuffer``); truncations zero all.
_NON_ZERO = re.compile(rb"[^\x00]")
#: How many entries appended as leader the store keeps at hand: each follower's dispatcher
#: reads them back right after the append, and finds them there instead of decoding them.
RECENT_ENTRIES = 1024
_RECOVERY_ZERO_LIMIT = 2 * 4 * 1024 * 1024


def _check(condition, code, message=""):
    if not condition:
        raise LedgerError(code, message)


@dataclass
class StoreSettings:
    """Where the files live and how large the segments are (``DLedgerConfig``)."""

    store_base_dir: str
    self_id: str
    data_store_path: str = None
    mapped_file_size_for_entry_data: int = codec.DATA_FILE_SIZE
    mapped_file_size_for_entry_index: int = codec.INDEX_FILE_SIZE

    @property
    def paths(self):
        return codec.store_paths(self.store_base_dir, self.self_id, self.data_store_path)


class TermFile:
    """``currterm``: the term and the vote, saved before anything that depends on them."""

    def __init__(self, path):
        self.path = path

    def load(self):
        """``(curr_term, vote_leader)``; ``(0, None)`` for a new node (``MemberState.loadTerm``)."""
        loaded = load_file(self.path, codec.decode_currterm)
        return loaded if loaded is not None else (0, None)

    def save(self, curr_term, vote_leader):
        """Raises DISK_ERROR when the file cannot be written: nothing may depend on a vote
        that is not on disk."""
        _check(persist_file(self.path, codec.encode_currterm(curr_term, vote_leader)),
               DLedgerResponseCode.DISK_ERROR, "%s could not be written" % self.path)


@implementer(ILedger)
class DLedgerStore:
    """One node's log on disk (``DLedgerMmapFileStore``); :meth:`open` loads and recovers it."""

    def __init__(self, settings):
        paths = settings.paths
        self.paths = paths
        self.data = MappedFileQueue(paths["data"], settings.mapped_file_size_for_entry_data)
        self.index = MappedFileQueue(paths["index"], settings.mapped_file_size_for_entry_index)
        if self.index.file_size % _UNIT:
            raise LedgerError(DLedgerResponseCode.UNEXPECTED_ARGUMENT,
                                    "index segments must hold whole 32-byte units")
        self.begin_index = -1
        self.end_index = -1
        self.end_term = -1
        #: set while the disk is over DLedger's full ratio: appends answer DISK_FULL
        self.disk_full = False
        self._committed_index = -1
        #: the position just after the committed entry (what consumers may read up to)
        self.committed_pos = -1
        #: ``hook(body_pos, body) -> body`` for every entry appended as leader
        #: (``DLedgerMmapFileStore#addAppendHook``): RocketMQ's commit log sets the
        #: record's PHYSICALOFFSET there
        self.append_hooks = []
        self._recent = {}  # index → entry appended as leader (at most RECENT_ENTRIES)

    # -- lifecycle

    def open(self):
        """Load both segment lists, recover the log, then the committed index of ``checkpoint``."""
        self.data.load()
        self.index.load()
        self._recover()
        loaded = load_file(self.paths["checkpoint"], codec.decode_checkpoint)
        if loaded is not None and loaded[1] is not None:
            self.update_committed_index(loaded[1])
        return self

    def close(self):
        """Flush everything, write ``checkpoint`` and release the files."""
        run_flush_plan(self.data.flush_plan(0) + self.index.flush_plan(0))
        self.persist_checkpoint()
        self.data.close()
        self.index.close()

    def persist_checkpoint(self):
        persist_file(self.paths["checkpoint"],
                     codec.encode_checkpoint(self.end_index, self.committed_index))

    def flush_plan(self):
        """What a flush writes (run it with :func:`run_flush_plan`, then :meth:`apply_flush`)."""
        return self.data.flush_plan(0), self.index.flush_plan(0)

    def apply_flush(self, plans):
        self.data.apply_flush(plans[0])
        self.index.apply_flush(plans[1])

    def abort_flush(self, plans):
        self.data.abort_flush(plans[0])
        self.index.abort_flush(plans[1])

    # -- appends

    def append_as_leader(self, body, term):
        """Append ``body`` as the next entry of ``term``; the stored :class:`DLedgerEntry`.

        Each of :attr:`append_hooks` sees the absolute position of the body in the data
        files before the entry is written, and returns the body to store (of the same
        length): RocketMQ rewrites the record's PHYSICALOFFSET there.
        """
        _check(not self.disk_full, DLedgerResponseCode.DISK_FULL)
        size = codec.BODY_OFFSET + len(body)
        pos = self._pre_append(size)
        for hook in self.append_hooks:
            body = hook(pos + codec.BODY_OFFSET, body)
            _check(codec.BODY_OFFSET + len(body) == size, DLedgerResponseCode.UNEXPECTED_ARGUMENT,
                   "an append hook changed the body's length")
        entry = codec.DLedgerEntry(index=self.end_index + 1, term=term, body=body, pos=pos,
                                   size=size)
        self._write(entry)
        recent = self._recent
        recent[entry.index] = entry
        if len(recent) > RECENT_ENTRIES:
            del recent[next(iter(recent))]
        return entry

    def append_as_follower(self, entry):
        """Append an entry pushed by the leader at the position it has there."""
        _check(not self.disk_full, DLedgerResponseCode.DISK_FULL)
        _check(entry.index == self.end_index + 1, DLedgerResponseCode.INCONSISTENT_INDEX,
               "entry %d after %d" % (entry.index, self.end_index))
        pos = self._pre_append(codec.BODY_OFFSET + len(entry.body))
        _check(pos == entry.pos, DLedgerResponseCode.DISK_ERROR,
               "entry %d at %d, the leader has it at %d" % (entry.index, pos, entry.pos))
        self._write(entry)
        return entry

    def truncate(self, entry):
        """Make ``entry`` the last one (``DLedgerMmapFileStore#truncate``): everything after
        it goes (zeroed), and it is written unless the same entry is already there."""
        try:
            existing = self.get(entry.index)
        except LedgerError:
            existing = None
        same = existing is not None and _same_entry(existing, entry)
        self._recent.clear()
        size = codec.BODY_OFFSET + len(entry.body)
        data_end = entry.pos + size if same else entry.pos
        self._truncate_queue(self.data, data_end)
        if not same:
            _check(self._pre_append(size) == entry.pos, DLedgerResponseCode.DISK_ERROR,
                   "entry %d cannot start at %d" % (entry.index, entry.pos))
            self._write_data(entry)
        self._truncate_queue(self.index, entry.index * _UNIT)
        self._write_index(entry.pos, size, entry.magic, entry.index, entry.term)
        self.end_index = entry.index
        self.end_term = entry.term
        self._revise_begin_index()
        if self.committed_index > self.end_index:  # never above the end (DLedger #316)
            self.committed_index = self.end_index
        return entry.index

    def _pre_append(self, size):
        """``MmapFileList#preAppend``: where an entry of ``size`` bytes goes, closing the
        current segment with a blank when it and 8 more bytes do not fit."""
        mapped = _last_file(self.data)
        remaining = mapped.file_size - mapped.wrote_position
        if size + codec.MIN_BLANK_LEN > remaining:
            _check(size + codec.MIN_BLANK_LEN <= mapped.file_size, DLedgerResponseCode.DISK_ERROR,
                   "an entry of %d bytes does not fit a data segment" % size)
            mapped.append(codec.encode_blank(remaining))
            mapped = _last_file(self.data)
        return mapped.file_from_offset + mapped.wrote_position

    def _write(self, entry):
        self._write_data(entry)
        self._write_index(entry.pos, entry.size, entry.magic, entry.index, entry.term)
        self.end_index = entry.index
        self.end_term = entry.term
        if self.begin_index == -1:
            self.begin_index = entry.index

    def _write_data(self, entry):
        mapped = _last_file(self.data)
        header = _ENTRY_HEADER.pack(entry.magic, codec.BODY_OFFSET + len(entry.body), entry.index,
                                    entry.term, entry.pos, entry.channel, entry.chain_crc,
                                    entry.body_crc, len(entry.body))
        entry.size = len(header) + len(entry.body)
        _check(mapped.append(header) and mapped.append(entry.body), DLedgerResponseCode.DISK_ERROR,
               "entry %d does not fit its segment" % entry.index)

    def _write_index(self, pos, size, magic, index, term):
        mapped = _last_file(self.index, index * _UNIT)
        _check(mapped.file_from_offset + mapped.wrote_position == index * _UNIT,
               DLedgerResponseCode.DISK_ERROR, "index unit of entry %d out of place" % index)
        mapped.append(_INDEX_UNIT.pack(magic, pos, size, index, term))

    @staticmethod
    def _truncate_queue(queue, offset, zero_limit=None):
        """Cut ``queue`` at ``offset`` (the tail zeroed, ``zero_limit`` bytes at most); when its files end before
        ``offset`` (a follower far behind), start again with one file there
        (``MmapFileList#rebuildWithPos``)."""
        queue.truncate_dirty_files(offset, zero_limit)
        if queue.max_offset != offset:
            queue.destroy()
            if offset:
                queue.last_mapped_file(offset).set_positions(offset % queue.file_size)

    # -- reads

    def get(self, index):
        """The entry at ``index`` (``DLedgerMmapFileStore#get``): one appended as leader
        lately as it was appended, else read from the files."""
        entry = self._recent.get(index)
        if entry is not None and self.begin_index <= index <= self.end_index:
            return entry
        pos, size = self.entry_pos_and_size(index)
        data = self.read(pos, size)
        _check(data is not None, DLedgerResponseCode.DISK_ERROR, "no data for entry %d" % index)
        try:
            entry = codec.decode_entry(data)
        except CodecError as exc:
            raise LedgerError(DLedgerResponseCode.DISK_ERROR, str(exc)) from None
        _check(entry.pos == pos, DLedgerResponseCode.DISK_ERROR,
               "entry %d says it is at %d, its index unit says %d" % (index, entry.pos, pos))
        return entry

    def term_at(self, index):
        """The term of the entry at ``index`` (from its index unit alone)."""
        return self._index_unit(index)[4]

    def entry_pos_and_size(self, index):
        unit = self._index_unit(index)
        return unit[1], unit[2]

    def _index_unit(self, index):
        _check(index >= 0, DLedgerResponseCode.INDEX_OUT_OF_RANGE, "index %d below 0" % index)
        _check(index >= self.begin_index, DLedgerResponseCode.INDEX_LESS_THAN_LOCAL_BEGIN,
               "index %d below the first entry %d" % (index, self.begin_index))
        _check(index <= self.end_index, DLedgerResponseCode.INDEX_OUT_OF_RANGE,
               "index %d not in %d-%d" % (index, self.begin_index, self.end_index))
        data = self._read(self.index, index * _UNIT, _UNIT)
        _check(data is not None, DLedgerResponseCode.DISK_ERROR, "no index unit for %d" % index)
        return _INDEX_UNIT.unpack(data)

    def read(self, pos, size):
        """``size`` bytes of the data files at absolute position ``pos``, or None."""
        return self._read(self.data, pos, size)

    @staticmethod
    def _read(queue, pos, size):
        mapped = file_by_offset(queue.files, queue.file_size, pos)
        return None if mapped is None else mapped.read(pos - mapped.file_from_offset, size)

    @property
    def end_pos(self):
        """The absolute position after the last byte written to the data files."""
        return self.data.max_offset

    # -- commit

    @property
    def committed_index(self):
        return self._committed_index

    @committed_index.setter
    def committed_index(self, index):
        """Set by the Raft core, which keeps it within the log."""
        self._committed_index = index
        if index >= max(self.begin_index, 0):
            pos, size = self.entry_pos_and_size(index)
            self.committed_pos = pos + size
        else:
            self.committed_pos = -1

    def update_committed_index(self, new_index):
        """``updateCommittedIndex`` (the caller has checked the term): the committed index
        moves forward only, never above the log's end."""
        if new_index == -1 or self.end_index == -1 or new_index == self.committed_index:
            return self.committed_index
        if new_index < self.committed_index or new_index < self.begin_index:
            return self.committed_index
        self.committed_index = min(new_index, self.end_index)
        return self.committed_index

    # -- retention

    def delete_expired_files(self, now_ms, reserved_ms, clean_immediately=False):
        """``deleteExpiredFileByTime``: delete the data segments last written more than
        ``reserved_ms`` before ``now_ms`` (all but the last with ``clean_immediately``), never
        one holding an entry that is not committed; then move the begin index to the first
        remaining entry. The number deleted."""
        files = self.data.files
        count = expired_by_time([m.last_modified_ms for m in files], now_ms, reserved_ms,
                                clean_immediately)
        doomed = [m for m in files[:count]
                  if m.file_from_offset + m.file_size <= self.committed_pos]
        if doomed:
            self.data.remove_files(doomed)
            self._revise_begin_index()
        return len(doomed)

    def _revise_begin_index(self):
        """``reviseLedgerBeginIndex``: the first entry of the first data segment; index
        segments wholly before it go."""
        first = self.data.first_file
        start = None if first is None else _first_entry_pos(first)
        if start is None:
            return
        self.begin_index = _ENTRY_HEADER.unpack_from(first.mm, start)[2]
        below = [mapped for mapped in self.index.files[:-1]
                 if mapped.file_from_offset + mapped.file_size <= self.begin_index * _UNIT]
        if below:
            self.index.remove_files(below)

    # -- recovery

    def _recover(self):
        """``DLedgerMmapFileStore#recover``: walk the data from a segment whose first entry
        agrees with its index unit, rewrite index units that disagree, and cut both lists
        after the last whole entry (a torn last entry is never served)."""
        files = self.data.files
        if not files:
            self._truncate_queue(self.index, 0)
            return
        number = self._recovery_start(files)
        mapped = files[number]
        pos = (_first_entry_pos(mapped) or 0) if number == 0 else 0
        last_index = last_term = -1
        rewrite = False
        while True:
            header = _parse_header(mapped.mm, pos, mapped.file_size)
            if header == "blank":
                number += 1
                if number == len(files):
                    pos = mapped.file_size
                    break
                mapped, pos = files[number], 0
                continue
            if header is None:  # the end of the log, or a torn entry
                break
            magic, size, index, term, entry_pos = header
            if (entry_pos != mapped.file_from_offset + pos
                    or (last_index != -1 and index != last_index + 1) or term < last_term):
                break
            if not rewrite and not self._index_agrees(header):
                self._truncate_queue(self.index, index * _UNIT)
                rewrite = True
            if rewrite:
                self._write_index(entry_pos, size, magic, index, term)
            last_index, last_term = index, term
            pos += size
        end = mapped.file_from_offset + pos
        _check(files[-1].file_from_offset - end <= self.data.file_size, DLedgerResponseCode.DISK_ERROR,
               "the log's valid data ends at %d, more than a segment before the last segment %s: "
               "check the files by hand before anything is cut" % (end, files[-1].path))
        self.end_index, self.end_term = last_index, last_term
        self._truncate_queue(self.data, end, _RECOVERY_ZERO_LIMIT)
        self.data.flushed_where = end
        self._truncate_queue(self.index, (last_index + 1) * _UNIT, _RECOVERY_ZERO_LIMIT)
        self.index.flushed_where = self.index.max_offset
        if last_index != -1:
            self._revise_begin_index()
            self.get(last_index)  # both lists agree on the last entry, or DISK_ERROR

    def _recovery_start(self, files):
        """The segment recovery starts from: at most the third from last, going back while
        a segment's first entry does not agree with the index."""
        for number in range(max(len(files) - 3, 0), -1, -1):
            mapped = files[number]
            start = _first_entry_pos(mapped) if number == 0 else 0
            header = None if start is None else _parse_header(mapped.mm, start, mapped.file_size)
            if (header not in (None, "blank") and header[4] == mapped.file_from_offset + start
                    and self._index_agrees(header)):
                return number
        return 0

    def _index_agrees(self, header):
        magic, size, index, term, pos = header
        data = self._read(self.index, index * _UNIT, _UNIT) if index >= 0 else None
        return data is not None and _INDEX_UNIT.unpack(data) == (magic, pos, size, index, term)


def _parse_header(mm, pos, file_size):
    """``(magic, size, index, term, pos)`` of a whole entry at ``pos``, ``"blank"``, or None
    where no whole, well-formed entry starts."""
    if pos + 8 > file_size:
        return None
    magic, size = _ENTRY_HEADER.unpack_from(mm, pos)[:2] if pos + codec.BODY_OFFSET <= file_size \
        else (int.from_bytes(mm[pos:pos + 4], "big", signed=True), 0)
    if magic == codec.BLANK_MAGIC_CODE:
        return "blank"
    if magic != codec.CURRENT_MAGIC or pos + codec.BODY_OFFSET > file_size:
        return None
    _, size, index, term, entry_pos, _, _, _, body_length = _ENTRY_HEADER.unpack_from(mm, pos)
    if size <= codec.HEADER_SIZE or size != codec.BODY_OFFSET + body_length or pos + size > file_size:
        return None
    return magic, size, index, term, entry_pos


def _last_file(queue, start_offset=0):
    """The segment being written, a new one made when needed; a file that cannot be made
    (a full disk, a read-only directory) is DISK_FULL or DISK_ERROR."""
    try:
        return queue.last_mapped_file(start_offset)
    except FILE_ERRORS as exc:
        raise LedgerError(DLedgerResponseCode.DISK_FULL if is_disk_full(exc)
                          else DLedgerResponseCode.DISK_ERROR, str(exc)) from None


def _first_entry_pos(mapped):
    """Where the first entry of a log's first segment starts: 0, or past the zeros before
    the entry a far-behind follower's log was started again at; None when it holds none."""
    header = _parse_header(mapped.mm, 0, mapped.file_size)
    if header not in (None, "blank"):
        return 0
    found = _NON_ZERO.search(mapped.mm)
    if found is None or found.start() < 3:
        return None
    start = found.start() - 3  # the magic, 1, is the first non-zero byte
    return start if _parse_header(mapped.mm, start, mapped.file_size) not in (None, "blank") else None


def _same_entry(a, b):
    """``DLedgerEntry#equals``: the fields and the body."""
    return (a.index, a.term, a.magic, a.channel, a.pos, bytes(a.body)) == (
        b.index, b.term, b.magic, b.channel, b.pos, bytes(b.body))
