"""The fuzz targets of the C speedups' parsers (docs/speedups.md): each takes the
fuzzer's bytes, gives them to a C function that reads bytes from a peer or a disk, and
checks its answer against the function's Python twin. A difference raises
``AssertionError``, which the harness (``harness.c``) reports as a crash; so do a sanitizer
report and a crash of the C code. Run by ``tests/fuzz/run.py``."""

import socket
import struct

from rmqproto.codec import frame as F, headers as H, message as m
from rmqproto.codec.consumequeue import _UNIT
from rmqproto.codec.indexfile import PackedEntries
from rmqproto.codec.native import speedups
from rmqproto.store import dispatch, transfer
from rmqproto.store.indexservice import python_index_entries
from rmqproto.store.mappedfile import MappedFile

if speedups is None or speedups.__spec__.origin != "built-in":
    raise ImportError("the fuzz targets run in the harness, which links the speedups in")

def _outcome(fn, *args):
    """What ``fn(*args)`` returns, or the type and message of what it raises."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome compared
        return "raised", type(exc), str(exc)


def _same(ours, python, *context):
    if ours != python:
        raise AssertionError("C and Python differ on %r:\n C:      %r\n Python: %r"
                             % (context, ours, python))


def _without_speedups(module, fn, *args):
    """``fn(*args)`` with ``module.speedups`` set to None (its Python path)."""
    saved, module.speedups = module.speedups, None
    try:
        return _outcome(fn, *args)
    finally:
        module.speedups = saved


# ---------------------------------------------------------------- frames and headers

def _frames_outcome(split, data, max_frame_length):
    frames, used, error = split(data, max_frame_length)
    return frames, used, type(error), str(error)


def split_frames(data):
    """A connection's bytes split into frames (``FrameDecoder``), with a large and a small
    frame limit, from bytes and from a bytearray."""
    for max_frame_length in (16 * 1024 * 1024, 64):
        python = _frames_outcome(F.python_split_frames, data, max_frame_length)
        for given in (data, bytearray(data)):
            _same(_frames_outcome(F.split_frames, given, max_frame_length), python, data)


def _command(decode, frame):
    try:
        command = decode(frame)
    except Exception as exc:  # noqa: BLE001 - compared
        return type(exc), str(exc)
    return [(type(value), value) for value in (
        command.code, command.opaque, command.flag, command.ext_fields, command.body,
        command.remark, command.language, command.version, command.serialize_type)]


def decode_frame(data):
    """A frame without its length prefix: its header read by ``jsonheader.c``."""
    _same(_command(F.decode_frame, data), _command(F.python_decode_frame, data), data)


#: Every header class, in a fixed order (the first input byte picks one).
_HEADER_CLASSES = sorted(H.HEADER_CLASSES.values(), key=lambda cls: cls.__name__)


def _header(decode, ext_fields):
    try:
        header = decode(ext_fields)
    except Exception as exc:  # noqa: BLE001 - compared
        return type(exc), str(exc)
    return type(header), [(f.name, type(getattr(header, f.name)), getattr(header, f.name))
                          for f in type(header).all_fields]


def decode_header(data):
    """A request header from ``extFields``: the first byte picks the class, the rest is
    ``name\\0value\\0...`` (a name of one byte below 64 is the class's field of that
    number)."""
    if not data:
        return
    cls = _HEADER_CLASSES[data[0] % len(_HEADER_CLASSES)]
    wires = [f.wire for f in cls.all_fields] or ["x"]
    parts = data[1:].decode("utf-8", "surrogateescape").split("\0")
    ext_fields = {}
    for name, value in zip(parts[::2], parts[1::2]):
        if len(name) == 1 and ord(name) < 64:
            name = wires[ord(name) % len(wires)]
        ext_fields[name] = value
    _same(_header(cls._decode, ext_fields), _header(cls._python_decode, ext_fields), data)


def properties(data):
    """A message's properties string, as a send header or a stored record carries it."""
    text = data.decode("utf-8", "surrogateescape")
    python = m.python_string_to_properties(text)
    _same(list(speedups.string_to_properties(text).items()), list(python.items()), data)


# ---------------------------------------------------------------- the commit log

def _scan(scan, count):
    fields = _outcome(scan.take, count)
    if fields and fields[0] != "raised":
        fields = [f[:7] + (list(f[7].items()),) + f[8:] for f in fields]
    return fields, scan.stop, scan.position, repr(scan.error), scan.blank_size


def take_usual_records(data):
    """Commit-log bytes read by the reput's scan (``DispatchScan.take``), the body CRCs
    checked when the first byte is odd."""
    if not data:
        return
    check_crc, buffer = bool(data[0] & 1), data[1:]
    ours = _scan(m.iter_dispatch_fields(buffer, 0, check_crc), 64)
    saved, m.speedups = m.speedups, None
    try:
        python = _scan(m.iter_dispatch_fields(buffer, 0, check_crc), 64)
    finally:
        m.speedups = saved
    _same(ours, python, data)


_ROLLBACK = m.TRANSACTION_ROLLBACK_TYPE


def _python_dispatch(buffer, end, end_phy_offset):
    """What the Python twins make of the records of ``buffer`` up to ``end``."""
    scan = m.iter_dispatch_fields(buffer, 0)
    records = iter(scan)
    fields = []
    while scan.position < end:
        record = next(records, None)
        if record is None:
            raise AssertionError("C dispatched a record Python refuses (%s)" % scan.error)
        fields.append(record)
    requests = dispatch.python_requests_of_fields(fields, {})
    runs, store_timestamp = dispatch.python_consume_queue_runs(requests)
    entries, rolls = python_index_entries(requests, lambda: end_phy_offset, _ROLLBACK)
    return runs, [tuple(entry) for entry in entries], rolls, store_timestamp


def dispatch_usual_records(data):
    """Commit-log bytes dispatched straight into consume-queue units and index entries
    (``dispatch_usual_records``), against the scan, requests, runs and index entries of
    Python; the first byte sets the newest index file's end."""
    if not data:
        return
    end_phy_offset, buffer = data[0] * 64, data[1:]
    end, runs, entries, rolls, store_timestamp = speedups.dispatch_usual_records(
        buffer, 0, len(buffer), 1000, b"SCHEDULE_TOPIC_XXXX", lambda: end_phy_offset, _ROLLBACK)
    if not 0 <= end <= len(buffer):
        raise AssertionError("dispatch_usual_records ended at %d of %d" % (end, len(buffer)))
    got_runs = {(topic, queue_id): [unit + (cq_offset + i,)
                                    for i, unit in enumerate(_UNIT.iter_unpack(units))]
                for topic, queue_id, cq_offset, units in runs}
    packed = PackedEntries(entries)
    ours = got_runs, [packed[i] for i in range(len(packed))], rolls, store_timestamp
    _same(ours, _python_dispatch(buffer, end, end_phy_offset), data)


# ---------------------------------------------------------------- batches

_PROTOTYPE = m.MessageRecord("TopicTest", queue_id=1, sys_flag=0, born_timestamp=1700000000000,
                             born_host=("10.0.0.1", 5000), store_host=("10.0.0.2", 10911),
                             reconsume_times=0, body_crc=0)
_BATCH_PROPERTIES = {"WAIT": "true", "TAGS": "batch"}
_SLOTS = ("topic", "body", "properties", "queue_id", "flag", "queue_offset",
          "commit_log_offset", "store_timestamp", "sys_flag", "born_timestamp", "born_host",
          "store_host", "reconsume_times", "prepared_transaction_offset", "body_crc",
          "magic_code", "stored_properties")


def _records(records):
    if not isinstance(records, list):
        return records
    return [[(name, getattr(r, name) if name != "properties" else list(r.properties.items()))
             for name in _SLOTS] for r in records]


def batch_body(data):
    """A SEND_BATCH_MESSAGE body: its records (``batch_records``), its measure
    (``measure_packed_batch``) and the stored batch written straight from it
    (``write_packed_batch``), against decoding it in Python and writing its records."""
    batch_raw, batch_parsed = m._batch_strings(_BATCH_PROPERTIES)
    python = _outcome(m.python_batch_records, data, batch_raw, batch_parsed, _PROTOTYPE)
    _same(_records(_outcome(m.batch_records, data, batch_raw, batch_parsed, _PROTOTYPE)),
          _records(python), data)
    measured = speedups.measure_packed_batch(data, len(batch_raw))
    if not isinstance(python, list) or not python:
        _same(measured, None, data)
        return
    stored = [r.stored_properties for r in python]
    if all(len(s) <= m.MAX_PROPERTIES_LENGTH for s in stored):
        _same(measured, (len(python), sum(len(r.body) + len(s) for r, s in zip(python, stored))),
              data)
    batch = m.pack_batch(data, _BATCH_PROPERTIES, _PROTOTYPE)
    if not isinstance(batch, m.PackedBatch):
        return
    encoded = _outcome(m.encode_stored_batch, _fresh(data), stored, 0, 0, 0)
    if encoded[0] == "raised":
        return
    total = len(encoded[0])
    ours, theirs = bytearray(total + 8), bytearray(total + 8)
    written = _outcome(m.write_packed_batch, ours, 4, total, batch, 1700000000001, 4096, 7)
    expected = _outcome(m.python_write_stored_batch, theirs, 4, total, _fresh(data), stored,
                        1700000000001, 4096, 7)
    _same((_dispatch(written), bytes(ours)), (_dispatch(expected), bytes(theirs)), data)


def _fresh(data):
    """The records of the batch body ``data``, made anew (encoding them sets fields)."""
    batch_raw, batch_parsed = m._batch_strings(_BATCH_PROPERTIES)
    return m.python_batch_records(data, batch_raw, batch_parsed, _PROTOTYPE)


def _dispatch(written):
    if written and written[0] == "raised":
        return written
    ids, fields = written
    return ids, [f[:7] + (list(f[7].items()),) + f[8:] for f in fields]


# ---------------------------------------------------------------- pulls and HA

_FILE_SIZE = 64


class _Segment:
    """What a pull reads of a ``MappedFile``: its offset, write position and mapping."""

    def __init__(self, file_from_offset, wrote_position, mm):
        self.file_from_offset = file_from_offset
        self.wrote_position = wrote_position
        self.mm = mm

    read = MappedFile.read


def transfer_units(data):
    """A pull's unit loop (``transfer_units``) over consume-queue units read from disk:
    the first byte is the number of units (below 16), then the units, then the commit log,
    in 64-byte segments (the last byte of each set as its write position)."""
    if not data:
        return
    count = data[0] % 16
    units, log = data[1:1 + 20 * count], data[1 + 20 * count:]
    files = [_Segment(at, log[at + _FILE_SIZE - 1] % (_FILE_SIZE + 1) if at + _FILE_SIZE
                      <= len(log) else len(log) - at, log[at:at + _FILE_SIZE])
             for at in range(0, len(log), _FILE_SIZE)]
    for caps, message_filter in (((4096, 32, 4096, 32), None), ((100, 2, 50, 3), bool)):
        results = []
        for fn in (speedups.transfer_units, transfer.python_transfer_units):
            messages, queue_offsets = [], []
            answer = _outcome(fn, files, _FILE_SIZE, units, 5, 32, message_filter,
                              len(log), 128, caps, messages, queue_offsets)
            results.append((answer, messages, queue_offsets))
        _same(results[0], results[1], data)


_SEGMENT_SIZE = 512
_HEADER = struct.Struct(">qi")


def _ha_expected(data, start):
    """What the receive loop makes of ``data`` sent at once then closed, from ``start``:
    (outcome, leftover, end, segment), by the transfer layout (8-byte offset, 4-byte size,
    body) it must follow."""
    segment, end, pos = bytearray(_SEGMENT_SIZE), start, 0
    while len(data) - pos >= _HEADER.size:
        offset, size = _HEADER.unpack_from(data, pos)
        if offset != end or size < 0 or size > start + _SEGMENT_SIZE - end:
            return "handed back", data[pos:], end, segment
        body = data[pos + _HEADER.size:pos + _HEADER.size + size]
        segment[end - start:end - start + len(body)] = body
        end += len(body)
        pos += _HEADER.size + size
    return "closed", b"", end, segment


def ha_receiver(data):
    """A master's transfers as the HA slave's C loop (``HAReceiver``) reads them off its
    connection: the transfer at the start names where the segment begins."""
    start = max(0, min(int.from_bytes(data[:8], "big", signed=True), 1 << 40)) \
        if len(data) >= 8 else 0
    master, slave = socket.socketpair()
    try:
        segment = bytearray(_SEGMENT_SIZE)
        receiver = speedups.HAReceiver(fd=slave.fileno(), segment=segment, segment_from=start,
                                       end=start, reported=start, heartbeat_ms=60_000)
        master.sendall(data)
        master.shutdown(socket.SHUT_WR)
        outcome, leftover, _ = receiver.run()
        ours = outcome, leftover, receiver.progress()[0], segment
        receiver.close()
    finally:
        master.close()
        slave.close()
    _same(ours, _ha_expected(data, start), data)


# ---------------------------------------------------------------- the Spark readers

def record_columns(data):
    """Stored records as the Spark readers decode them (``rmqproto.spark.columns``): the
    first byte says whether they are DLedger entries (bit 0), whether CRCs are checked
    (bit 1), and, with the rest, where the rows start; the C answer must be the Python
    twin's, or stop where it leaves the record to the twin with the twin's rows so far."""
    from rmqproto.spark import columns
    if not data:
        return
    is_dledger, check_crc, buffer = bool(data[0] & 1), bool(data[0] & 2), data[1:]
    start = (data[0] >> 2) * len(buffer) // 64
    ours = columns.Columns(*speedups.record_columns(buffer, 0, start, len(buffer), is_dledger,
                                                    check_crc, 16))
    python = columns.python_record_columns(buffer, 0, start, len(buffer), is_dledger, check_crc,
                                           ours.rows if ours.stop == "unusual" else 16)
    if ours.stop == "unusual":
        _same((ours.rows, ours.buffers), (python.rows, python.buffers), data)
    else:
        _same(ours, python, data)
