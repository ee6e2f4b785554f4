"""``record_columns`` (``rmqproto/codec/speedups/columns.c``) against its Python twin,
``rmqproto.spark.columns.python_record_columns``, and both against the records
``decode_record`` makes of the same bytes: commit-log runs, pull bodies and DLedger
entries of random records (IPv4 and IPv6 hosts, compressed bodies, text that is not
UTF-8, properties named twice, long topics), then the same bytes cut short and mutated,
which must give the same answer on both sides and never crash."""

import struct
import zlib

import pytest
from hypothesis import given, settings, strategies as st

from rmqproto.codec import dledger, message as m
from rmqproto.codec.javalang import masked_crc32
from rmqproto.errors import CodecError
from rmqproto.spark import columns as c
from support.recordstrategies import HOSTS, INT32, INT64, properties
from support.speedups import require_speedups
from test_speedups import _growth

speedups = require_speedups()

_USUAL_HOST = st.tuples(st.ip_addresses(v=4).map(str), st.integers(0, 65535))
_USUAL_TOPICS = st.sampled_from(["TopicA", "TopicB", "é", "a😀"])
_TOPICS = st.one_of(_USUAL_TOPICS,
                    st.text(min_size=1, max_size=3),
                    st.just("T" * 130))
_PROPERTIES = st.one_of(
    properties(),
    st.fixed_dictionaries({"KEYS": st.sampled_from(["k1 k2", "k"]),
                           "TAGS": st.sampled_from(["TagA", "é"])}))


@st.composite
def _records(draw):
    usual = draw(st.integers(0, 3)) > 0  # the C side's: most records a broker stores
    hosts = _USUAL_HOST if usual else HOSTS
    topic = draw(_USUAL_TOPICS if usual else _TOPICS)
    try:
        topic.encode()
    except UnicodeEncodeError:
        topic = "T"
    body = draw(st.binary(max_size=300))
    sys_flag = draw(st.sampled_from([0, 4, 8] if usual else [0, m.COMPRESSED_FLAG]))
    if sys_flag == m.COMPRESSED_FLAG and draw(st.booleans()):
        body = zlib.compress(body)
    return m.MessageRecord(
        topic, body, draw(_PROPERTIES), queue_id=draw(INT32), flag=draw(INT32),
        queue_offset=draw(INT64), commit_log_offset=draw(INT64), sys_flag=sys_flag,
        born_timestamp=draw(INT64), born_host=draw(hosts), store_timestamp=draw(INT64),
        store_host=draw(hosts), reconsume_times=draw(INT32),
        prepared_transaction_offset=draw(INT64),
        body_crc=None if draw(st.booleans()) else draw(INT32))


def _encoded(record, twice, bad_utf8):
    """The record's bytes; ``twice``: its first property written twice; ``bad_utf8``: a byte
    of its topic or properties that is not UTF-8."""
    raw = m.encode_record(record)
    if twice and record.properties:
        name, value = next(iter(record.properties.items()))
        extra = ("%s\x01%s\x02" % (name, value + "x")).encode()
        properties = m.properties_utf8(record.properties) + extra
        raw = m.encode_record(record, properties)
    if bad_utf8 and len(raw) > 100:
        raw = raw[:-1] + b"\xff"
    return raw


_TAILS = st.sampled_from([b"", b"\0" * 8, b"\0" * 200, m.encode_blank(64) + b"\0" * 56,
                          b"\x01\x02\x03", struct.pack(">ii", 400, m.MESSAGE_MAGIC_CODE) + b"\1"])


@st.composite
def _buffers(draw):
    """``(buffer, is_dledger)``: records as a commit log (or a pull body) holds them, or
    DLedger entries (some not records) carrying them, then a tail."""
    is_dledger = draw(st.booleans())
    parts = []
    for record in draw(st.lists(_records(), max_size=6)):
        raw = _encoded(record, draw(st.booleans()) and draw(st.booleans()),
                       draw(st.integers(0, 9)) == 0)
        if is_dledger:
            if draw(st.integers(0, 5)) == 0:
                raw = b"config entry"
            raw = dledger.encode_entry(dledger.DLedgerEntry(index=len(parts), term=1, body=raw,
                                                            pos=0))
        parts.append(raw)
    tail = draw(_TAILS)
    if is_dledger:
        tail = {b"": b"", b"\0" * 8: b"\0" * 48}.get(tail, b"\xff\xff\xff\xff" + b"\0" * 60)
    return b"".join(parts) + tail, is_dledger


def _mutated(draw, buffer):
    data = bytearray(buffer)
    for _ in range(draw(st.integers(1, 4))):
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data[:draw(st.integers(0, len(data)))])


def _twins(buffer, position, start, end, is_dledger, check_crc, max_rows):
    """The C answer, checked against the Python twin's: equal, or C's stops before what
    it leaves to the twin with the twin's answer up to there."""
    ours = c.Columns(*speedups.record_columns(buffer, position, start, end, is_dledger,
                                              check_crc, max_rows))
    python = c.python_record_columns(buffer, position, start, end, is_dledger, check_crc,
                                     ours.rows if ours.stop == "unusual" else max_rows)
    if ours.stop == "unusual":
        assert (ours.rows, ours.buffers) == (python.rows, python.buffers)
        assert python.position <= ours.position
    else:
        assert ours == python
    return ours


def _rows(columns):
    """The rows the buffers hold, as Python values."""
    b = dict(zip(c.BUFFERS, columns.buffers))
    n = columns.rows

    def ints(name, kind):
        return struct.unpack("<%d%s" % (len(b[name]) // struct.calcsize(kind), kind), b[name])

    def strings(name, count=n):
        offsets = ints(name + "_offsets", "i")
        assert len(offsets) == count + 1 and offsets[0] == 0
        return [b[name + "_data"][offsets[i]:offsets[i + 1]] for i in range(count)]

    def bit(name, i):
        return bool(b[name][i // 8] >> (i % 8) & 1)

    entries = ints("properties_offsets", "i")
    names, values = strings("name", entries[-1]), strings("value", entries[-1])
    return [dict(
        topic=strings("topic")[i], queue_id=ints("queue_id", "i")[i],
        queue_offset=ints("queue_offset", "q")[i],
        commit_log_offset=ints("commit_log_offset", "q")[i], msg_id=strings("msg_id")[i],
        keys=strings("keys")[i] if bit("keys_valid", i) else None,
        tags=strings("tags")[i] if bit("tags_valid", i) else None, body=strings("body")[i],
        born=ints("born_timestamp", "q")[i], stored=ints("store_timestamp", "q")[i],
        born_host=strings("born_host")[i], store_host=strings("store_host")[i],
        reconsume_times=ints("reconsume_times", "i")[i],
        properties=list(zip(names[entries[i]:entries[i + 1]],
                            values[entries[i]:entries[i + 1]])),
        sys_flag=ints("sys_flag", "i")[i], store_size=ints("store_size", "i")[i],
        body_crc=ints("body_crc", "i")[i], crc_ok=bit("crc_ok", i) if b["crc_ok"] else None)
        for i in range(n)]


def _text(text):
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace").encode()


def _wrapped(millis):
    return ((millis * 1000 + (1 << 63)) % (1 << 64)) - (1 << 63)


def _expected(record):
    """A row as the records of ``decode_record`` say it should be."""
    try:
        body = m.uncompressed_body(record)
    except CodecError:
        body = record.body
    props = [(_text(k), _text(v)) for k, v in record.properties.items()]
    return dict(
        topic=_text(record.topic), queue_id=record.queue_id, queue_offset=record.queue_offset,
        commit_log_offset=record.commit_log_offset, msg_id=record.msg_id.encode(),
        keys=dict(props).get(b"KEYS"), tags=dict(props).get(b"TAGS"), body=body,
        born=_wrapped(record.born_timestamp), stored=_wrapped(record.store_timestamp),
        born_host=("%s:%d" % record.born_host).encode(),
        store_host=("%s:%d" % record.store_host).encode(),
        reconsume_times=record.reconsume_times, properties=props, sys_flag=record.sys_flag,
        store_size=record.store_size, body_crc=record.body_crc,
        crc_ok=masked_crc32(record.body) == record.body_crc)


def _walk(buffer, is_dledger, start, end, batch_rows=3):
    """The rows and last stop of ``record_columns`` over ``[start, end)``."""
    rows, last = [], None
    for last in c.record_columns(buffer, 0, start, end, is_dledger, True, batch_rows):
        rows += _rows(last)
    return rows, (last.stop, last.error)


def _decoded(buffer, is_dledger):
    """What the existing decode path makes of ``buffer``: records, where each starts."""
    if not is_dledger:
        scan = m.iter_records(buffer)
        found, position = [], 0
        for record in scan:
            found.append((position, record))
            position = scan.position
        return found
    found, position = [], 0
    while len(buffer) - position >= 48 and not dledger.is_blank(buffer, position) \
            and any(buffer[position:position + 8]):
        entry = dledger.decode_entry(buffer, position)
        if entry.body[4:8] in (struct.pack(">i", m.MESSAGE_MAGIC_CODE),
                               struct.pack(">i", m.MESSAGE_MAGIC_CODE_V2)):
            found.append((position, m.decode_record(entry.body)))
        position += entry.size
    return found


@settings(max_examples=200, deadline=None)
@given(_buffers(), st.booleans(), st.integers(1, 8))
def test_c_and_python_agree_on_records(given_buffer, check_crc, max_rows):
    buffer, is_dledger = given_buffer
    taken = _twins(buffer, 0, 0, len(buffer), is_dledger, check_crc, max_rows)
    assert taken.stop in (None, "blank", "empty", "unusual")


@settings(max_examples=150, deadline=None)
@given(_buffers())
def test_rows_are_what_decode_record_reads(given_buffer):
    buffer, is_dledger = given_buffer
    try:
        decoded = _decoded(buffer, is_dledger)
    except CodecError:  # a record with a byte that breaks its layout: see the next tests
        return
    rows, (stop, error) = _walk(buffer, is_dledger, 0, len(buffer))
    assert rows == [_expected(record) for _, record in decoded]
    saved, c.speedups = c.speedups, None
    try:
        assert _walk(buffer, is_dledger, 0, len(buffer)) == (rows, (stop, error))
    finally:
        c.speedups = saved


@settings(max_examples=100, deadline=None)
@given(_buffers(), st.data())
def test_a_region_holds_the_records_starting_in_it(given_buffer, data):
    buffer, is_dledger = given_buffer
    try:
        decoded = _decoded(buffer, is_dledger)
    except CodecError:
        return
    start = data.draw(st.integers(0, len(buffer)))
    end = data.draw(st.integers(start, len(buffer) + 1))
    rows, _ = _walk(buffer, is_dledger, start, end)
    assert rows == [_expected(record) for at, record in decoded if start <= at < end]


@settings(max_examples=250, deadline=None)
@given(_buffers(), st.data(), st.booleans())
def test_corrupt_bytes_give_the_same_answer_and_never_crash(given_buffer, data, check_crc):
    buffer, is_dledger = given_buffer
    mutated = _mutated(data.draw, buffer)
    start = data.draw(st.integers(0, len(mutated)))
    _twins(mutated, 0, start, len(mutated), is_dledger, check_crc, 8)
    rows, (stop, error) = _walk(mutated, is_dledger, start, len(mutated))
    saved, c.speedups = c.speedups, None
    try:
        assert _walk(mutated, is_dledger, start, len(mutated)) == (rows, (stop, error))
    finally:
        c.speedups = saved
    assert stop in (None, "blank", "empty", "corrupt")
    assert (error is not None) == (stop == "corrupt")


def test_a_record_that_does_not_parse_is_corrupt_with_why():
    record = m.encode_record(m.MessageRecord("TopicA", b"body", {"KEYS": "k"}))
    bad_size = struct.pack(">i", len(record) + 5) + record[4:] + b"\0" * 5
    for buffer in (record + bad_size, record + record[:50]):
        rows, (stop, error) = _walk(buffer, False, 0, len(buffer))
        assert len(rows) == 1 and stop == "corrupt" and error


@pytest.mark.parametrize("bad", [dict(end=10**12), dict(max_rows=0), dict(start=10**12)])
def test_odd_arguments(bad):
    record = m.encode_record(m.MessageRecord("TopicA", b"body"))
    arguments = dict(position=0, start=0, end=len(record), max_rows=5)
    arguments.update(bad)
    ours = _twins(record, arguments["position"], arguments["start"], arguments["end"], False,
                  True, arguments["max_rows"])
    assert ours.rows <= 1


def test_arguments_of_other_types_are_type_errors():
    with pytest.raises(TypeError):
        speedups.record_columns(b"", 0, 0, 0, False, False)
    with pytest.raises(TypeError):
        speedups.record_columns("text", 0, 0, 4, False, False, 1)
    with pytest.raises(TypeError):
        speedups.record_columns(b"", "0", 0, 4, False, False, 1)


def test_repeated_calls_do_not_leak():
    records = b"".join(m.encode_record(m.MessageRecord(
        "TopicA", b"body %d" % i, {"KEYS": "k%d" % i, "TAGS": "t", "a": "b"},
        queue_offset=i)) for i in range(20))

    def call(i):
        speedups.record_columns(records, 0, 0, len(records), False, True, 100)
        speedups.record_columns(records[:-3], 0, 0, len(records), False, True, 7)
    assert _growth(call) < 20_000
