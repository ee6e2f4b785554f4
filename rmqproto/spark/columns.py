"""Stored message records straight to column buffers, the rows of both Spark readers.

A pull's answer body (``MessageDecoder.decodes``) and a commit-log region are both runs
of stored records in one layout, and a DLedger data segment is a run of entries each
carrying one at ``entry + 48`` (``DLedgerCommitLog``). :func:`record_columns` walks such a
buffer and returns, for the records it took, one buffer per Arrow buffer of the rows'
columns (:data:`BUFFERS`): little-endian ints, strings and binaries as Arrow's offsets
and data, validity bitmaps, so that :mod:`rmqproto.spark.rows` builds a record batch with
``pyarrow.Array.from_buffers`` and no Python object a row.

:func:`python_record_columns` is the reference, written over
:func:`rmqproto.codec.message.decode_record`; the C ``record_columns``
(``rmqproto/codec/speedups/columns.c``) takes the usual records (version-1 magic code,
IPv4 hosts, an uncompressed body, text that is UTF-8) and stops
before any other with ``"unusual"``, which :func:`record_columns` then hands to the
reference, one record.
"""

import struct
from collections import namedtuple

from rmqproto.codec import dledger
from rmqproto.codec.javalang import masked_crc32
from rmqproto.codec.message import (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2, PROPERTY_KEYS,
                                    PROPERTY_TAGS, decode_record, iter_records, uncompressed_body)
from rmqproto.codec.native import speedups
from rmqproto.errors import CodecError

__all__ = ["BUFFERS", "Columns", "record_columns", "python_record_columns"]

#: The buffers of :class:`Columns`, in order; ``*_offsets`` are int32, one more than the
#: rows (``properties_offsets``: entries of the map), ``*_valid`` bitmaps (least
#: significant bit first), ``crc_ok`` a bitmap (empty unless the CRC was checked).
BUFFERS = ("topic_offsets", "topic_data", "queue_id", "queue_offset", "commit_log_offset",
           "msg_id_offsets", "msg_id_data", "keys_valid", "keys_offsets", "keys_data",
           "tags_valid", "tags_offsets", "tags_data", "body_offsets", "body_data",
           "born_timestamp", "store_timestamp", "born_host_offsets", "born_host_data",
           "store_host_offsets", "store_host_data", "reconsume_times", "properties_offsets",
           "name_offsets", "name_data", "value_offsets", "value_data", "sys_flag",
           "store_size", "body_crc", "crc_ok")

#: What one call took: ``rows`` records as :data:`BUFFERS` (``bytes``), the walk's
#: ``position`` after them, and why it stopped: None (``end`` or ``max_rows`` reached), an
#: end-of-file ``"blank"``, ``"empty"`` (never-written space, the buffer's end),
#: ``"corrupt"`` (``error`` says why) or, from C only, ``"unusual"``.
Columns = namedtuple("Columns", ("rows", "buffers", "position", "stop", "error"))

_INT32, _INT64 = struct.Struct("<i"), struct.Struct("<q")
_MASK64 = (1 << 64) - 1


def _micros(millis):
    """Milliseconds as int64 microseconds, wrapping as C's arithmetic does."""
    return ((millis * 1000 + (1 << 63)) & _MASK64) - (1 << 63)


def _utf8(text):
    """The UTF-8 of decoded text: bytes that were not UTF-8 (kept by the decoder as
    surrogate escapes) become U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace").encode()


class _Builder:
    """The buffers of the rows taken so far."""

    def __init__(self, check_crc):
        self.check_crc = check_crc
        self.rows = 0
        self.data = {name: bytearray() for name in BUFFERS}
        self.strings = {name: [0] for name in BUFFERS if name.endswith("_offsets")}
        self.bits = {"keys_valid": [], "tags_valid": [], "crc_ok": []}

    def _string(self, name, value):
        self.data[name + "_data"] += value
        offsets = self.strings[name + "_offsets"]
        offsets.append(offsets[-1] + len(value))

    def _optional(self, name, value):
        self.bits[name + "_valid"].append(value is not None)
        self._string(name, b"" if value is None else value)

    def add(self, record):
        data = self.data
        properties = {}
        for name, value in record.properties.items():
            properties[_utf8(name)] = _utf8(value)
        self._string("topic", _utf8(record.topic))
        data["queue_id"] += _INT32.pack(record.queue_id)
        data["queue_offset"] += _INT64.pack(record.queue_offset)
        data["commit_log_offset"] += _INT64.pack(record.commit_log_offset)
        self._string("msg_id", record.msg_id.encode())
        self._optional("keys", properties.get(PROPERTY_KEYS.encode()))
        self._optional("tags", properties.get(PROPERTY_TAGS.encode()))
        try:
            body = uncompressed_body(record)
        except CodecError:  # as stored: its CRC tells
            body = record.body
        self._string("body", body)
        data["born_timestamp"] += _INT64.pack(_micros(record.born_timestamp))
        data["store_timestamp"] += _INT64.pack(_micros(record.store_timestamp))
        self._string("born_host", b"%s:%d" % (record.born_host[0].encode(), record.born_host[1]))
        self._string("store_host", b"%s:%d" % (record.store_host[0].encode(),
                                                record.store_host[1]))
        data["reconsume_times"] += _INT32.pack(record.reconsume_times)
        for name, value in properties.items():
            self._string("name", name)
            self._string("value", value)
        entries = self.strings["properties_offsets"]
        entries.append(entries[-1] + len(properties))
        data["sys_flag"] += _INT32.pack(record.sys_flag)
        data["store_size"] += _INT32.pack(record.store_size)
        data["body_crc"] += _INT32.pack(record.body_crc)
        if self.check_crc:
            self.bits["crc_ok"].append(masked_crc32(record.body) == record.body_crc)
        self.rows += 1

    def buffers(self):
        data = self.data
        for name, offsets in self.strings.items():
            data[name] = struct.pack("<%di" % len(offsets), *offsets)
        for name, bits in self.bits.items():
            data[name] = bytes(sum(bit << i for i, bit in enumerate(bits[start:start + 8]))
                               for start in range(0, len(bits), 8))
        return tuple(bytes(data[name]) for name in BUFFERS)


def _commitlog(buffer, position, start, end, max_rows, builder):
    scan = iter_records(buffer, position)
    while scan.position < end and builder.rows < max_rows:
        at = scan.position
        record = next(iter(scan), None)
        if record is None:
            return scan.position, scan.stop, scan.error
        if at >= start:
            builder.add(record)
    return scan.position, None, None


def _dledger(buffer, position, start, end, max_rows, builder):
    while position < end and builder.rows < max_rows:
        if len(buffer) - position < dledger.BODY_OFFSET:
            return position, "empty", None
        if dledger.is_blank(buffer, position):
            return position, "blank", None
        if not any(buffer[position:position + 8]):
            return position, "empty", None
        header = dledger.ENTRY_HEADER.unpack(buffer, position)
        if header.magic != dledger.MAGIC_1 or header.size < dledger.BODY_OFFSET:
            return position, "corrupt", CodecError("DLedger entry magic %d, size %d at %d"
                                                   % (header.magic, header.size, position))
        if position >= start:
            try:
                body = dledger.decode_entry(buffer, position).body
                if len(body) >= 8 and int.from_bytes(body[4:8], "big", signed=True) in (
                        MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2):
                    builder.add(decode_record(body))
            except CodecError as exc:
                return position, "corrupt", exc.with_traceback(None)
        position += header.size
    return position, None, None


def python_record_columns(buffer, position, start, end, is_dledger, check_crc, max_rows):
    """The :class:`Columns` of the records a walk of ``buffer`` from ``position`` (a record
    or, with ``is_dledger``, an entry boundary) finds starting in ``[start, end)``, at most
    ``max_rows``. The walk stops where the broker's recovery would (a blank, never-written
    space, a record or entry that does not parse: ``error``); with ``check_crc`` the
    ``crc_ok`` bitmap says which bodies match their BODYCRC."""
    builder = _Builder(check_crc)
    walk = _dledger if is_dledger else _commitlog
    position, stop, error = walk(buffer, position, start, end, max_rows, builder)
    return Columns(builder.rows, builder.buffers(), position, stop,
                   None if error is None else str(error))


def record_columns(buffer, position, start, end, is_dledger=False, check_crc=False,
                   batch_rows=4096):
    """The walk of :func:`python_record_columns` over all of ``[start, end)``, in C where
    the records are usual ones: yields :class:`Columns` of at most ``batch_rows`` rows
    (some may have none), the last one's ``stop`` and ``error`` saying why the walk ended."""
    native = speedups.record_columns if speedups is not None else None
    while True:
        if native is None:
            taken = python_record_columns(buffer, position, start, end, is_dledger, check_crc,
                                          batch_rows)
        else:
            taken = Columns(*native(buffer, position, start, end, is_dledger, check_crc,
                                    batch_rows))
            if taken.stop == "unusual":  # the reference takes that record (or entry) alone
                if taken.rows:
                    yield taken._replace(stop=None)
                taken = python_record_columns(buffer, taken.position, start,
                                              min(end, taken.position + 1), is_dledger,
                                              check_crc, 1)
        yield taken
        if taken.stop is not None or taken.position >= end:
            return
        position = taken.position
