"""Read the messages of a store directory copied off a broker, a region of a segment at a time.

The pure part of the ``rocketmq-store`` Spark format (no Spark here): find the segment
files of a store (a classic commit log, ``<root>/commitlog``, or a DLedger data directory,
``<root>/dledger-<id>/data``, whose entries carry commit-log records as in
``DLedgerCommitLog``), cut them into regions, and turn the records starting in one region
into Arrow record batches (:mod:`rmqproto.spark.columns`, :mod:`rmqproto.spark.rows`); a
walk goes over a segment the way the broker's recovery does and stops where recovery would
truncate (an end-of-file blank, never-written space, a record that does not parse).
"""

import mmap
import os
from dataclasses import dataclass

from rmqproto.codec import dledger
from rmqproto.codec.storefile import file_name_to_offset
from rmqproto.errors import CodecError
from rmqproto.spark.columns import record_columns
from rmqproto.spark.rows import STORE_COLUMNS, arrow_schema, columns_batch

__all__ = ["Region", "STORE_COLUMNS", "find_segments", "plan_regions", "region_batches",
           "DEFAULT_REGION_BYTES"]

#: Spark's ``spark.sql.files.maxPartitionBytes`` default: the largest region of one partition.
DEFAULT_REGION_BYTES = 128 * 1024 * 1024


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


def region_batches(region, broker_name=None, batch_rows=4096):
    """The rows of the records starting in ``region``, in store order, as
    ``pyarrow.RecordBatch`` objects of at most ``batch_rows`` rows (:data:`STORE_COLUMNS`,
    with the CRC check). The walk starts at the segment's first byte (the records before
    the region are only hopped over, their lengths checked) and stops where the broker's
    recovery would truncate."""
    schema = arrow_schema()
    with open(region.path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            view = memoryview(mapped)
            try:
                for columns in record_columns(view, 0, region.start, region.end,
                                              region.kind == "dledger", True, batch_rows):
                    if columns.rows:
                        yield columns_batch(columns, schema, broker_name)
            finally:
                view.release()
