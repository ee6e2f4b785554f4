"""The message index: ``index/<yyyyMMddHHmmssSSS>`` files mapping ``topic#key`` to offsets (Java ``IndexService``).

Java's ``IndexService``: entries for each message's ``UNIQ_KEY`` and ``KEYS`` words are
added to the newest file (a new one is created, named after the creation time, when it
is full); a query walks the files newest first. The file format itself is
:class:`rmqproto.codec.indexfile.IndexFile`.
"""

import os
import time

from twisted.logger import Logger

from rmqproto.codec import message as msg
from rmqproto.codec.indexfile import IndexFile, build_key, index_file_size, topic_prefix_hash
from rmqproto.codec.javalang import java_string_hash_continued
from rmqproto.codec.native import speedups
from rmqproto.store.faults import FILE_ERRORS, ReportThrottle
from rmqproto.store.mappedfile import MappedFileBase, numbered_files

__all__ = ["IndexService", "IndexBatch", "IndexMappedFile", "index_file_name", "time_matched",
           "index_entries"]

log = Logger()
_ROLLBACK = msg.TRANSACTION_ROLLBACK_TYPE
#: ``Long.MAX_VALUE``: the end offset of an index file that could not be created (no
#: record is beyond it, so none gets entries).
NO_INDEX = (1 << 63) - 1


def index_file_name(now_ms):
    """``UtilAll.timeMillisToHumanString``: local time as ``yyyyMMddHHmmssSSS``."""
    return time.strftime("%Y%m%d%H%M%S", time.localtime(now_ms // 1000)) + "%03d" % (now_ms % 1000)


def time_matched(header, begin, end):
    """``IndexFile.isTimeMatched``: whether [begin, end] overlaps the file's time span."""
    b, e = header.begin_timestamp, header.end_timestamp
    return (begin < b and end > e) or b <= begin <= e or b <= end <= e


class IndexMappedFile(MappedFileBase):
    """An index file on disk: a :class:`~rmqproto.store.mappedfile.MappedFileBase` of the
    configured index size and the codec's :class:`IndexFile` over its mapping."""

    def __init__(self, path, hash_slot_num, index_num, end_phy_offset=0, end_timestamp=0):
        super().__init__(path, index_file_size(hash_slot_num, index_num))
        self.index = IndexFile(self.mm, hash_slot_num, index_num, end_phy_offset, end_timestamp)

    @property
    def header(self):
        return self.index.header


def index_entries(requests, newest_end_phy_offset, rollback_type):
    """The ``(hash_code, phy_offset, store_timestamp)`` index entries of ``requests`` (tuples
    in ``DispatchRequest`` order) and whether the last request with keys added none.

    Each request's ``UNIQ_KEY`` and ``KEYS`` words, hashed as ``topic#key`` from the topic's
    ``topic#`` hash on, unless its transaction type is ``rollback_type`` or its offset is
    below the newest file's end (``newest_end_phy_offset()``, called at the first request
    with keys) or the last offset given entries. The C speedups replace this loop."""
    entries = []
    append = entries.append
    prefixes = {}
    end_phy_offset = None
    rolls = False  # a request with keys came while the file may have been full
    for topic, _, offset, _, _, timestamp, _, words, uniq_key, sys_flag, _, _ in requests:
        if not uniq_key and not words:
            continue
        if end_phy_offset is None:
            end_phy_offset = newest_end_phy_offset()
        rolls = True
        if offset < end_phy_offset or sys_flag & rollback_type == rollback_type:
            continue
        prefix = prefixes.get(topic)
        if prefix is None:
            prefixes[topic] = prefix = topic_prefix_hash(topic)
        before = len(entries)
        if uniq_key:
            append((java_string_hash_continued(prefix, uniq_key), offset, timestamp))
        if words:
            for word in words.split(msg.KEY_SEPARATOR):
                if word:
                    append((java_string_hash_continued(prefix, word), offset, timestamp))
        if len(entries) > before:
            end_phy_offset = offset
            rolls = False
    return entries, rolls


#: The Python :func:`index_entries`, the reference of its C version.
python_index_entries = index_entries
if speedups is not None:
    index_entries = speedups.index_entries  # noqa: F811


class IndexBatch:
    """The entries of one batch of requests: :meth:`newest_end_phy_offset` is the callback
    :func:`index_entries` calls at the batch's first request with keys, :meth:`put` puts the
    entries it made."""

    def __init__(self, service):
        self.service = service
        #: the newest file, once a request with keys found it
        self.file = None

    def newest_end_phy_offset(self):
        """The newest file (created when there is none or the newest is full)'s end; the
        largest offset, so that the batch adds no entries, when that file cannot be created
        (:meth:`IndexService.writable_last_file`)."""
        self.file = self.service.writable_last_file()
        return NO_INDEX if self.file is None else self.file.index.end_phy_offset

    def put(self, entries, rolls):
        """Put ``entries`` (a sequence or :class:`PackedEntries`) into the newest file and
        the ones that follow it as each fills; with ``rolls``, a full last file gets its
        successor now, as Java's next request with keys would find it."""
        f = self.file
        if f is None:
            return
        done = 0
        while done < len(entries):
            done = f.index.put_hashes(entries, done)
            if done < len(entries):
                f = self.service.writable_last_file()
                if f is None:
                    return
        if rolls and f.index.is_write_full:
            self.service.writable_last_file()


class IndexService:
    """The index files of a store; runs on the reactor thread."""

    def __init__(self, directory, hash_slot_num, index_num, clock, max_msgs_num_batch=64):
        self.directory = directory
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.clock = clock  # () -> ms, names new files
        self.max_msgs_num_batch = max_msgs_num_batch
        self.files = []
        #: Files that became full and await a flush: ``[IndexMappedFile]``.
        self.full_files = []
        self._reports = ReportThrottle()

    def load(self, last_exit_ok, index_msg_timestamp):
        """Open the files; after a crash drop those holding entries newer than the checkpoint."""
        for path in numbered_files(self.directory):
            f = IndexMappedFile(path, self.hash_slot_num, self.index_num)
            if not last_exit_ok and f.header.end_timestamp > index_msg_timestamp:
                f.destroy()
                continue
            self.files.append(f)

    def last_file(self):
        """``getAndCreateLastIndexFile``: the newest file, or a new one after a full one."""
        end_phy_offset = end_timestamp = 0
        last = self.files[-1] if self.files else None
        if last is not None:
            if not last.index.is_write_full:
                return last
            end_phy_offset = last.index.end_phy_offset
            end_timestamp = last.index.end_timestamp
        os.makedirs(self.directory, exist_ok=True)
        name = index_file_name(self.clock())
        while any(f.file_name == name for f in self.files):
            name = str(int(name) + 1)
        f = IndexMappedFile(os.path.join(self.directory, name), self.hash_slot_num,
                             self.index_num, end_phy_offset, end_timestamp)
        if last is not None:
            self.full_files.append(last)
        self.files.append(f)
        return f

    def writable_last_file(self):
        """:meth:`last_file`, or None when a new file cannot be created (a full disk, a
        read-only directory): as Java's ``buildIndex``, the entries are dropped (the
        messages stay, found by offset and by their queues), with one log line per
        :data:`~rmqproto.store.faults.REPORT_INTERVAL`."""
        try:
            return self.last_file()
        except FILE_ERRORS as exc:
            if self._reports.due("index", self.clock() / 1000.0):
                log.error("cannot create an index file in {directory}, keys are not indexed "
                          "meanwhile: {error}", directory=self.directory, error=str(exc))
            return None

    def build_index(self, request):
        """``buildIndex`` of one request (see :meth:`build_indexes`)."""
        self.build_indexes((request,))

    def build_indexes(self, requests):
        """``buildIndex`` of each request (a tuple in ``DispatchRequest`` order), in order: add
        its ``UNIQ_KEY`` and ``KEYS`` words (not for rolled-back transactions, nor for offsets
        the newest file already covers).

        The key hashes of the whole batch (:func:`index_entries`) go to
        :meth:`IndexFile.put_hashes` at once. As in Java, a request with keys finds the
        newest file (creating one when there is none or the newest is full) even when it
        adds nothing."""
        batch = self.batch()
        batch.put(*index_entries(requests, batch.newest_end_phy_offset, _ROLLBACK))

    def batch(self):
        """An :class:`IndexBatch` for the entries of one batch of requests."""
        return IndexBatch(self)

    def query_offset(self, topic, key, max_num, begin, end):
        """``queryOffset``: ``(offsets, last update timestamp, last update phy offset)``."""
        offsets = []
        last_ts = last_phy = 0
        max_num = min(max_num, self.max_msgs_num_batch)
        full_key = build_key(topic, key)
        for i in range(len(self.files) - 1, -1, -1):
            f = self.files[i]
            header = f.header
            if i == len(self.files) - 1:
                last_ts, last_phy = header.end_timestamp, header.end_phy_offset
            if time_matched(header, begin, end):
                offsets += f.index.select_phy_offsets(full_key, max_num - len(offsets), begin, end)
            if header.begin_timestamp < begin or len(offsets) >= max_num:
                break
        return offsets, last_ts, last_phy

    def take_full_files(self):
        """Full files not flushed yet (their flush advances the checkpoint's index time)."""
        full, self.full_files = self.full_files, []
        return full

    def delete_expired_files(self, min_phy_offset):
        """``deleteExpiredFile``: drop leading files (never the last) ending before ``min_phy_offset``."""
        while len(self.files) > 1 and self.files[0].header.end_phy_offset < min_phy_offset:
            self.files.pop(0).destroy()

    def destroy(self):
        for f in self.files:
            f.destroy()
        self.files = []

    def close(self):
        for f in self.files:
            f.close()
