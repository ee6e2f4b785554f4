"""Index files: a hash index from ``topic#key`` to commit-log offsets (Java ``IndexHeader``, ``IndexFile``).

Layout: a 40-byte header, ``hash_slot_num`` int32 slots (the newest entry number of
each slot, 0 = empty) and ``index_num`` 20-byte entries chained through
``prev_index``. :data:`INDEX_HEADER` and :data:`INDEX_ENTRY` are the specification;
:class:`IndexFile` reads and writes a whole file held in a buffer (``bytearray`` or
``mmap``) exactly as ``IndexFile.putKey`` / ``selectPhyOffset`` do.
"""

import struct
from typing import NamedTuple

import construct as cs

from rmqproto.codec.construct_util import build_or_raise, parse_or_raise
from rmqproto.codec.javalang import java_abs_int, java_string_hash
from rmqproto.codec.native import speedups
from rmqproto.errors import CodecError, TruncatedError

__all__ = [
    "INDEX_HEADER_SIZE", "HASH_SLOT_SIZE", "INDEX_SIZE", "DEFAULT_HASH_SLOT_NUM",
    "DEFAULT_INDEX_NUM", "INDEX_HEADER", "INDEX_ENTRY", "IndexHeader", "IndexEntry",
    "encode_header", "decode_header", "encode_entry", "decode_entry", "build_key",
    "index_key_hash", "topic_prefix_hash", "slot_position", "entry_position", "index_file_size",
    "IndexFile", "PackedEntries",
]

INDEX_HEADER_SIZE = 40
HASH_SLOT_SIZE = 4
INDEX_SIZE = 20
#: ``maxHashSlotNum`` / ``maxIndexNum`` defaults.
DEFAULT_HASH_SLOT_NUM = 5000000
DEFAULT_INDEX_NUM = 5000000 * 4
_INT_MAX = 0x7FFFFFFF
_INT_MIN = -0x80000000

INDEX_HEADER = cs.Struct(
    "begin_timestamp" / cs.Int64sb,
    "end_timestamp" / cs.Int64sb,
    "begin_phy_offset" / cs.Int64sb,
    "end_phy_offset" / cs.Int64sb,
    "hash_slot_count" / cs.Int32sb,
    "index_count" / cs.Int32sb,
)

INDEX_ENTRY = cs.Struct(
    "key_hash" / cs.Int32sb,
    "phy_offset" / cs.Int64sb,
    "time_diff" / cs.Int32sb,  # seconds since begin_timestamp
    "prev_index" / cs.Int32sb,  # previous entry of the same slot, 0 = none
)

_HEADER = struct.Struct(">qqqqii")
_ENTRY = struct.Struct(">iqii")
_SLOT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
#: Where each header field sits (the order of :data:`INDEX_HEADER`).
_BEGIN_TIMESTAMP_POS, _END_TIMESTAMP_POS, _BEGIN_PHY_OFFSET_POS, _END_PHY_OFFSET_POS = 0, 8, 16, 24


class PackedEntries:
    """``(hash_code, phy_offset, store_timestamp)`` entries packed back to back as
    :attr:`PACKED_ENTRY` (big-endian int32, int64, int64), as the C dispatch makes them: a
    sequence :meth:`IndexFile.put_hashes` takes like a list of tuples, with no object an
    entry until one is read."""

    __slots__ = ("data",)
    #: One packed entry.
    PACKED_ENTRY = struct.Struct(">iqq")

    def __init__(self, data):
        self.data = data

    def __len__(self):
        return len(self.data) // self.PACKED_ENTRY.size

    def __getitem__(self, i):
        if not 0 <= i < len(self):
            raise IndexError("entry %r of %d" % (i, len(self)))
        return self.PACKED_ENTRY.unpack_from(self.data, i * self.PACKED_ENTRY.size)


class IndexHeader(NamedTuple):
    begin_timestamp: int = 0
    end_timestamp: int = 0
    begin_phy_offset: int = 0
    end_phy_offset: int = 0
    hash_slot_count: int = 0
    index_count: int = 0


class IndexEntry(NamedTuple):
    key_hash: int
    phy_offset: int
    time_diff: int
    prev_index: int


def _pack(fmt, value, what):
    try:
        return fmt.pack(*value)
    except struct.error as exc:
        raise CodecError("%s out of range: %s" % (what, exc)) from None


def _unpack(fmt, buffer, offset, what):
    if offset < 0 or len(buffer) - offset < fmt.size:
        raise TruncatedError("no complete %s at %d" % (what, offset))
    return fmt.unpack_from(buffer, offset)


def encode_header(header):
    return _pack(_HEADER, header, "index header")


def decode_header(buffer, offset=0):
    return IndexHeader._make(_unpack(_HEADER, buffer, offset, "index header"))


def encode_entry(entry):
    return _pack(_ENTRY, entry, "index entry")


def decode_entry(buffer, offset=0):
    return IndexEntry._make(_unpack(_ENTRY, buffer, offset, "index entry"))


def parse_header_declared(data):
    p = parse_or_raise(INDEX_HEADER, data)
    return IndexHeader(*(p[name] for name in IndexHeader._fields))


def build_header_declared(header):
    return build_or_raise(INDEX_HEADER, header._asdict())


def parse_entry_declared(data):
    p = parse_or_raise(INDEX_ENTRY, data)
    return IndexEntry(*(p[name] for name in IndexEntry._fields))


def build_entry_declared(entry):
    return build_or_raise(INDEX_ENTRY, entry._asdict())


def build_key(topic, key):
    """``IndexService.buildKey``: ``topic#key``."""
    return topic + "#" + key


def index_key_hash(key):
    """``indexKeyHashMethod``: ``Math.abs(key.hashCode())``, and 0 for ``Integer.MIN_VALUE``
    (whose ``Math.abs`` stays negative)."""
    return max(java_abs_int(java_string_hash(key)), 0)


def topic_prefix_hash(topic):
    """``(topic + "#").hashCode()``: ``java_string_hash_continued`` of it and a key is the
    hash of the key built with :func:`build_key`, without building it."""
    return java_string_hash(topic + "#")


def slot_position(key_hash, hash_slot_num=DEFAULT_HASH_SLOT_NUM):
    """Byte position of the slot of ``key_hash``."""
    return INDEX_HEADER_SIZE + (key_hash % hash_slot_num) * HASH_SLOT_SIZE


def entry_position(index, hash_slot_num=DEFAULT_HASH_SLOT_NUM):
    """Byte position of entry number ``index`` (numbers start at 1)."""
    return INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE + index * INDEX_SIZE


def index_file_size(hash_slot_num=DEFAULT_HASH_SLOT_NUM, index_num=DEFAULT_INDEX_NUM):
    """Size of an index file (420 000 040 bytes with the defaults)."""
    return INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE + index_num * INDEX_SIZE


class IndexFile:
    """A whole index file in a writable buffer (``bytearray``, ``mmap``): ``IndexFile``.

    A fresh file is all zeros; like Java's constructor, ``end_phy_offset`` /
    ``end_timestamp`` of the previous file seed the begin/end header fields. The header
    fields are kept as attributes; each put writes the header back (Java's ``IndexHeader``
    setters write the fields they change into the mapped buffer), so the buffer always
    holds a complete header.
    """

    def __init__(self, buffer, hash_slot_num=DEFAULT_HASH_SLOT_NUM, index_num=DEFAULT_INDEX_NUM,
                 end_phy_offset=0, end_timestamp=0):
        if len(buffer) < index_file_size(hash_slot_num, index_num):
            raise TruncatedError("index buffer of %d bytes is smaller than %d" % (
                len(buffer), index_file_size(hash_slot_num, index_num)))
        self.buffer = buffer
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self._entries_at = entry_position(0, hash_slot_num)
        (self.begin_timestamp, self.end_timestamp, self.begin_phy_offset, self.end_phy_offset,
         self.hash_slot_count, index_count) = decode_header(buffer)
        # IndexHeader.load(): a count of 0 (fresh file) means "next entry is number 1".
        self.index_count = max(index_count, 1)
        if end_phy_offset > 0:
            self._set_phy_offsets(end_phy_offset, end_phy_offset)
        if end_timestamp > 0:
            self._set_timestamps(end_timestamp, end_timestamp)

    @property
    def header(self):
        """The header as :class:`IndexHeader` (``index_count`` at least 1, as Java loads it)."""
        return IndexHeader(self.begin_timestamp, self.end_timestamp, self.begin_phy_offset,
                           self.end_phy_offset, self.hash_slot_count, self.index_count)

    def _set_phy_offsets(self, begin, end):
        self.begin_phy_offset, self.end_phy_offset = begin, end
        _LONG.pack_into(self.buffer, _BEGIN_PHY_OFFSET_POS, begin)
        _LONG.pack_into(self.buffer, _END_PHY_OFFSET_POS, end)

    def _set_timestamps(self, begin, end):
        self.begin_timestamp, self.end_timestamp = begin, end
        _LONG.pack_into(self.buffer, _BEGIN_TIMESTAMP_POS, begin)
        _LONG.pack_into(self.buffer, _END_TIMESTAMP_POS, end)

    @property
    def is_write_full(self):
        return self.index_count >= self.index_num

    def entry(self, index):
        return decode_entry(self.buffer, entry_position(index, self.hash_slot_num))

    def slot(self, key_hash):
        return _SLOT.unpack_from(self.buffer, slot_position(key_hash, self.hash_slot_num))[0]

    def put_key(self, key, phy_offset, store_timestamp):
        """``IndexFile.putKey``: add ``key``; False when the file is full. ``CodecError``
        (nothing written) when ``phy_offset`` or ``store_timestamp`` is not a Java long."""
        return self.put_hashes(((java_string_hash(key), phy_offset, store_timestamp),)) == 1

    def put_hashes(self, entries, start=0):
        """:meth:`put_key` of each ``(hash_code, phy_offset, store_timestamp)`` of ``entries``
        (``hash_code``: the key's ``String.hashCode``; a sequence, or :class:`PackedEntries`)
        from ``start`` on, until the file is full; returns the index of the first entry not
        put.

        The header is written once, after the last put: the same bytes as a header written
        back after each put (the fields Java's setters leave alone keep theirs). An entry
        out of range raises ``CodecError`` with the entries before it put. With the C
        speedups the loop runs in C, which leaves any entry it cannot put to this one."""
        i, first = start, self.index_count
        count, slot_count = first, self.hash_slot_count
        begin_timestamp, begin_phy_offset = self.begin_timestamp, self.begin_phy_offset
        given = entries.data if isinstance(entries, PackedEntries) else entries
        if speedups is not None and isinstance(given, (list, tuple, bytes)):
            i, count, slot_count, begin_timestamp, begin_phy_offset = speedups.put_index_hashes(
                self.buffer, given, i, self.index_num, self.hash_slot_num, count, slot_count,
                begin_timestamp, begin_phy_offset)
            if i == len(entries) or count >= self.index_num:  # the usual: all put in C
                self._set_header(entries, i, first, count, slot_count, begin_timestamp,
                                 begin_phy_offset)
                return i
        return self._put_hashes(entries, i, first, count, slot_count, begin_timestamp,
                                begin_phy_offset)

    def _put_hashes(self, entries, i, first, count, slot_count, begin_timestamp,
                    begin_phy_offset):
        """:meth:`put_hashes`' loop in Python, from entry ``i`` with the header's fields as
        they stand (``first``: the count before this put)."""
        index_num, slot_num = self.index_num, self.hash_slot_num
        buffer = self.buffer
        entries_at = self._entries_at
        pack_entry, pack_slot, unpack_slot = _ENTRY.pack_into, _SLOT.pack_into, _SLOT.unpack_from
        end = len(entries)
        try:
            while i < end and count < index_num:
                key_hash, phy_offset, timestamp = entries[i]
                if not (_LONG_MIN <= phy_offset <= _LONG_MAX
                        and _LONG_MIN <= timestamp <= _LONG_MAX):
                    raise CodecError("index entry out of range: offset %r, timestamp %r"
                                     % (phy_offset, timestamp))
                if key_hash < 0:  # Math.abs, and 0 for Integer.MIN_VALUE (see index_key_hash)
                    key_hash = -key_hash if key_hash != _INT_MIN else 0
                slot_pos = INDEX_HEADER_SIZE + (key_hash % slot_num) * HASH_SLOT_SIZE
                (slot_value,) = unpack_slot(buffer, slot_pos)
                if slot_value <= 0 or slot_value > count:
                    slot_value = 0
                    slot_count += 1
                if begin_timestamp <= 0:
                    time_diff = 0
                else:
                    elapsed = timestamp - begin_timestamp
                    time_diff = min(elapsed // 1000, _INT_MAX) if elapsed >= 0 else 0
                pack_entry(buffer, entries_at + count * INDEX_SIZE,
                           key_hash, phy_offset, time_diff, slot_value)
                pack_slot(buffer, slot_pos, count)
                if count <= 1:
                    begin_phy_offset, begin_timestamp = phy_offset, timestamp
                count += 1
                i += 1
        finally:
            self._set_header(entries, i, first, count, slot_count, begin_timestamp,
                             begin_phy_offset)
        return i

    def _set_header(self, entries, i, first, count, slot_count, begin_timestamp,
                    begin_phy_offset):
        """After the puts up to entry ``i`` (none when ``count`` is still ``first``): the
        header's fields, and its bytes written once."""
        if count != first:
            self.begin_timestamp, self.begin_phy_offset = begin_timestamp, begin_phy_offset
            self.end_phy_offset, self.end_timestamp = entries[i - 1][1:]
            self.hash_slot_count, self.index_count = slot_count, count
            _HEADER.pack_into(self.buffer, 0, begin_timestamp, self.end_timestamp,
                              begin_phy_offset, self.end_phy_offset, slot_count, count)

    def select_phy_offsets(self, key, max_num=64, begin=0, end=(1 << 63) - 1):
        """``IndexFile.selectPhyOffset``: offsets of entries for ``key`` stored in [begin, end] ms,
        newest first."""
        count = self.index_count
        key_hash = index_key_hash(key)
        found = []
        current = self.slot(key_hash)
        if current <= 0 or current > count or count <= 1:
            return found
        while len(found) < max_num:
            read_hash, phy_offset, time_diff, prev = self.entry(current)
            if time_diff < 0:
                break
            time_read = self.begin_timestamp + time_diff * 1000
            if read_hash == key_hash and begin <= time_read <= end:
                found.append(phy_offset)
            if prev <= 0 or prev > count or prev == current or time_read < begin:
                break
            current = prev
        return found
