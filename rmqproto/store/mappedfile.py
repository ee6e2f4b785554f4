"""Fixed-size memory-mapped segment files and the ordered queue of them (Java ``MappedFile``, ``MappedFileQueue``).

Java's ``MappedFile`` / ``MappedFileQueue``: a segment is named after the absolute
offset of its first byte (20 digits) and has a fixed size; only the last one is written.
Each file gets all its blocks when it is opened (:func:`reserve_blocks`), so that a full
disk is an error at creation and never a fault in a write into the mapping.
:class:`MappedFileBase` (open, map, fsync, close, delete) also serves the index files.
Writes are ``memcpy`` into the mapping on the reactor thread; :meth:`MappedFile.fsync`
(``os.fsync`` on the descriptor, which also writes back pages dirtied through the
mapping) is the only blocking call and is meant to run in a thread.

Flushing is planned on the reactor thread (:meth:`MappedFileQueue.flush_plan`), executed
anywhere (:func:`run_flush_plan`) and applied back on the reactor thread
(:meth:`MappedFileQueue.apply_flush`), so positions are only ever touched by one thread.
"""

import errno
import mmap
import os

from rmqproto.codec.storefile import FILE_NAME_DIGITS, file_name_to_offset, offset_to_file_name
from rmqproto.errors import CodecError, RmqError

__all__ = ["OS_PAGE_SIZE", "StoreError", "DiskFullError", "reserve_blocks", "MappedFileBase",
           "MappedFile", "MappedFileQueue", "numbered_files", "run_flush_plan", "able_to_flush",
           "file_by_offset", "message_at"]

#: ``MappedFile.OS_PAGE_SIZE``: the unit of the "least pages" flush thresholds.
OS_PAGE_SIZE = 4096
_ZERO_CHUNK = bytes(1 << 20)


class StoreError(RmqError):
    """A store file cannot be opened, created or is inconsistent with the configuration."""


class DiskFullError(StoreError):
    """There is no room on the disk for a store file's blocks (``ENOSPC``, or a quota's
    ``EDQUOT``): nothing was written."""


_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def reserve_blocks(fd, size):
    """Give the file open as ``fd`` all its blocks up to ``size`` bytes now
    (``posix_fallocate``), so that a write through a mapping of it never meets a full disk:
    there that is a SIGBUS, which kills the process. :class:`DiskFullError` when the disk
    has no room; other ``OSError`` as it comes. Blocks the file already has cost nothing,
    so reserving a file written before is cheap. Every segment file of the store (commit
    log, consume queues, index, checkpoint) goes through here when it is opened; a new kind
    of segment (DLedger's) must as well."""
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno in _NO_SPACE:
            raise DiskFullError("no space on the disk for %d bytes: %s" % (
                size, os.strerror(exc.errno))) from None
        raise


def able_to_flush(wrote, flushed, full, least_pages):
    """``MappedFile.isAbleToFlush``: a full file always; else at least ``least_pages``
    dirty pages, or any dirty byte when ``least_pages`` is 0."""
    if full:
        return wrote > flushed
    if least_pages > 0:
        return wrote // OS_PAGE_SIZE - flushed // OS_PAGE_SIZE >= least_pages
    return wrote > flushed


def numbered_files(directory, digits=None):
    """The paths of the regular files of ``directory`` named by a number (of ``digits``
    digits, if given), in name order; none when the directory does not exist."""
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    paths = [os.path.join(directory, name) for name in names
             if name.isascii() and name.isdigit() and (digits is None or len(name) == digits)]
    return [path for path in paths if os.path.isfile(path)]


class MappedFileBase:
    """A file of a fixed size mapped whole with mmap (``mm``): created zero-filled when it
    is new or empty, refused with :class:`StoreError` when it has another size, its blocks
    reserved (:func:`reserve_blocks`; a new file that cannot have them is removed again).
    :meth:`fsync` may run in a thread between :meth:`begin_flush` and :meth:`end_flush`; a
    close meanwhile unmaps at once and closes the descriptor when the last such fsync
    ends."""

    def __init__(self, path, file_size):
        self.path = path
        self.file_name = os.path.basename(path)
        self.file_size = file_size
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        created = False
        try:
            size = os.fstat(self.fd).st_size
            created = size == 0
            if not created and size != file_size:
                raise StoreError("%s has %d bytes, the configured size is %d" % (
                    path, size, file_size))
            reserve_blocks(self.fd, file_size)
            self.mm = mmap.mmap(self.fd, file_size)
        except BaseException:
            os.close(self.fd)
            if created:  # nothing in it: no empty or half-reserved file is left
                _unlink(path)
            raise
        self._flushes_in_flight = 0
        self._close_pending = False
        self.closed = False

    # -- flushing (fsync may run in another thread; the counters stay on the reactor thread)

    def begin_flush(self):
        self._flushes_in_flight += 1

    def end_flush(self):
        self._flushes_in_flight -= 1
        if self._close_pending and not self._flushes_in_flight:
            self._close_fd()

    def fsync(self):
        """Blocking: write the file's dirty pages to disk."""
        os.fsync(self.fd)

    @property
    def last_modified_ms(self):
        try:
            return int(os.stat(self.path).st_mtime * 1000)
        except OSError:
            return 0

    # -- lifecycle

    def close(self):
        if self.closed:
            return
        self.closed = True
        self.mm.close()
        if self._flushes_in_flight:
            self._close_pending = True
        else:
            self._close_fd()

    def _close_fd(self):
        self._close_pending = False
        os.close(self.fd)

    def destroy(self):
        """Close and delete the file."""
        self.close()
        _unlink(self.path)


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class MappedFile(MappedFileBase):
    """One segment: the mapping, its write position and its flushed position."""

    def __init__(self, path, file_size):
        try:
            self.file_from_offset = file_name_to_offset(os.path.basename(path))
        except CodecError as exc:
            raise StoreError(str(exc)) from None
        super().__init__(path, file_size)
        self.wrote_position = 0
        self.flushed_position = 0
        #: Store timestamp of the last message appended (the checkpoint's flush time).
        self.store_timestamp = 0
        #: Set on the first file a consume queue creates (``isFirstCreateInQueue``).
        self.first_create_in_queue = False

    def __repr__(self):
        return "MappedFile(%s, wrote=%d, flushed=%d)" % (
            self.file_name, self.wrote_position, self.flushed_position)

    @property
    def remaining(self):
        return self.file_size - self.wrote_position

    @property
    def is_full(self):
        return self.wrote_position >= self.file_size

    def append(self, data):
        """Copy ``data`` at the write position; False when it does not fit."""
        pos = self.wrote_position
        end = pos + len(data)
        if end > self.file_size:
            return False
        self.mm[pos:end] = data
        self.wrote_position = end
        return True

    def read(self, pos, size):
        """``selectMappedBuffer(pos, size)``: the bytes, or None unless all are written."""
        if pos < 0 or size < 0 or pos + size > self.wrote_position:
            return None
        return self.mm[pos:pos + size]

    def read_from(self, pos, max_size=None):
        """``selectMappedBuffer(pos)``: the written bytes from ``pos`` (at most ``max_size``)."""
        end = self.wrote_position
        if pos < 0 or pos >= end:
            return None
        if max_size is not None:
            end = min(end, pos + max_size)
        return self.mm[pos:end]

    def zero_from(self, pos, limit=None):
        """Zero the non-zero bytes from ``pos`` up to ``limit`` (default: the file's end), so a
        truncated tail can never be read back as records or units."""
        end_all = self.file_size if limit is None else min(limit, self.file_size)
        zeros = memoryview(_ZERO_CHUNK)
        while pos < end_all:
            end = min(pos + len(_ZERO_CHUNK), end_all)
            if self.mm[pos:end] != zeros[:end - pos]:
                self.mm[pos:end] = zeros[:end - pos]
            pos = end

    def set_positions(self, pos):
        """Recovery: the file holds valid data up to ``pos``, all of it on disk."""
        self.wrote_position = self.flushed_position = pos


def file_by_offset(files, file_size, offset, return_first_on_not_found=False):
    """``findMappedFileByOffset`` over ``files`` (segments of ``file_size`` in offset order):
    the one holding ``offset``; else the first one if asked, or None."""
    if not files:
        return None
    first = files[0]
    index = offset // file_size - first.file_from_offset // file_size
    if 0 <= index < len(files):
        mapped = files[index]
        if mapped.file_from_offset <= offset < mapped.file_from_offset + file_size:
            return mapped
    for mapped in files:
        if mapped.file_from_offset <= offset < mapped.file_from_offset + file_size:
            return mapped
    return first if return_first_on_not_found else None


def message_at(files, file_size, offset, size):
    """``getMessage(offset, size)`` of a commit log's segments ``files``: the stored bytes, or
    None if not (or no longer) all written there."""
    mapped = file_by_offset(files, file_size, offset, offset == 0)
    if mapped is None:
        return None
    return mapped.read(offset - mapped.file_from_offset, size)


class MappedFileQueue:
    """The segments of one directory, in offset order (``MappedFileQueue``)."""

    def __init__(self, directory, file_size):
        self.directory = directory
        self.file_size = file_size
        self.files = []
        #: Offset up to which everything is on disk.
        self.flushed_where = 0
        self._new_files = False

    def __repr__(self):
        return "MappedFileQueue(%s, %d files)" % (self.directory, len(self.files))

    def load(self):
        """Open every segment of the directory; all count as full until recovery says otherwise."""
        for path in numbered_files(self.directory, FILE_NAME_DIGITS):
            if not os.path.getsize(path):  # an empty leftover (Java refuses it): holds nothing
                _unlink(path)
                continue
            mapped = MappedFile(path, self.file_size)
            mapped.set_positions(self.file_size)
            self.files.append(mapped)

    @property
    def first_file(self):
        return self.files[0] if self.files else None

    @property
    def last_file(self):
        return self.files[-1] if self.files else None

    def last_mapped_file(self, start_offset=0, create=True):
        """``getLastMappedFile``: the file being written, a new one when it is full or there is none."""
        files = self.files
        last = files[-1] if files else None
        if last is not None and last.wrote_position < self.file_size:  # not full: the usual
            return last
        if not create:
            return last
        if last is None:
            create_offset = start_offset - start_offset % self.file_size
        else:
            create_offset = last.file_from_offset + self.file_size
        return self._create(create_offset)

    def _create(self, offset):
        os.makedirs(self.directory, exist_ok=True)
        mapped = MappedFile(os.path.join(self.directory, offset_to_file_name(offset)), self.file_size)
        if not self.files:
            mapped.first_create_in_queue = True
        self.files.append(mapped)
        self._new_files = True
        return mapped

    def find_mapped_file_by_offset(self, offset, return_first_on_not_found=False):
        """``findMappedFileByOffset``: the file holding ``offset``."""
        return file_by_offset(self.files, self.file_size, offset, return_first_on_not_found)

    def mapped_file_by_time(self, timestamp):
        """``getMappedFileByTime``: the first file modified at or after ``timestamp``, else the last."""
        for mapped in self.files:
            if mapped.last_modified_ms >= timestamp:
                return mapped
        return self.last_file

    @property
    def max_offset(self):
        """The offset after the last written byte (0 without files)."""
        files = self.files  # read on every put: no property in between
        if not files:
            return 0
        last = files[-1]
        return last.file_from_offset + last.wrote_position

    @property
    def min_offset(self):
        first = self.first_file
        return first.file_from_offset if first is not None else -1

    def truncate_dirty_files(self, offset, zero_limit=None):
        """``truncateDirtyFiles``: keep data before ``offset``; later files are deleted and the
        tail of the file holding ``offset`` is zeroed (``zero_limit`` bytes of it at most)."""
        kept = []
        for mapped in self.files:
            tail = mapped.file_from_offset + self.file_size
            if tail <= offset:
                kept.append(mapped)
            elif offset >= mapped.file_from_offset:
                pos = offset - mapped.file_from_offset
                mapped.zero_from(pos, None if zero_limit is None else pos + zero_limit)
                mapped.set_positions(pos)
                kept.append(mapped)
            else:
                mapped.destroy()
        self.files = kept
        self.flushed_where = min(self.flushed_where, offset) if self.flushed_where else offset

    def delete_last_mapped_file(self):
        if self.files:
            self.files.pop().destroy()

    def remove_files(self, files):
        """Forget (and delete) ``files`` (retention)."""
        doomed = set(map(id, files))
        for mapped in files:
            mapped.destroy()
        self.files = [m for m in self.files if id(m) not in doomed]

    def destroy(self):
        for mapped in self.files:
            mapped.destroy()
        self.files = []
        self.flushed_where = 0

    def close(self):
        for mapped in self.files:
            mapped.close()

    # -- flushing

    @property
    def unflushed_bytes(self):
        return self.max_offset - self.flushed_where

    def flush_plan(self, least_pages):
        """What a flush would write: ``[(file, position)]`` for the files that have dirty data
        (only the last one is held to ``least_pages``), or ``[]``. It looks at the files past
        ``flushed_where`` only, as Java's flush starts at the file holding it: a put's
        wake-up costs the same with one segment or hundreds."""
        plan = []
        last = self.files[-1] if self.files else None
        for mapped in reversed(self.files):  # the dirty files are the newest ones
            if mapped.file_from_offset + mapped.wrote_position <= self.flushed_where:
                break
            if mapped.wrote_position > mapped.flushed_position and able_to_flush(
                    mapped.wrote_position, mapped.flushed_position,
                    mapped.is_full or mapped is not last, least_pages):
                plan.append((mapped, mapped.wrote_position))
        plan.reverse()
        if plan:
            for mapped, _ in plan:
                mapped.begin_flush()
            if self._new_files:
                self._new_files = False
                plan.append((_DirectorySync(self.directory), 0))
        return plan

    def apply_flush(self, plan):
        """Record a completed flush (reactor thread); returns the new flushed offset."""
        for mapped, pos in plan:
            if isinstance(mapped, _DirectorySync):
                continue
            mapped.end_flush()
            if pos > mapped.flushed_position:
                mapped.flushed_position = pos
            self.flushed_where = max(self.flushed_where, mapped.file_from_offset + pos)
        return self.flushed_where

    def abort_flush(self, plan):
        """A flush failed: release the files without moving any position."""
        for mapped, _ in plan:
            if not isinstance(mapped, _DirectorySync):
                mapped.end_flush()


class _DirectorySync:
    """Plan item: fsync a directory so that newly created segment names are durable."""

    def __init__(self, directory):
        self.directory = directory

    def fsync(self):
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def run_flush_plan(plan):
    """Blocking (run it in a thread): fsync every file of ``plan``."""
    for mapped, _ in plan:
        mapped.fsync()
    return plan
