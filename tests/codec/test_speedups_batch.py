"""The batch C speedups (``rmqproto.codec._speedups``) against their Python twins: the
records of a ``SEND_BATCH_MESSAGE`` body (``batch_records``), the store's
checks of a batch (``check_batch_records``, the loop of ``commitlog.check_batch``) and
the encoding of a batch as the commit log stores it, straight into a segment's mapping
(``write_stored_batch``).
Every slot of every record is compared (value, type, the order of the properties dict), on
random and edge-case inputs: where the C function declines (None), the Python twin raises,
or the wrapper falls back and answers as Python does, no record changed before. Then that
the C functions neither leak nor keep references, nor crash on arguments of the wrong type.
"""

import copy
import mmap
import struct
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings, strategies as st

from rmqproto.codec import message as m
from rmqproto.codec.native import speedups
from rmqproto.errors import CodecError
from rmqproto.store import commitlog, defaultstore
from support.recordstrategies import HOSTS, INT32, INT64, PROPERTY_TEXT, properties
from support.speedups import require_speedups
from test_batch_records import _batch_body, _property_bytes
from test_speedups import _growth, _outcome
from test_stored_batch import _batches

require_speedups()

_V1, _V2 = m.MESSAGE_MAGIC_CODE, m.MESSAGE_MAGIC_CODE_V2
_INT32_MAX, _INT64_MAX = (1 << 31) - 1, (1 << 63) - 1
_SLOTS = m.MessageRecord.__slots__ + m.BatchRecord.__slots__
#: What a batch record takes from its prototype.
_PROTOTYPE_SLOTS = ("topic", "queue_id", "sys_flag", "born_timestamp", "born_host",
                    "store_host", "reconsume_times", "magic_code")


def _slots(record):
    """Every slot that is set, as (name, type, value), the properties dict as its items in
    order (without computing anything, unlike ``fields()``)."""
    found = []
    for name in _SLOTS:
        if hasattr(record, name):
            value = getattr(record, name)
            if type(value) is dict:
                value = list(value.items())
            found.append((name, type(value), value))
    return type(record), found


def _all_slots(records):
    return [_slots(r) for r in records]


# ---------------------------------------------------------------- batch_records

#: A message's own properties bytes: as clients write them (test_batch_records), any bytes,
#: or odd ones (lone surrogates as UTF-8, escapes, separators only, a name without value).
_OWN_PROPERTIES = st.one_of(
    _property_bytes(), st.binary(max_size=24),
    st.sampled_from([b"", b"\x02", b"\x02\x02", b"\x01", b"a\x01", b"\x01v", b"a\x01b\x02",
                     b"a\x01\xed\xa0\x80", b"\xed\xb3\xbf\x01x", b"\xff\x01\xfe\x02a\x01b",
                     b"a\x01b\x01c\x02a\x01d", "😀\x01é\U0010FFFF".encode()]))
_ITEMS = st.lists(st.tuples(INT32, st.binary(max_size=30), _OWN_PROPERTIES), max_size=5)
#: Batch properties: the names of the messages' often, the text with surrogate escapes too.
_BATCH_TEXT = st.one_of(PROPERTY_TEXT, st.sampled_from(["a", "TAGS", "\udcff", "C"]))
_BATCH_PROPERTIES = st.dictionaries(_BATCH_TEXT, _BATCH_TEXT, max_size=3)
_MAGIC_CODES = st.one_of(st.sampled_from([None, _V1, _V2, 0, -1]), INT32)


@st.composite
def _prototypes(draw):
    prototype = m.MessageRecord(
        draw(st.one_of(st.text(st.characters(blacklist_categories=("Cs",)), max_size=20),
                       st.sampled_from(["T", "é" * 70, "\udcff"]))),
        queue_id=draw(INT32), sys_flag=draw(st.one_of(st.sampled_from([0, 4, 8, 12, 0x80]),
                                                      INT32)),
        born_timestamp=draw(INT64), born_host=draw(HOSTS), store_host=draw(HOSTS),
        reconsume_times=draw(INT32), body_crc=0)
    magic = draw(_MAGIC_CODES)
    if magic is not None:
        prototype.magic_code = magic
    return prototype


def _batch_args(batch_properties):
    """``batch_raw`` and ``batch_parsed`` as ``decode_batch_records`` derives them."""
    text = m.properties_to_string(batch_properties)
    return text.encode("utf-8", "surrogateescape"), m.string_to_properties(text)


def _same_batch_records(data, batch_raw, batch_parsed, prototype):
    """C against Python on ``data`` (and the same bytes as bytearray and memoryview); the
    wrapper answers as Python does.  Returns the Python outcome."""
    python = _outcome(m.python_batch_records, bytes(data), batch_raw, batch_parsed, prototype)
    for given_data in (bytes(data), bytearray(data), memoryview(bytes(data))):
        ours = speedups.batch_records(given_data, batch_raw, batch_parsed, prototype,
                                      m.BatchRecord)
        if type(python) is tuple:  # Python raised: C declines, the wrapper raises the same
            assert ours is None and python[1] in (CodecError, m.TruncatedError)
            assert _outcome(m.batch_records, given_data, batch_raw, batch_parsed,
                            prototype) == python
            continue
        assert type(ours) is list and _all_slots(ours) == _all_slots(python)
        for record in ours:
            assert all(getattr(record, name) is getattr(prototype, name)
                       for name in _PROTOTYPE_SLOTS)
    return python


@settings(max_examples=300, deadline=None)
@given(_ITEMS, _BATCH_PROPERTIES, _prototypes())
def test_batch_records_of_well_formed_bodies(items, batch_properties, prototype):
    records = _same_batch_records(_batch_body(items), *_batch_args(batch_properties),
                                  prototype)
    assert len(records) == len(items)


@settings(max_examples=150, deadline=None)
@given(_ITEMS, st.binary(max_size=20), st.dictionaries(_BATCH_TEXT, _BATCH_TEXT, max_size=3),
       _prototypes())
def test_batch_records_of_any_batch_strings(items, batch_raw, batch_parsed, prototype):
    """The raw and parsed batch strings are taken as given, even when they disagree."""
    _same_batch_records(_batch_body(items), batch_raw, batch_parsed, prototype)


def test_decode_batch_records_with_and_without_speedups():
    data = _batch_body([(1, b"x", b"a\x01b"), (-1, b"", b""), (7, b"yy", b"\xff\x02")])
    prototype = m.MessageRecord("T", queue_id=3, born_host=("::1", 5), body_crc=0)
    ours = m.decode_batch_records(data, {"C": "d", "a": "z"}, prototype)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(m, "batch_records", m.python_batch_records)
        python = m.decode_batch_records(data, {"C": "d", "a": "z"}, prototype)
    assert _all_slots(ours) == _all_slots(python)
    assert (ours.body_length, ours.properties) == (python.body_length, python.properties)
    assert list(ours[0].properties.items()) == [("a", "z"), ("C", "d")]


def _head(total, body_length, flag=0):
    return struct.pack(">iiiii", total, 0, 0, flag, body_length)


_GOOD = _batch_body([(5, b"body", b"a\x01b")])


@pytest.mark.parametrize("data", [
    b"", _GOOD, _GOOD + _GOOD, _GOOD[:-1], _GOOD[:21], _GOOD[:22], _GOOD + b"\x00" * 21,
    _GOOD + b"\x00" * 22, _head(22, 0) + b"\x00\x00",
    _head(22, -1) + b"\x00\x00", _head(22, 1) + b"\x00\x00", _head(23, 1) + b"\x00\x00",
    _head(22, 1 << 30) + b"\x00\x00", _head(22, -(1 << 31)) + b"\x00\x00",
    _head(24, 0) + b"\x80\x00xx", _head(24, 0) + b"\xff\xfexx", _head(24, 0) + b"\x00\x03xx",
    _head(24, 0) + b"\x00\x02xx", _head(23, 0) + b"\x00\x02xx", _head(-24, 0) + b"\x00\x02xx",
    _head(_INT32_MAX, 0) + b"\x00\x00", b"\x00" * 22, b"\xff" * 40,
    _head(22, 0, flag=-1) + b"\x00\x00" + _head(23, 0)])
def test_batch_records_of_edge_cases(data):
    _same_batch_records(data, b"C\x01d", {"C": "d"}, m.MessageRecord("T"))


@st.composite
def _damaged_bodies(draw):
    """A well-formed body cut, with a byte changed, bytes inserted or appended."""
    data = bytearray(_batch_body(draw(_ITEMS)))
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["cut", "flip", "insert", "append"]))
        at = draw(st.integers(0, len(data)))
        if how == "cut":
            del data[at:]
        elif how == "flip" and at < len(data):
            data[at] = draw(st.sampled_from([0, 0x7F, 0x80, 0xFF, data[at] ^ 1]))
        elif how in ("insert", "append"):
            data[at if how == "insert" else len(data):0] = draw(st.binary(min_size=1, max_size=4))
    return bytes(data)


@settings(max_examples=400, deadline=None)
@given(st.one_of(_damaged_bodies(), st.binary(max_size=80)), _BATCH_PROPERTIES)
def test_batch_records_of_malformed_bodies(data, batch_properties):
    """C declines exactly the bodies Python raises on."""
    _same_batch_records(data, *_batch_args(batch_properties), m.MessageRecord("T"))


@pytest.mark.parametrize("args", [
    ("not bytes", b"", {}, m.MessageRecord("T"), m.BatchRecord),
    (None, b"", {}, m.MessageRecord("T"), m.BatchRecord),
    (_GOOD, "C\x01d", {}, m.MessageRecord("T"), m.BatchRecord),
    (_GOOD, bytearray(b""), {}, m.MessageRecord("T"), m.BatchRecord),
    (_GOOD, b"", [("C", "d")], m.MessageRecord("T"), m.BatchRecord),
    (_GOOD, b"", {}, m.MessageRecord("T"), m.BatchRecord("T")),
    (_GOOD, b"", {}, m.MessageRecord("T"), "BatchRecord"),
    (_GOOD, b"", {}, m.MessageRecord("T")),
    (_GOOD, b"", {}, m.MessageRecord("T"), m.BatchRecord, None),
])
def test_batch_records_of_wrong_arguments(args):
    assert _outcome(speedups.batch_records, *args)[:2] == ("raised", TypeError)


@pytest.mark.parametrize("prototype", [None, object(), ("T", 1)])
def test_batch_records_of_a_bad_prototype(prototype):
    """Both raise AttributeError, even for an empty body."""
    for data in (b"", _GOOD, b"x"):
        ours = _outcome(m.batch_records, data, b"", {}, prototype)
        assert ours[:2] == _outcome(m.python_batch_records, data, b"", {}, prototype)[:2]
        assert ours[:2] == ("raised", AttributeError)


@pytest.mark.parametrize("record_type", [
    "type(None)", "bool", "memoryview", "range", "slice", "type", "dict", "int",
    "m.MessageRecord"])
def test_batch_records_of_another_record_type(record_type):
    """A record type other than BatchRecord is refused with TypeError (or at least an
    exception) and crashes nothing: run in a child process, which a crash would kill."""
    code = textwrap.dedent("""
        import gc
        from rmqproto.codec import message as m
        from rmqproto.codec.native import speedups
        data = m.encode_batch([m.Message(b"x", {"a": "b"})])
        try:
            records = speedups.batch_records(data, b"", {}, m.MessageRecord("T"), %s)
        except Exception as exc:
            print(type(exc).__name__)
        else:
            print(repr(records))
            del records
        gc.collect()
        print("alive")
    """) % record_type
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=60)
    assert (child.returncode, child.stdout.split()[-1:]) == (0, ["alive"]), child.stderr[-500:]
    assert child.stdout.split()[0] in ("TypeError", "AttributeError")


# ---------------------------------------------------------------- check_batch

_TOO_LONG = b"p" * (m.MAX_PROPERTIES_LENGTH + 1)
#: What may be done to one record of a batch before it is checked.
_CHANGES = {
    "topic": lambda r: setattr(r, "topic", "Other"),
    "same topic, another object": lambda r: setattr(r, "topic", "".join(list(r.topic))),
    "queue": lambda r: setattr(r, "queue_id", r.queue_id + 1),
    "queue 1.0": lambda r: setattr(r, "queue_id", 1.0),
    "prepared": lambda r: setattr(r, "sys_flag", r.sys_flag | m.TRANSACTION_PREPARED_TYPE),
    "commit": lambda r: setattr(r, "sys_flag", r.sys_flag | m.TRANSACTION_COMMIT_TYPE),
    "rollback": lambda r: setattr(r, "sys_flag", r.sys_flag | m.TRANSACTION_ROLLBACK_TYPE),
    "IPv6 hosts": lambda r: setattr(r, "sys_flag", r.sys_flag | 0x30),
    "sys flag beyond int64": lambda r: setattr(r, "sys_flag", 1 << 70),
    "stored None": lambda r: setattr(r, "stored_properties", None),
    "stored unset": lambda r: delattr(r, "stored_properties"),
    "stored str": lambda r: setattr(r, "stored_properties", "a\x01b"),
    "stored bytearray": lambda r: setattr(r, "stored_properties", bytearray(b"a\x01b")),
    "stored too long": lambda r: setattr(r, "stored_properties", _TOO_LONG),
    "stored longest": lambda r: setattr(r, "stored_properties", _TOO_LONG[1:]),
    "body bytearray": lambda r: setattr(r, "body", bytearray(r.body)),
    "body str": lambda r: setattr(r, "body", "body😀"),
    "properties too long": lambda r: (setattr(r, "stored_properties", None),
                                      setattr(r, "properties", {"k": "v" * 40000})),
}


def _plain(record):
    """The record as a plain MessageRecord (no stored properties slot)."""
    return m.MessageRecord(record.topic, record.body, dict(record.properties),
                           record.queue_id, record.flag, sys_flag=record.sys_flag,
                           born_host=record.born_host, store_host=record.store_host)


@st.composite
def _checked_batches(draw):
    prototype = m.MessageRecord(
        draw(st.sampled_from(["T", "TopicA", "é" * 60, "x" * 128, "😀"])),
        queue_id=draw(st.integers(0, 3)), sys_flag=draw(st.sampled_from([0, 1, 2, 0x80])),
        born_host=draw(HOSTS), store_host=draw(HOSTS))
    batch_properties = draw(st.one_of(
        properties(max_size=2), st.just({m.PROPERTY_DELAY_TIME_LEVEL: "x"}),
        st.just({"big": "v" * 40000})))
    body = _batch_body(draw(st.lists(st.tuples(INT32, st.binary(max_size=20),
                                               _property_bytes()), min_size=1, max_size=5)))
    records = m.decode_batch_records(body, batch_properties, prototype)
    for i in range(len(records)):
        if draw(st.integers(0, 3)) == 0:
            change = draw(st.sampled_from(sorted(_CHANGES) + ["plain"]))
            if change == "plain":
                records[i] = _plain(records[i])
            else:
                _CHANGES[change](records[i])
    container = draw(st.sampled_from(["BatchRecords", "bare BatchRecords", "list", "tuple"]))
    if container == "bare BatchRecords":
        records = m.BatchRecords(records)
    elif container != "BatchRecords":
        records = (list if container == "list" else tuple)(records)
    return records


def same_check(check, subject, twin, max_message_size, state):
    """``check(subject, max_message_size)`` with the C speedups of the commit log and
    ``check(twin, max_message_size)`` without them: the same outcome, and the same
    ``state`` of ``subject`` and ``twin`` afterwards."""
    ours = _outcome(check, subject, max_message_size)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(commitlog, "speedups", None)
        python = _outcome(check, twin, max_message_size)
    assert ours == python
    assert state(subject) == state(twin)
    return ours


def _same_check(records, max_message_size):
    """check_batch with and without the C loop: same outcome, same records afterwards."""
    return same_check(commitlog.check_batch, records, copy.deepcopy(records), max_message_size,
                      _all_slots)


@settings(max_examples=400, deadline=None)
@given(_checked_batches(), st.sampled_from([1 << 22, 100, 0]))
def test_check_batch_with_and_without_speedups(records, max_message_size):
    _same_check(records, max_message_size)


def _decoded(count=3, topic="T"):
    body = _batch_body([(i, b"body%d" % i, b"a\x01%d" % i) for i in range(count)])
    return m.decode_batch_records(body, {"C": "d"}, m.MessageRecord(topic, queue_id=1))


def test_check_batch_records_answers():
    records = _decoded()
    properties, total = speedups.check_batch_records(records, "T", 1, 1)
    assert properties == [r.stored_properties for r in records] == [
        b"a\x010\x02C\x01d", b"a\x011\x02C\x01d", b"a\x012\x02C\x01d"]
    assert [(r.magic_code, r.store_size) for r in records] == [
        (_V1, 91 + 1 + len(r.body) + len(r.stored_properties)) for r in records]
    assert total == sum(r.store_size for r in records)
    assert speedups.check_batch_records((), "T", 1, 1) == ([], 0)
    assert speedups.check_batch_records(iter(records), "T", 1, 1) == (properties, total)
    assert speedups.check_batch_records(records, "T", 2, 1) is None
    assert speedups.check_batch_records(records, "U", 1, 1) is None
    assert speedups.check_batch_records(records + [_plain(records[0])], "T", 1, 1) is None


@pytest.mark.parametrize("args, error", [
    ((5, "T", 1, 1), TypeError), ((_decoded(), "T", 1, "1"), TypeError),
    ((_decoded(), "T", 1, 1 << 70), OverflowError), ((_decoded(), "T", 1), TypeError),
    (([object()], "T", 1, 1), AttributeError), (([None], "T", 1, 1), AttributeError)])
def test_check_batch_records_of_wrong_arguments(args, error):
    assert _outcome(speedups.check_batch_records, *args)[:2] == ("raised", error)


def test_check_batch_of_a_queue_id_unequal_to_itself():
    """A queue id that is not equal to itself (NaN): Python's ``!=`` finds the first
    record of another queue (MESSAGE_ILLEGAL); the C loop compares with
    PyObject_RichCompareBool, which takes an object as equal to itself."""
    records = _decoded()
    for record in records:
        record.queue_id = float("nan")
    assert _same_check(records, 1 << 22)[0] is commitlog.PutMessageStatus.MESSAGE_ILLEGAL


# -------------------------------------------------------- write_stored_batch

_BAD = object()
#: What may be done to one record of a batch before it is encoded (the first record's
#: fields are those the batch shares).
_FIELD_CHANGES = {
    "queue_id": [1 << 31, -(1 << 31) - 1, _INT32_MAX, "1", 1.0],
    "flag": [1 << 31, -(1 << 31), _INT32_MAX, None, True],
    "sys_flag": [1 << 31, -(1 << 31), 0x10, 0x20, 12, -1],
    "born_timestamp": [1 << 63, -(1 << 63), _INT64_MAX, 2.5],
    "reconsume_times": [1 << 31, -1],
    "prepared_transaction_offset": [1 << 63, -(1 << 63) - 1, -1],
    "magic_code": [_V2, 0, m.BLANK_MAGIC_CODE, _V1 + (1 << 32)],
    "topic": ["é" * 64, "x" * 127, "x" * 128, "", b"T", None, "\udcff"],
    "born_host": [("::1", 5), ["1.2.3.4", 5], ("1.2.3", 5), ("1.2.3.4", 1 << 31),
                  ("1.2.3.4", -1), ("1.2.3.4",), (None, 1), ("1.2.3.4", "5"), "1.2.3.4:5",
                  ("1.2.3.4", 5, 6), ("01.2.3.4", 5), (" 1.2.3.4", 5)],
    "store_host": [("::1", 5), ("255.255.255.255", 0x7FFFFFFF), ("1.2.3.256", 5),
                   ("1.2.3.4", 1 << 32), ("1.2.3.4", 2.0), ("localhost", 1)],
    "body": [bytearray(b"xy"), "str", None, b"", b"b" * 300],
}


#: What the records of a batch encoded at once share (with the first).
_SHARED_SLOTS = ("topic", "queue_id", "sys_flag", "magic_code", "born_host", "store_host",
                 "born_timestamp", "reconsume_times", "prepared_transaction_offset")
_SHORT_TOPICS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_IPV4_HOSTS = st.tuples(st.ip_addresses(v=4).map(str), st.one_of(st.integers(0, 65535), INT32))


@st.composite
def _encoded_batches(draw):
    """A batch (test_stored_batch's generator), sometimes with fields out of range, hosts or
    bodies of another type, properties of another type, too long or too few or too many."""
    records = draw(_batches())
    if draw(st.integers(0, 3)):  # mostly IPv4 hosts, the usual batch the C encoding is for
        born, store = draw(_IPV4_HOSTS), draw(_IPV4_HOSTS)
        topic, short = records[0].topic, draw(_SHORT_TOPICS)
        for record in records:
            record.born_host, record.store_host = born, store
            record.sys_flag &= ~0x30
            if record.topic == topic:
                record.topic, record.magic_code = short, _V1
        if draw(st.integers(0, 2)):  # mostly, later records differing in nothing
            for record in records[1:]:
                for name in _SHARED_SLOTS:
                    setattr(record, name, getattr(records[0], name))
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2]))):
        name = draw(st.sampled_from(sorted(_FIELD_CHANGES)))
        value = draw(st.sampled_from(_FIELD_CHANGES[name]))
        at = draw(st.sampled_from([None, None, 0, -1, len(records) // 2]))
        for record in records if at is None else records[at:at + 1 or None]:
            setattr(record, name, value)
    props = [m.properties_to_string(r.properties).encode("utf-8", "surrogateescape")
             for r in records]
    change = draw(st.sampled_from([""] * 10 + ["fewer", "more", "str", "bytearray",
                                               "longest", "too long", "tuple"]))
    at = draw(st.integers(0, len(props) - 1))
    if change == "fewer":
        del props[at]
    elif change == "more":
        props.append(b"extra\x01x")
    elif change == "str":
        props[at] = "a\x01b"
    elif change == "bytearray":
        props[at] = bytearray(props[at])
    elif change in ("longest", "too long"):
        props[at] = _TOO_LONG[change == "longest":]
    elif change == "tuple":
        props = tuple(props)
    return records, props


#: Store timestamps and offsets: in range mostly, some at or beyond the limits.
_STORE_TIMESTAMPS = st.one_of(INT64, INT64, INT64, st.sampled_from([1 << 63, -(1 << 63) - 1,
                                                                    0, 1.5]))
_OFFSETS = st.integers(0, 1 << 40)
_COMMIT_LOG_OFFSETS = st.one_of(_OFFSETS, _OFFSETS, _OFFSETS, st.sampled_from(
    [-1, -(1 << 63), _INT64_MAX, _INT64_MAX - 1000, _INT64_MAX - 200, 1 << 63]))
_QUEUE_OFFSETS = st.one_of(_OFFSETS, _OFFSETS, st.integers(_INT64_MAX - 8, _INT64_MAX),
                           st.sampled_from([-1, -(1 << 63), -(1 << 63) - 1, 1 << 63]))


_AT, _FILL = 7, 0xEE  # where a batch is written in a test buffer, what is around it


def _buffer(total):
    return bytearray([_FILL]) * (_AT + max(total, 0) + 5)


def _written(buffer, total):
    """What a buffer of :func:`_buffer` holds at ``_AT`` (nothing around it changed)."""
    assert buffer[:_AT] + buffer[_AT + total:] == _buffer(0)
    return bytes(buffer[_AT:_AT + total])


def _same_stored_batch(records, props, *args, total=None):
    """C against Python on copies of the batch, written at ``_AT`` of a buffer that fits
    ``total`` bytes (default: what Python encodes): the same bytes, ids, dispatch fields and
    records after; where C declines, nothing written, no record changed, and the wrapper
    answers (or raises) as Python does. Returns the Python outcome of encode_stored_batch."""
    c_records, wrapped = copy.deepcopy(records), copy.deepcopy(records)
    before = _all_slots(c_records)
    python = _outcome(m.encode_stored_batch, records, props, *args)
    raised = python[0] == "raised"
    if total is None:
        total = 64 if raised else len(python[0])
    buffer, wrapper_buffer = _buffer(total), _buffer(total)
    ours = speedups.write_stored_batch(buffer, _AT, total, c_records, props, *args)
    if ours is None:
        assert _all_slots(c_records) == before and buffer == _buffer(total)
        wrapper = _outcome(m.write_stored_batch, wrapper_buffer, _AT, total, wrapped, props,
                           *args)
        if raised or len(python[0]) != total:
            assert wrapper[:2] == (python[:2] if raised else ("raised", CodecError))
            assert wrapper_buffer == _buffer(total)
            return python
        assert wrapper == python[1:] and _written(wrapper_buffer, total) == python[0]
        assert _all_slots(wrapped) == _all_slots(records)
        return python
    assert not raised and len(python[0]) == total, python
    assert type(ours) is tuple and ours == python[1:] and type(ours[0]) is list
    assert _written(buffer, total) == python[0]
    assert _all_slots(c_records) == _all_slots(records)
    return python


@settings(max_examples=400, deadline=None)
@given(_encoded_batches(), _STORE_TIMESTAMPS, _COMMIT_LOG_OFFSETS, _QUEUE_OFFSETS)
def test_write_stored_batch_with_and_without_speedups(batch, store_timestamp, offset,
                                                      queue_offset):
    _same_stored_batch(*batch, store_timestamp, offset, queue_offset)


@settings(max_examples=300, deadline=None)
@given(_encoded_batches(), INT64, _OFFSETS, _OFFSETS)
def test_write_stored_batch_at_offsets_in_range(batch, store_timestamp, offset, queue_offset):
    _same_stored_batch(*batch, store_timestamp, offset, queue_offset)


def _usual_batch(count=3, **changes):
    fields = dict(queue_id=2, born_host=("1.2.3.4", 5), store_host=("5.6.7.8", 9), body_crc=0)
    fields.update(changes)
    records = [m.MessageRecord("T", b"body%d" % i, {"a": str(i)}, flag=i, **fields)
               for i in range(count)]
    return records, [b"a\x01%d" % i for i in range(count)]


def test_write_stored_batch_of_usual_batches():
    """The C encoding answers for the usual batch (it is not always declining)."""
    for count in (1, 2, 5):
        records, props = _usual_batch(count)
        data, ids, fields = _same_stored_batch(records, props, 7, 100, 3)
        assert speedups.write_stored_batch(_buffer(len(data)), _AT, len(data),
                                           copy.deepcopy(records), props, 7, 100, 3) is not None
        assert len(ids) == count and ids[0] == "05060708000000090000000000000064"
        assert [f[2:4] for f in fields] == [(r.queue_offset, r.commit_log_offset)
                                            for r in records]
        assert fields[0][3] == 100 and sum(f[8] for f in fields) == len(data)
    records, props = _usual_batch(2)
    total = sum(r.store_size for r in records)
    assert speedups.write_stored_batch(bytearray(total), 0, total, records, props, 7, 0,
                                       _INT64_MAX - 2) is not None
    assert records[-1].queue_offset == _INT64_MAX - 1


@pytest.mark.parametrize("change", [{}, {"store_host": ("::1", 5)}])
@pytest.mark.parametrize("wrong", [-1, 1, 1000])
def test_write_stored_batch_of_records_of_another_total(change, wrong):
    """Records not of the total checked: nothing written, CodecError (C leaves it to Python)."""
    records, props = _usual_batch(3, **change)
    total = len(m.encode_stored_batch(copy.deepcopy(records), props, 1, 2, 3)[0])
    assert _same_stored_batch(records, props, 1, 2, 3, total=total + wrong)[0] != "raised"


@pytest.mark.parametrize("change", [{}, {"store_host": ("::1", 5)}])
@pytest.mark.parametrize("position, room", [(_AT, 0), (0, -_AT), (_AT, -1), (0, -_AT - 1),
                                            (-1, 0), (1 << 70, 0)])
def test_write_stored_batch_at_the_buffer_end(change, position, room):
    """At the buffer's end: exactly fitting records are written; one byte too many, a
    negative position or total, and C and Python refuse with ValueError, nothing written
    and no record changed."""
    records, props = _usual_batch(3, **change)
    total = len(m.encode_stored_batch(copy.deepcopy(records), props, 1, 2, 3)[0])
    for writer in (m.python_write_stored_batch, speedups.write_stored_batch):
        batch, buffer = copy.deepcopy(records), bytearray(b"x") * (_AT + total + room)
        before = _all_slots(batch)
        outcome = _outcome(writer, buffer, position, total, batch, props, 1, 2, 3)
        if 0 <= position == _AT + room:  # C declines the IPv6 batch, Python writes it
            if outcome is not None:
                assert buffer[position:] == m.encode_stored_batch(records, props, 1, 2, 3)[0]
            assert (outcome is None) == (writer is speedups.write_stored_batch and bool(change))
            continue
        assert outcome[:2] == ("raised", ValueError)
        assert buffer == b"x" * (_AT + total + room) and _all_slots(batch) == before
    assert _outcome(m.python_write_stored_batch, bytearray(5), 0, -1, records, props, 1, 2,
                    3)[:2] == _outcome(speedups.write_stored_batch, bytearray(5), 0, -1,
                                       records, props, 1, 2, 3)[:2] == ("raised", ValueError)


def test_write_stored_batch_into_a_mapping():
    """Into an mmap, as the commit log writes (the buffer export released after)."""
    records, props = _usual_batch(3)
    data = m.encode_stored_batch(copy.deepcopy(records), props, 1, 2, 3)[0]
    mapping = mmap.mmap(-1, len(data) + 10)
    try:
        assert speedups.write_stored_batch(mapping, 10, len(data), records, props, 1, 2, 3)
        assert mapping[10:] == data
    finally:
        mapping.close()


@pytest.mark.parametrize("change, args", [
    ({}, (1 << 63, 0, 0)), ({}, (0, -1, 0)), ({}, (0, 0, _INT64_MAX)), ({}, (0, 0, -1)),
    ({}, (0, _INT64_MAX - 200, 0)), ({}, (0, "0", 0)), ({}, (0, 0, 1.0)),
    ({"queue_id": 1 << 31}, (0, 0, 0)), ({"flag": 1 << 31}, (0, 0, 0)),
    ({"born_timestamp": 1 << 63}, (0, 0, 0)), ({"magic_code": _V2}, (0, 0, 0)),
    ({"topic": "é" * 64}, (0, 0, 0)), ({"topic": "😀" * 32}, (0, 0, 0)),
    ({"born_host": ("::1", 1)}, (0, 0, 0)), ({"store_host": ("1.2.3", 1)}, (0, 0, 0)),
    ({"store_host": ("1.2.3.4", 1 << 31)}, (0, 0, 0)), ({"born_host": "host"}, (0, 0, 0))])
def test_write_stored_batch_of_edge_cases(change, args):
    for changed in (slice(None), slice(0, 1), slice(-1, None)):  # all, the first, the last
        records, props = _usual_batch(3)
        for record in records[changed]:
            for name, value in change.items():
                setattr(record, name, value)
        _same_stored_batch(records, props, *args)


@pytest.mark.parametrize("props", [[], [b"a"], [b"a", b"b", b"c", b"d"], [b"a", "b", b"c"],
                                   [b"a", None, b"c"], [b"a", b"b", _TOO_LONG]])
def test_write_stored_batch_of_other_properties(props):
    _same_stored_batch(_usual_batch(3)[0], props, 1, 2, 3)


def test_write_stored_batch_of_no_records():
    assert speedups.write_stored_batch(bytearray(9), 0, 0, [], [], 0, 0, 0) is None
    assert _same_stored_batch([], [], 0, 0, 0)[:2] == ("raised", IndexError)


_RECORD = m.MessageRecord("T")


@pytest.mark.parametrize("args, error", [
    ((bytearray(9), 0, 0, 5, [], 0, 0, 0), TypeError),
    ((bytearray(9), 0, 0, [], 5, 0, 0, 0), TypeError),
    ((bytearray(9), 0, 0, [], [], 0, 0), TypeError),
    ((bytearray(9), "0", 0, [], [], 0, 0, 0), TypeError),
    ((bytearray(9), 0, 0.0, [], [], 0, 0, 0), TypeError),
    ((b"123456789", 0, 0, [_RECORD], [b""], 0, 0, 0), BufferError),
    ((None, 0, 0, [_RECORD], [b""], 0, 0, 0), TypeError),
    ((bytearray(9), 0, 0, [object()], [b""], 0, 0, 0), AttributeError),
    ((bytearray(9), 0, 0, [None], [b""], 0, 0, 0), AttributeError)])
def test_write_stored_batch_of_wrong_arguments(args, error):
    assert _outcome(speedups.write_stored_batch, *args)[:2] == ("raised", error)


@pytest.mark.parametrize("name, host", [
    ("born_host", ("1.2.3.4\x00junk", 5)), ("store_host", ("5.6.7.8\x00", 9))])
def test_write_stored_batch_of_an_address_with_a_nul(name, host):
    """Python's inet_pton refuses an address with a NUL (CodecError); C's reads it up to the
    NUL and encodes the record as if the address were what precedes it."""
    records, props = _usual_batch(2)
    for record in records:
        setattr(record, name, host)
    outcome = _same_stored_batch(records, props, 1, 2, 3)
    assert outcome[:2] == ("raised", CodecError)


@pytest.mark.parametrize("name, value", [
    ("topic", "\ud800"), ("born_host", ("\ud800", 5)), ("store_host", ("1.2.3.\udcff", 5))])
def test_write_stored_batch_of_text_not_utf8(name, value):
    """Text with a lone surrogate: Python raises CodecError, as for any field it cannot
    encode; the wrapper must raise it too (C raises UnicodeEncodeError)."""
    records, props = _usual_batch(2)
    for record in records:
        setattr(record, name, value)
    for writer in (m.python_write_stored_batch, m.write_stored_batch):
        assert _outcome(writer, bytearray(500), 0, 200, copy.deepcopy(records), props, 1, 2,
                        3)[:2] == ("raised", CodecError)


@pytest.mark.parametrize("change", [{}, {"store_host": ("::1", 5)}, {"magic_code": _V2}])
def test_write_stored_batch_of_an_iterator_of_properties(change):
    """Python takes properties from any iterable; the wrapper answers the same for an
    iterator, also when the C function declines the batch after reading the iterator."""
    records, props = _usual_batch(2, **change)
    data = m.encode_stored_batch(copy.deepcopy(records), props, 1, 2, 3)[0]
    python_buffer, buffer = bytearray(len(data)), bytearray(len(data))
    python = m.python_write_stored_batch(python_buffer, 0, len(data), copy.deepcopy(records),
                                         iter(props), 1, 2, 3)
    assert m.write_stored_batch(buffer, 0, len(data), records, iter(props), 1, 2, 3) == python
    assert buffer == python_buffer == data


# ---------------------------------------------------------------- memory and references

def _batch_records_call(i):
    data = _batch_body([(i, b"b%d" % i, b"a\x01%d\x02\xff" % i), (0, b"", b"")])
    prototype = m.MessageRecord("T%d" % (i % 3), queue_id=i)
    speedups.batch_records(data, b"C\x01%d" % i, {"C": str(i)}, prototype, m.BatchRecord)
    speedups.batch_records(memoryview(data)[:-3], b"", {}, prototype, m.BatchRecord)
    _outcome(speedups.batch_records, data, b"", {}, None, m.BatchRecord)
    _outcome(speedups.batch_records, data, b"", {}, prototype, m.MessageRecord)
    _outcome(speedups.batch_records, "data", b"", {}, prototype, m.BatchRecord)


def _check_call(i):
    records = _decoded(3, "T%d" % (i % 3))
    speedups.check_batch_records(records, records[0].topic, 1, 2)
    _outcome(speedups.check_batch_records, records + [object()], records[0].topic, 1, 2)
    records[1].stored_properties = None
    speedups.check_batch_records(records, records[0].topic, 1, 2)
    _outcome(speedups.check_batch_records, records, records[0].topic, 1, "2")


def _host_flags_call(i):
    records = _decoded(3)
    born, store = records[0].born_host, records[0].store_host
    speedups.fix_batch_host_flags(records, born, store, 16 * (i % 4))
    records[2].sys_flag = 1 << 70
    speedups.fix_batch_host_flags(records, born, store, 0)
    _outcome(speedups.fix_batch_host_flags, records + [None], born, store, 0)


def _encode_call(i):
    records, props = _usual_batch(3)
    buffer = bytearray(1000)
    total = sum(r.store_size for r in records)
    speedups.write_stored_batch(buffer, i % 9, total, records, props, i, i * 1000, i)
    speedups.write_stored_batch(buffer, 0, total, records, props[:2], i, 0, 0)
    speedups.write_stored_batch(buffer, 0, total + 1, records, props, i, 0, 0)
    _outcome(speedups.write_stored_batch, buffer, 999, total, records, props, i, 0, 0)
    records[2].store_host = ("::1", i)
    speedups.write_stored_batch(buffer, 0, total, records, props, i, 0, 0)
    _outcome(speedups.write_stored_batch, buffer, 0, total, records + [None], props + [b""],
             i, 0, 0)
    records[0].born_host = ("\ud800", i)
    _outcome(speedups.write_stored_batch, buffer, 0, total, records, props, i, 0, 0)


@pytest.mark.parametrize("call", [_batch_records_call, _check_call, _host_flags_call,
                                  _encode_call])
def test_no_memory_grows(call):
    assert _growth(call) < 16 * 1024


def _references(*objects):
    return [sys.getrefcount(o) for o in objects]


def test_batch_records_keeps_no_reference():
    data, raw, parsed = bytearray(_GOOD + _GOOD), b"C\x01d", {"C": "d"}
    prototype = m.MessageRecord("T")
    arguments = (data, raw, parsed, prototype, m.BatchRecord)
    counts = _references(*arguments)
    for _ in range(200):
        speedups.batch_records(*arguments)
        speedups.batch_records(data[:-1], raw, parsed, prototype, m.BatchRecord)
        _outcome(speedups.batch_records, data, raw, parsed, prototype, m.MessageRecord)
    assert _references(*arguments) == counts
    data.append(0)  # no buffer export is left either


def test_check_batch_records_keeps_no_reference():
    records, topic, queue_id = _decoded(), "T", 1 << 40
    for record in records:
        record.queue_id = queue_id
    speedups.check_batch_records(records, topic, queue_id, 1)
    counts = _references(records, topic, queue_id, *records)
    for _ in range(200):
        speedups.check_batch_records(records, topic, queue_id, 1)
        speedups.check_batch_records(records, topic, queue_id + 1, 1)
        _outcome(speedups.check_batch_records, records + [None], topic, queue_id, 1)
    assert _references(records, topic, queue_id, *records) == counts


def test_write_stored_batch_keeps_no_reference():
    records, props = _usual_batch(3)
    buffer = bytearray(1000)
    total = sum(r.store_size for r in records)
    store_timestamp = 1 << 50  # a fresh int the records keep (once each)
    speedups.write_stored_batch(buffer, 0, total, records, props, store_timestamp, 0, 0)
    counts = _references(buffer, records, props, store_timestamp, *records, *props)
    for _ in range(200):
        speedups.write_stored_batch(buffer, 0, total, records, props, store_timestamp, 0, 0)
        speedups.write_stored_batch(buffer, 0, total, records, props[:2], store_timestamp, 0, 0)
        _outcome(speedups.write_stored_batch, buffer, 0, total, records + [None],
                 props + [b""], store_timestamp, 0, 0)
        _outcome(speedups.write_stored_batch, buffer, 999, total, records, props,
                 store_timestamp, 0, 0)
    assert _references(buffer, records, props, store_timestamp, *records, *props) == counts
    buffer.append(0)  # no buffer export is left either


# ---------------------------------------------------------------- the batch's host bits

_SYS_FLAGS = st.one_of(INT32, st.sampled_from([0, 16, 32, 48, 0x80, True, 1 << 40, "x", None]))


@st.composite
def _hosted_batches(draw):
    """A decoded batch whose records may have been given other sys flags, or host tuples
    that are equal to the first's without being them, or other hosts."""
    records = m.decode_batch_records(_batch_body([(0, b"b", b"")] * draw(st.integers(1, 4))),
                                     {}, draw(_prototypes()))
    for record in records:
        change = draw(st.sampled_from(["none", "none", "sys_flag", "equal", "other"]))
        if change == "sys_flag":
            record.sys_flag = draw(_SYS_FLAGS)
        elif change == "equal":
            record.born_host = tuple(list(record.born_host))
        elif change == "other":
            record.store_host = draw(HOSTS)
    return records


@settings(max_examples=400, deadline=None)
@given(_hosted_batches())
def test_fix_batch_host_flags_with_and_without_speedups(records):
    """The store's host bits of a batch: the same records, or the same error, either way."""
    twin = copy.deepcopy(records)
    fix = defaultstore.DefaultMessageStore._fix_batch_host_flags
    ours = _outcome(fix, records)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(defaultstore, "speedups", None)
        assert _outcome(fix, twin) == ours
    assert _all_slots(records) == _all_slots(twin)


@pytest.mark.parametrize("born, store, flags", [
    (("10.0.0.1", 1), ("10.0.0.2", 2), 0), (("::1", 1), ("10.0.0.2", 2), 16),
    (("10.0.0.1", 1), ("fe80::1", 2), 32), (("::1", 1), ("::2", 2), 48)])
def test_fix_batch_host_flags_sets_a_decoded_batch(born, store, flags):
    """A batch the broker decoded is done in C (True), stale bits cleared."""
    prototype = m.MessageRecord("T", sys_flag=0x80 | 48 - flags, born_host=born,
                                store_host=store)
    records = m.decode_batch_records(_batch_body([(0, b"b", b"")] * 3), {}, prototype)
    assert speedups.fix_batch_host_flags(records, born, store, flags) is True
    assert [r.sys_flag for r in records] == [0x80 | flags] * 3
    assert speedups.fix_batch_host_flags(records, born, store, flags) is True
    assert speedups.fix_batch_host_flags(records, born, tuple(list(store)), flags) is False
    assert speedups.fix_batch_host_flags(records, born, store, 64) is False
    assert speedups.fix_batch_host_flags([], born, store, flags) is True
    assert _outcome(speedups.fix_batch_host_flags, records, born, store, "0")[:2] == (
        "raised", TypeError)
    assert _outcome(speedups.fix_batch_host_flags, [None], born, store, 0)[:2] == (
        "raised", AttributeError)


# ---------------------------------------------------------------- fields straight from slots

def _one_record_body():
    return _batch_body([(7, b"body", b"a\x01b")])


def test_a_record_type_changed_after_use_is_read_anew():
    """The C functions use a record type's slot offsets only while the type is unchanged:
    a property put on the class afterwards is what they read and set, and taking it away
    brings the slot back."""
    class Shadowed(m.BatchRecord):
        __slots__ = ()

    records = speedups.batch_records(_one_record_body(), b"", {}, m.MessageRecord("T"),
                                     Shadowed)
    measured = speedups.check_batch_records(records, "T", 0, 1)
    seen = []
    Shadowed.body = property(lambda self: b"x" * 100)
    Shadowed.magic_code = property(lambda self: 0, lambda self, value: seen.append(value))
    try:
        assert speedups.check_batch_records(records, "T", 0, 1)[1] == measured[1] + 96
        assert seen == [_V1]
        assert _outcome(speedups.batch_records, _one_record_body(), b"", {},
                        m.MessageRecord("T"), Shadowed)[:2] == ("raised", AttributeError)
    finally:
        del Shadowed.body, Shadowed.magic_code
    assert speedups.check_batch_records(records, "T", 0, 1) == measured
    assert records[0].magic_code == _V1


def test_a_slot_of_another_class_is_not_taken_for_the_records():
    """A class attribute that is another class's slot descriptor refuses the record, as
    getattr and setattr do (TypeError), instead of being read at that class's offset."""
    class Other:
        __slots__ = tuple("s%d" % i for i in range(40))

    class Foreign(m.BatchRecord):
        __slots__ = ()
        body = Other.__dict__["s39"]

    assert _outcome(speedups.batch_records, _one_record_body(), b"", {},
                    m.MessageRecord("T"), Foreign)[:2] == ("raised", TypeError)
    record = object.__new__(Foreign)
    for name in _SLOTS:
        source = m.decode_batch_records(_one_record_body(), {}, m.MessageRecord("T"))[0]
        if name != "body" and hasattr(source, name):
            setattr(record, name, getattr(source, name))
    assert _outcome(speedups.check_batch_records, [record], "T", 0, 1)[:2] == (
        "raised", TypeError)


def test_more_record_types_than_the_table_holds():
    """Beyond the record types whose slots are kept (four), the others go through getattr
    and setattr and answer the same."""
    data = _batch_body([(i, b"body%d" % i, b"a\x01%d" % i) for i in range(3)])
    raw, parsed = b"C\x01d", {"C": "d"}
    expected = m.python_batch_records(data, raw, parsed, m.MessageRecord("T"))
    checked = commitlog.check_batch(copy.deepcopy(expected), 1 << 22)[1:]
    types = [type("Record%d" % i, (m.BatchRecord,), {"__slots__": ()}) for i in range(7)]
    for _ in range(2):
        for record_type in types:
            records = speedups.batch_records(data, raw, parsed, m.MessageRecord("T"),
                                             record_type)
            assert {type(r) for r in records} == {record_type}
            assert [_slots(r)[1] for r in records] == [_slots(r)[1] for r in expected]
            assert speedups.check_batch_records(records, "T", 0, 1) == checked
