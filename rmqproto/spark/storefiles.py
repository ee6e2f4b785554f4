"""Read the messages of a store directory copied off a broker, a region of a segment at a time.

The pure part of the ``rocketmq-store`` Spark format (no Spark here): find the segment
files of a store (a classic commit log, ``<root>/commitlog``, or a DLedger data directory,
``<root>/dledger-<id>/data``, whose entries carry commit-log records as in
``DLedgerCommitLog``), cut them into regions, and turn the records starting in one region
into Arrow record batches. Records are decoded by :func:`rmqproto.codec.message.decode_record`;
a scan walks a segment the way the broker's recovery does and stops where recovery would
truncate (an end-of-file blank, never-written space, a record that does not parse).
"""

import mmap
import os
from dataclasses import dataclass
from datetime import datetime, timezone

from rmqproto.codec import dledger
from rmqproto.codec.javalang import masked_crc32
from rmqproto.codec.message import (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2, PROPERTY_KEYS,
                                    PROPERTY_TAGS, decode_record, iter_dispatch_fields,
                                    iter_records, uncompressed_body)
from rmqproto.codec.storefile import file_name_to_offset
from rmqproto.errors import CodecError

__all__ = ["Region", "COLUMNS", "find_segments", "plan_regions", "read_region", "region_batches",
           "DEFAULT_REGION_BYTES"]

#: Spark's ``spark.sql.files.maxPartitionBytes`` default: the largest region of one partition.
DEFAULT_REGION_BYTES = 128 * 1024 * 1024

#: The columns of a row, in order, with their Spark SQL types.
COLUMNS = (("topic", "string"), ("brokerName", "string"), ("queueId", "int"),
           ("queueOffset", "bigint"), ("commitLogOffset", "bigint"), ("msgId", "string"),
           ("keys", "string"), ("tags", "string"), ("body", "binary"),
           ("bornTimestamp", "timestamp"), ("storeTimestamp", "timestamp"),
           ("bornHost", "string"), ("storeHost", "string"), ("reconsumeTimes", "int"),
           ("properties", "map<string,string>"), ("sysFlag", "int"), ("storeSize", "int"),
           ("bodyCrc", "int"), ("crcOk", "boolean"))


@dataclass(frozen=True)
class Region:
    """Bytes ``[start, end)`` of segment ``path``; its rows are the records starting there."""

    path: str
    kind: str  #: ``"commitlog"`` or ``"dledger"``
    start: int
    end: int


def _segments_in(directory):
    """The segment files of ``directory`` (20-digit offset names), in offset order."""
    names = []
    for name in os.listdir(directory):
        try:
            names.append((file_name_to_offset(name), name))
        except CodecError:
            continue
    return [os.path.join(directory, name) for _, name in sorted(names)]


def _sniff(path):
    """``"dledger"`` or ``"commitlog"``: what the first entry of the segment at ``path`` is."""
    with open(path, "rb") as fh:
        head = fh.read(8)
    if len(head) == 8 and int.from_bytes(head[:4], "big", signed=True) == dledger.MAGIC_1:
        return "dledger"
    return "commitlog"


def find_segments(path, layout="auto"):
    """``[(segment path, kind)]`` of the store at ``path``: a store root (its ``commitlog/``
    or its one ``dledger-<selfId>/data/``, where a 4.9 DLedger broker keeps its log), or a
    directory of segments; ``layout`` (``commitlog``, ``dledger``) says which to read when
    the root holds both, and forces the kind of a directory of segments."""
    if layout not in ("auto", "commitlog", "dledger"):
        raise ValueError("layout must be auto, commitlog or dledger, not %r" % (layout,))
    if not os.path.isdir(path):
        raise ValueError("no store directory at %s" % path)
    found = {}
    commitlog = os.path.join(path, "commitlog")
    if os.path.isdir(commitlog) and _segments_in(commitlog):
        found["commitlog"] = commitlog
    data = [directory for directory in sorted(os.path.join(path, name, "data")
                                              for name in os.listdir(path)
                                              if name.startswith("dledger-"))
            if os.path.isdir(directory) and _segments_in(directory)]
    if len(data) > 1:
        raise ValueError("%s holds several DLedger logs (%s): name one" % (path, ", ".join(data)))
    if data:
        found["dledger"] = data[0]
    if layout == "auto" and len(found) > 1:
        raise ValueError("%s holds a commit log and a DLedger log: set the layout option"
                         " (commitlog or dledger)" % path)
    if layout == "auto" and found:
        (layout, directory), = found.items()
    elif layout != "dledger" and not found and os.path.isdir(commitlog):
        return []  # a store root whose commit log is still empty (a new slave)
    else:
        directory = found.get(layout, path)
    segments = _segments_in(directory)
    if not segments:
        raise ValueError("no commit-log or DLedger segment files in %s" % directory)
    if layout == "auto":
        layout = _sniff(segments[0])
    return [(segment, layout) for segment in segments]


def plan_regions(segments, region_bytes=DEFAULT_REGION_BYTES):
    """Cut each segment into regions of at most ``region_bytes`` (empty segments skipped)."""
    if region_bytes <= 0:
        raise ValueError("region size must be positive, not %r" % (region_bytes,))
    regions = []
    for path, kind in segments:
        size = os.path.getsize(path)
        regions.extend(Region(path, kind, start, min(start + region_bytes, size))
                       for start in range(0, size, region_bytes))
    return regions


def _commitlog_records(buffer, start, end):
    """The records of a commit-log segment starting in ``[start, end)``; the records before
    ``start`` are walked as the reput walks them (:meth:`DispatchScan.take`, in C with the
    speedups, no body copied) to find the first boundary at or after it."""
    walk = iter_dispatch_fields(buffer)
    while walk.position < start and walk.stop is None:
        walk.take(65536, limit=start)
    if walk.stop is not None or walk.position >= end:
        return
    scan = iter_records(buffer, walk.position)
    for record in scan:
        yield record
        if scan.position >= end:
            return


def _is_record(body):
    return len(body) >= 8 and int.from_bytes(body[4:8], "big", signed=True) in (
        MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2)


def _dledger_records(buffer, start, end):
    """The commit-log records in the DLedger entries starting in ``[start, end)`` of a data
    segment; a walk stops at a blank, never-written space or an entry that does not parse."""
    position = 0
    while position < end and len(buffer) - position >= dledger.BODY_OFFSET:
        if dledger.is_blank(buffer, position) or not any(buffer[position:position + 8]):
            return
        try:
            header = dledger.ENTRY_HEADER.unpack(buffer, position)
            if header.magic != dledger.MAGIC_1 or header.size < dledger.BODY_OFFSET:
                return
            if position >= start:
                body = dledger.decode_entry(buffer, position).body
                if _is_record(body):
                    yield decode_record(body)
        except CodecError:
            return
        position += header.size


_READERS = {"commitlog": _commitlog_records, "dledger": _dledger_records}


def read_region(region):
    """The :class:`MessageRecord` objects starting in ``region``, in store order."""
    with open(region.path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            view = memoryview(mapped)
            try:
                yield from _READERS[region.kind](view, region.start, region.end)
            finally:
                view.release()


def _text(text):
    """``text`` fit for Arrow: bytes that were not UTF-8 (kept by the decoder as surrogate
    escapes) become U+FFFD."""
    if text is None or text.isascii():
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _host(host):
    return "%s:%d" % host


def _millis(value):
    return datetime.fromtimestamp(value / 1000.0, timezone.utc)


def _body(record):
    """The body a consumer gets: inflated when the sysFlag says ZLIB-compressed (as
    ``MessageDecoder.decode`` does); as stored when that fails, its CRC tells."""
    try:
        return uncompressed_body(record)
    except CodecError:
        return record.body


def record_row(record, broker_name=None):
    """One row (a tuple in :data:`COLUMNS` order) of ``record``."""
    properties = {_text(name): _text(value) for name, value in record.properties.items()}
    return (_text(record.topic), broker_name, record.queue_id, record.queue_offset,
            record.commit_log_offset, record.msg_id,
            properties.get(PROPERTY_KEYS), properties.get(PROPERTY_TAGS),
            _body(record), _millis(record.born_timestamp), _millis(record.store_timestamp),
            _host(record.born_host), _host(record.store_host), record.reconsume_times,
            list(properties.items()), record.sys_flag, record.store_size, record.body_crc,
            masked_crc32(record.body) == record.body_crc)


def arrow_schema(columns=COLUMNS):
    """The Arrow schema of ``columns`` (timestamps in microseconds, UTC, as Spark sends them)."""
    import pyarrow as pa
    types = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(),
             "binary": pa.binary(), "timestamp": pa.timestamp("us", tz="UTC"),
             "map<string,string>": pa.map_(pa.string(), pa.string()), "boolean": pa.bool_()}
    return pa.schema([(name, types[kind]) for name, kind in columns])


def region_batches(region, broker_name=None, batch_rows=4096):
    """The rows of ``region`` as ``pyarrow.RecordBatch`` objects of at most ``batch_rows`` rows."""
    import pyarrow as pa
    schema = arrow_schema()
    rows = []
    for record in read_region(region):
        rows.append(record_row(record, broker_name))
        if len(rows) >= batch_rows:
            yield _batch(pa, schema, rows)
            rows = []
    if rows:
        yield _batch(pa, schema, rows)


def _batch(pa, schema, rows):
    columns = list(zip(*rows))
    return pa.RecordBatch.from_arrays(
        [pa.array(column, type=field.type) for column, field in zip(columns, schema)],
        schema=schema)
