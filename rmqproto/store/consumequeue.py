"""Per topic-queue consume queues: ``consumequeue/<topic>/<queueId>/<20-digit offset>`` (Java ``ConsumeQueue``).

Java's ``ConsumeQueue``: 20-byte units in fixed-size files, written by the dispatcher in
logical-offset order; a queue first written at a logical offset > 0 is padded with
blank units. ``min_logic_offset`` and positions are byte offsets (logical offset × 20).
"""

import os
import struct

from rmqproto.codec.consumequeue import (BLANK_UNIT, CQ_STORE_UNIT_SIZE, encode_unit, encode_units,
                                         mapped_file_size)
from rmqproto.codec.native import speedups
from rmqproto.store.mappedfile import MappedFileQueue

__all__ = ["ConsumeQueue", "valid_prefix_length", "search_offset_by_time", "names_a_directory"]

_UNIT = struct.Struct(">qiq")
_BLANK = encode_unit(BLANK_UNIT)
#: The usual run of :meth:`ConsumeQueue.put_positions` in C (None without the speedups).
put_unit_run = speedups.put_unit_run if speedups is not None else None


def names_a_directory(topic):
    """Whether ``topic`` can name its own directory under ``consumequeue/``: not ``.`` or
    ``..``, no ``/`` (another directory level) and no NUL (no file name at all)."""
    return "/" not in topic and "\0" not in topic and topic not in (".", "..")


def valid_prefix_length(buffer, size):
    """Bytes of ``buffer[:size]`` covered by units recovery accepts (offset ≥ 0, size > 0),
    up to the first one it stops at."""
    end = len(bytes(buffer[:size]).rstrip(b"\0"))
    end = min(size, -(-end // CQ_STORE_UNIT_SIZE) * CQ_STORE_UNIT_SIZE)
    pos = 0
    for offset, unit_size, _ in _UNIT.iter_unpack(buffer[:end]):
        if offset < 0 or unit_size <= 0:
            break
        pos += CQ_STORE_UNIT_SIZE
    return pos


def search_offset_by_time(units, low, timestamp, store_time, min_physic_offset):
    """``getOffsetInQueueByTime`` over one file's ``units`` (``[(offset, size)]``) from unit
    index ``low``: the index whose store time equals ``timestamp``, else the nearer of the
    neighbours (the later one on a tie); ``store_time(offset, size)`` reads the commit log
    and returns -1 when it cannot, which makes the answer 0 (None here)."""
    high = len(units) - 1
    target = left = right = -1
    left_value = right_value = -1
    while high >= low:
        mid = (low + high) // 2
        offset, size = units[mid]
        if offset < min_physic_offset:
            low = mid + 1
            left = mid
            continue
        stored = store_time(offset, size)
        if stored < 0:
            return None
        if stored == timestamp:
            target = mid
            break
        if stored > timestamp:
            high = mid - 1
            right, right_value = mid, stored
        else:
            low = mid + 1
            left, left_value = mid, stored
    if target != -1:
        return target
    if left_value == -1:
        return right
    if right_value == -1:
        return left
    return right if abs(timestamp - left_value) > abs(timestamp - right_value) else left


class ConsumeQueue:
    """One queue's units and its min/max offsets."""

    def __init__(self, topic, queue_id, root, file_size):
        self.topic = topic
        self.queue_id = queue_id
        self.file_size = mapped_file_size(file_size)
        self.queue = MappedFileQueue(os.path.join(root, topic, str(queue_id)), self.file_size)
        #: End (offset + size) of the last unit's message in the commit log, -1 when none.
        self.max_physic_offset = -1
        #: Byte offset of the first readable unit.
        self.min_logic_offset = 0

    def __repr__(self):
        return "ConsumeQueue(%s, %d, min=%d, max=%d)" % (
            self.topic, self.queue_id, self.min_offset_in_queue, self.max_offset_in_queue)

    def load(self):
        self.queue.load()

    def recover(self):
        """Find the last valid unit of the last three files; drop everything after it."""
        files = self.queue.files
        if not files:
            return
        index = max(len(files) - 3, 0)
        process_offset = files[index].file_from_offset
        while True:
            mapped = files[index]
            length = valid_prefix_length(mapped.mm, self.file_size)
            if length:
                last = _UNIT.unpack_from(mapped.mm, length - CQ_STORE_UNIT_SIZE)
                self.max_physic_offset = last[0] + last[1]
            process_offset = mapped.file_from_offset + length
            if length == self.file_size and index + 1 < len(files):
                index += 1
                continue
            break
        self.queue.flushed_where = process_offset
        self.queue.truncate_dirty_files(process_offset)

    # -- offsets

    @property
    def max_offset_in_queue(self):
        return self.queue.max_offset // CQ_STORE_UNIT_SIZE

    @property
    def min_offset_in_queue(self):
        return self.min_logic_offset // CQ_STORE_UNIT_SIZE

    def last_offset(self):
        """``getLastOffset``: the end (offset + size) in the commit log of the last unit of
        the last file, -1 when that file holds none."""
        mapped = self.queue.last_file
        if mapped is None:
            return -1
        unit = mapped.read(max(mapped.wrote_position - CQ_STORE_UNIT_SIZE, 0), CQ_STORE_UNIT_SIZE)
        if unit is None:
            return -1
        offset, size, _ = _UNIT.unpack_from(unit)
        return offset + size if offset >= 0 and size > 0 else -1

    def roll_next_file(self, index):
        """``rollNextFile``: the first logical offset of the next file."""
        units = self.file_size // CQ_STORE_UNIT_SIZE
        return index + units - index % units

    def correct_min_offset(self, min_physic_offset):
        """``correctMinOffset``: the first unit of the first file pointing at or after
        ``min_physic_offset`` becomes the minimum."""
        first = self.queue.first_file
        if first is None:
            return
        data = first.read_from(0)
        if not data:
            return
        for i, (offset, _, _) in enumerate(_UNIT.iter_unpack(data[:len(data) - len(data) % 20])):
            if offset >= min_physic_offset:
                self.min_logic_offset = first.file_from_offset + i * CQ_STORE_UNIT_SIZE
                return

    def truncate_dirty_logic_files(self, physic_offset):
        """``truncateDirtyLogicFiles``: drop units of messages at or after ``physic_offset``."""
        self.max_physic_offset = physic_offset
        while self.queue.files:
            mapped = self.queue.files[-1]
            length = valid_prefix_length(mapped.mm, self.file_size)
            keep = 0
            for offset, size, _ in _UNIT.iter_unpack(mapped.mm[:length]):
                if offset >= physic_offset:
                    break
                keep += CQ_STORE_UNIT_SIZE
                self.max_physic_offset = offset + size
            if keep == 0:
                self.queue.delete_last_mapped_file()
                continue
            mapped.zero_from(keep)
            mapped.set_positions(keep)
            self.queue.flushed_where = min(self.queue.flushed_where,
                                           mapped.file_from_offset + keep)
            return
        self.queue.flushed_where = 0

    # -- writing

    def put_position(self, offset, size, tags_code, cq_offset):
        """``putMessagePositionInfo``: add the unit of logical offset ``cq_offset``.

        Units for messages already covered are ignored; a unit behind the write position
        is ignored; a first file created at ``cq_offset > 0`` is padded with blank units.
        """
        if offset + size <= self.max_physic_offset:
            return True
        expect = cq_offset * CQ_STORE_UNIT_SIZE
        mapped = self.queue.last_mapped_file(expect)
        if mapped.first_create_in_queue and cq_offset != 0 and mapped.wrote_position == 0:
            self.min_logic_offset = expect
            self.queue.flushed_where = expect
            mapped.append(_BLANK * ((expect % self.file_size) // CQ_STORE_UNIT_SIZE))
            mapped.flushed_position = mapped.wrote_position
        if cq_offset != 0:
            current = mapped.file_from_offset + mapped.wrote_position
            if expect < current:
                return True
        self.max_physic_offset = offset + size
        return mapped.append(_UNIT.pack(offset, size, tags_code))

    def put_positions(self, units):
        """:meth:`put_position` of each ``(offset, size, tags_code, cq_offset)`` of ``units`` in
        order; a run of units that continues the written units exactly (logical offsets one
        after another, commit-log ends growing, in the current file) is one append (with
        the C speedups written into the file by ``put_unit_run``)."""
        i, count = 0, len(units)
        while i < count:
            files = self.queue.files
            if put_unit_run is not None and files:
                mapped = files[-1]
                j, end_physic = put_unit_run(mapped.mm, mapped.wrote_position,
                                             mapped.file_from_offset, units, i,
                                             self.max_physic_offset)
                if j > i:
                    mapped.wrote_position += (j - i) * CQ_STORE_UNIT_SIZE
                    self.max_physic_offset = end_physic
                    i = j
                    continue
            offset, size, _, cq_offset = units[i]
            mapped = self.queue.last_file
            if (mapped is None or mapped.wrote_position == 0 or mapped.is_full
                    or offset + size <= self.max_physic_offset
                    or mapped.file_from_offset + mapped.wrote_position
                    != cq_offset * CQ_STORE_UNIT_SIZE):
                self.put_position(*units[i])
                i += 1
                continue
            stop = min(count, i + mapped.remaining // CQ_STORE_UNIT_SIZE)
            end_physic = offset + size
            j = i + 1
            while j < stop:
                offset, size, _, next_cq_offset = units[j]
                if next_cq_offset != cq_offset + j - i or offset + size <= end_physic:
                    break
                end_physic = offset + size
                j += 1
            mapped.append(encode_units(units[i:j]))
            self.max_physic_offset = end_physic
            i = j

    def put_packed_units(self, cq_offset, data):
        """:meth:`put_positions` of units packed as the file holds them (``data``, as the C
        dispatch gathers them), logical offsets one after another from ``cq_offset``, the
        commit-log ends growing: one copy when they continue the written units exactly in
        the current file, else unit by unit."""
        mapped = self.queue.last_file
        expect = cq_offset * CQ_STORE_UNIT_SIZE
        first_offset, first_size, _ = _UNIT.unpack_from(data, 0)
        if (mapped is not None and 0 < mapped.wrote_position
                and mapped.file_from_offset + mapped.wrote_position == expect
                and first_offset + first_size > self.max_physic_offset
                and mapped.append(data)):
            last_offset, last_size, _ = _UNIT.unpack_from(data, len(data) - CQ_STORE_UNIT_SIZE)
            self.max_physic_offset = last_offset + last_size
            return
        self.put_positions([(offset, size, tags_code, cq_offset + i)
                            for i, (offset, size, tags_code) in enumerate(_UNIT.iter_unpack(data))])

    # -- reading

    def get_index_buffer(self, index, max_size=None):
        """``getIndexBuffer``: the written units from logical offset ``index`` to the end of its
        file (at most ``max_size`` bytes of them: they are copied out of the mapping), or None
        when that offset is below the minimum or not there."""
        position = index * CQ_STORE_UNIT_SIZE
        if position < self.min_logic_offset:
            return None
        mapped = self.queue.find_mapped_file_by_offset(position)
        if mapped is None:
            return None
        return mapped.read_from(position % self.file_size, max_size)

    def unit(self, index):
        """``(commit-log offset, size, tags code)`` at logical offset ``index``, or None."""
        data = self.get_index_buffer(index, CQ_STORE_UNIT_SIZE)
        if not data or len(data) < CQ_STORE_UNIT_SIZE:
            return None
        return _UNIT.unpack_from(data)

    def units_from(self, index, count):
        """Up to ``count`` units ``(commit-log offset, size, tags code)`` from logical offset
        ``index`` to the end of its file, or None when that offset is not there."""
        data = self.get_index_buffer(index, max(count, 0) * CQ_STORE_UNIT_SIZE)
        if data is None:
            return None
        return list(_UNIT.iter_unpack(data[:len(data) - len(data) % CQ_STORE_UNIT_SIZE]))

    def _file_by_time(self, timestamp, store_time):
        """The first file whose last message was stored at or after ``timestamp``, else the
        last file. (Java's ``getMappedFileByTime`` compares file modification times, which
        track store times on a live broker; store times also hold for copied directories.)"""
        for mapped in self.queue.files:
            if mapped.wrote_position >= CQ_STORE_UNIT_SIZE:
                offset, size, _ = _UNIT.unpack_from(
                    mapped.mm, mapped.wrote_position - CQ_STORE_UNIT_SIZE)
                if store_time(offset, size) >= timestamp:
                    return mapped
        return self.queue.last_file

    def offset_by_time(self, timestamp, store_time, min_physic_offset):
        """``getOffsetInQueueByTime`` (0 when nothing fits)."""
        mapped = self._file_by_time(timestamp, store_time)
        if mapped is None:
            return 0
        data = mapped.read_from(0)
        if not data:
            return 0
        units = [(o, s) for o, s, _ in _UNIT.iter_unpack(data[:len(data) - len(data) % 20])]
        low = max(self.min_logic_offset - mapped.file_from_offset, 0) // CQ_STORE_UNIT_SIZE
        found = search_offset_by_time(units, low, timestamp, store_time, min_physic_offset)
        if found is None or found < 0:
            return 0 if found is None else mapped.file_from_offset // CQ_STORE_UNIT_SIZE
        return (mapped.file_from_offset + found * CQ_STORE_UNIT_SIZE) // CQ_STORE_UNIT_SIZE

    def destroy(self):
        self.max_physic_offset = -1
        self.min_logic_offset = 0
        self.queue.destroy()

    def close(self):
        self.queue.close()
