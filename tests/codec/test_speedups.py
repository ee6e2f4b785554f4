"""The C speedups (``rmqproto.codec._speedups``) against their Python twins: the properties
split, pick and join, ``String.hashCode`` continued from a prefix,
the reput's scan of usual records, index puts and consume-queue units
(``docs/speedups.md``), on edge cases, random inputs and corrupt segments; then that the C functions
neither leak nor crash on out-of-range arguments. The store's C functions:
``test_speedups_store``."""

import collections
import gc
import mmap
import struct
import sys
import tracemalloc

import pytest
from hypothesis import given, settings, strategies as st

from rmqproto.codec import consumequeue as cq, indexfile as ix, message as m
from rmqproto.codec.javalang import masked_crc32, python_java_string_hash_continued
from rmqproto.codec.native import speedups
from rmqproto.errors import CodecError
from support.recordstrategies import INT32, INT64, properties
from support.speedups import require_speedups
from test_dispatch_scan import _endings, _flips, _raw_record, _records, _segment, _state

require_speedups()


def _outcome(fn, *args):
    """What ``fn(*args)`` returns, or the type and message of what it raises."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome compared
        return "raised", type(exc), str(exc)


def _with_and_without(module, run):
    """``run()`` with the C speedups and with ``module.speedups`` set to None."""
    ours = run()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "speedups", None)
        return ours, run()


# ---------------------------------------------------------------- string_to_properties

def _same_properties(text):
    """The C split equals the Python one: same pairs in the same order, plain ``str`` values."""
    ours = speedups.string_to_properties(text)
    assert list(ours.items()) == list(m.python_string_to_properties(text).items())
    assert all(type(x) is str for pair in ours.items() for x in pair)


@pytest.mark.parametrize("text", [
    "", "\x01", "\x02", "\x01\x02", "\x02\x02\x02", "a", "a\x01", "\x01b", "a\x01\x02b",
    "TAGS\x01a", "TAGS\x01a\x02", "\x02TAGS\x01a", "a\x01b\x01c", "a\x01\x01b", "a\x02\x01b",
    "a\x01b\x02c\x01d\x02a\x01e", "a\x01b\x02a\x01", "a\x01b\x02\x01c\x02a\x01z",
    "a\x01b\x02\x02c\x01d\x02\x02", "\x00\x01\x00",
    "ключ\x01значение😀\x02😀\x01\U0010FFFF",
    "\udcff\x01\udc80\x02\ud800\x01\udfff", "é" * 300 + "\x01" + "x" * 70000,
])
def test_properties_edge_cases(text):
    _same_properties(text)


class _Text(str):
    pass


def test_properties_of_a_str_subclass():
    _same_properties(_Text("a\x01b\x02c\x01d"))
    assert type(next(iter(speedups.string_to_properties(_Text("a\x01b"))))) is str


@pytest.mark.parametrize("value", [None, "", 0, b"", [], bytearray()])
def test_properties_of_nothing(value):
    assert speedups.string_to_properties(value) == m.python_string_to_properties(value) == {}


@pytest.mark.parametrize("value", [b"TAGS\x01a", bytearray(b"x"), 7, ["TAGS\x01a"]])
def test_properties_of_a_truthy_non_str_are_refused(value):
    with pytest.raises(TypeError):
        speedups.string_to_properties(value)
    with pytest.raises((TypeError, AttributeError)):  # Python's split may not be there
        m.python_string_to_properties(value)


_SEPARATED = st.text(st.one_of(st.sampled_from("\x01\x02\x01\x02ab"), st.characters()),
                     max_size=40)
_ESCAPED = st.binary(max_size=40).map(lambda raw: raw.decode("utf-8", "surrogateescape"))


@settings(max_examples=300, deadline=None)
@given(st.one_of(_SEPARATED, _ESCAPED, st.text(max_size=30)))
def test_properties_random(text):
    _same_properties(text)


# ---------------------------------------------------------------- pick_properties

def _same_pick(properties, names, drop):
    """The C pick equals the Python one: the same pairs in the same order, or the same error
    (``names`` a function giving them: an iterator is read once)."""
    make = names if callable(names) else lambda: names
    ours = _outcome(speedups.pick_properties, properties, make(), drop)
    python = _outcome(m.python_pick_properties, properties, make(), drop)
    if isinstance(ours, dict):
        ours, python = list(ours.items()), list(python.items())
    assert ours == python
    return ours


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.one_of(_SEPARATED, _ESCAPED), _SEPARATED, max_size=8), st.randoms(),
       st.lists(st.one_of(_SEPARATED, st.sampled_from(["WAIT", "a"])), max_size=3))
def test_pick_properties_random(properties, random, drop):
    names = list(properties)
    random.shuffle(names)
    for picked in (names, tuple(names), names[::2]):
        _same_pick(properties, picked, tuple(drop))
        _same_pick(properties, lambda: iter(picked), set(drop))


class _Missing(dict):
    def __missing__(self, name):
        return name * 2


class _Refusing:
    def __contains__(self, name):
        raise ValueError("no %s" % name)


@pytest.mark.parametrize("properties, names, drop", [
    ({}, (), ()), ({"a": "b"}, ("a",), ()), ({"a": "b"}, ("a",), ("a",)),
    ({"a": "b", "c": "d"}, ("c", "a"), ("x",)), ({"a": "b", "c": "d"}, ["c", "a", "c"], []),
    ({"a": None, 1: 2}, (1, "a"), "a"), ({"a": "b"}, ("a", "z"), ()), ({"a": "b"}, ("z",), "z"),
    ({"a": "b"}, ([],), ()), ({"a": "b"}, "a", ()), (_Missing(a="b"), ("a", "z"), ()),
    (collections.UserDict(a="b"), ("a",), ()), ({"a": "b"}, 5, ()), ({"a": "b"}, ("a",), 5),
    ({"a": "b"}, ("a",), _Refusing()), ({"a": "b"}, (), _Refusing()), (None, ("a",), ()),
    ({"a": "b"}, ([],), ([],)),
])
def test_pick_properties_edge_cases(properties, names, drop):
    _same_pick(properties, names, drop)


def test_pick_properties_stops_at_what_names_raise():
    def names():
        yield "a"
        raise ValueError("stop")
    assert _same_pick({"a": "b"}, names, ()) == ("raised", ValueError, "stop")


# ---------------------------------------------------------------- properties_utf8

class _Name(str):
    def __add__(self, other):
        return "renamed" + str.__add__(self, other)


def _same_utf8(properties):
    """The C join equals the Python one, or leaves ``properties`` to it (None)."""
    ours = speedups.properties_utf8(properties)
    python = m.python_properties_utf8(properties)
    assert ours is None or (type(ours) is bytes and ours == python)
    assert m.properties_utf8(properties) == python
    return ours


@pytest.mark.parametrize("properties", [
    {}, {"a": "b"}, {"a": ""}, {"": "b"}, {"": ""}, {"a": None}, {"a": None, "b": "c"},
    {"a": "b", "c": None}, {"a": "b", "c": None, "d": "e"}, {"\x01": "\x02", "\x00": "\x00"},
    {"ключ": "значение😀", "😀": "\U0010FFFF", "é": "x"}, {"a": "é", "b": "\uffff"},
    {"\udcff": "\udc80", "x": "\udcc3\udca9"}, {"TAGS": "é" * 300, "K": "x" * 70000},
])
def test_properties_utf8_edge_cases(properties):
    assert _same_utf8(properties) is not None


@pytest.mark.parametrize("properties", [
    {"a": "\ud800"}, {"a": "b", "\udfff": "c"}, {"a": "\udc7f"}, {"a": 1}, {1: "a"},
    {"a": b"b"}, {None: "a"}, {"a": _Text("b")}, {_Name("a"): "b"}, None, "", [],
    collections.OrderedDict(a="b"), collections.UserDict(a="b"),
])
def test_properties_utf8_leaves_the_unusual_to_python(properties):
    assert _same_utf8(properties) is None


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.one_of(_SEPARATED, _ESCAPED),
                       st.one_of(_SEPARATED, _ESCAPED, st.none()), max_size=8))
def test_properties_utf8_random(properties):
    if _same_utf8(properties) is None:  # only where a character does not encode
        with pytest.raises(UnicodeEncodeError):
            m.properties_to_string(properties).encode("utf-8", "surrogateescape")


# ---------------------------------------------------------------- hash continued

_PREFIXES = st.one_of(INT32, st.integers(), st.integers(-(1 << 200), 1 << 200), st.booleans())
_HASHED = st.one_of(
    st.text(max_size=30),
    st.text(st.characters(max_codepoint=127), max_size=30),
    st.text(st.characters(min_codepoint=48, max_codepoint=78), max_size=30),
    st.text(st.characters(min_codepoint=0x10000), max_size=10),
    st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=10),
    _ESCAPED,
    st.text(st.characters(max_codepoint=127), min_size=630, max_size=650))


def _same_hash(prefix, text):
    ours = speedups.java_string_hash_continued(prefix, text)
    assert ours == python_java_string_hash_continued(prefix, text)
    assert type(ours) is int and -(1 << 31) <= ours < (1 << 31)


@settings(max_examples=300, deadline=None)
@given(_PREFIXES, _HASHED)
def test_hash_random(prefix, text):
    _same_hash(prefix, text)


@pytest.mark.parametrize("prefix", [0, 1, -1, (1 << 31) - 1, -(1 << 31), 1 << 31, 1 << 32,
                                    (1 << 64) + 5, -(1 << 64) - 5, 10 ** 40, -(10 ** 40), True])
@pytest.mark.parametrize("text", [
    "", "a", "0", "TopicTest", "\x00", "\xff", "é", "中文", "😀", "a😀b", "\ud800", "\udcff",
    "\udbff\udfff", "\U0010FFFF", "x" * 640, "x" * 641, "N" * 640, "é" * 5000, "😀" * 2100,
    "a" * 100000])
def test_hash_edge_cases(prefix, text):
    _same_hash(prefix, text)


@pytest.mark.parametrize("args", [(), (0,), (0, "a", "b"), (1.5, "a"), (None, "a"), ("0", "a"),
                                  (0, b"a"), (0, None), (0, 5)])
def test_hash_rejects_what_is_not_an_int_and_a_str(args):
    with pytest.raises(TypeError):
        speedups.java_string_hash_continued(*args)


# ---------------------------------------------------------------- take_usual_records

def _usual(i, topic="TopicTest"):
    return m.encode_record(m.MessageRecord(
        topic, b"body%d" % i, {"TAGS": "t%d" % i, "UNIQ_KEY": "U%d" % i}, queue_id=i % 4,
        queue_offset=i, commit_log_offset=1000 + i, store_timestamp=1700000000000 + i))


def _dispatch_fields(data, offsets):
    return [m.decode_dispatch_fields(data, offset) for offset in offsets]


def _ordered(fields):
    """Dispatch tuples with each properties dict as its list of pairs (tuples compare dicts
    without their order)."""
    return [f[:7] + (list(f[7].items()),) + f[8:] for f in fields]


def _segment_of(blobs):
    """The bytes of ``blobs`` back to back and the offset of each."""
    offsets, pos = [], 0
    for blob in blobs:
        offsets.append(pos)
        pos += len(blob)
    return b"".join(blobs), offsets


def test_take_usual_records_stops_at_any_other_record():
    v2 = m.encode_record(m.MessageRecord("T", b"x", magic_code=m.MESSAGE_MAGIC_CODE_V2))
    v6 = m.encode_record(m.MessageRecord("T", b"x", store_host=("::1", 9)))
    blobs = [_usual(0), _usual(1), v2, _usual(2), v6, _usual(3, "Other"), _usual(4, "OtherX"),
             m.encode_blank(100)]
    data, offsets = _segment_of(blobs)
    for stop_index, start_index in ((2, 0), (2, 1), (4, 3), (7, 5)):
        out = []
        end = speedups.take_usual_records(data, offsets[start_index], len(data), 100, False, out)
        assert end == offsets[stop_index]
        assert _ordered(out) == _ordered(_dispatch_fields(data, offsets[start_index:stop_index]))
    assert speedups.take_usual_records(data, offsets[2], len(data), 100, False, []) == offsets[2]


def test_take_usual_records_counts_what_the_list_holds_and_stops_at_stop_at():
    data, offsets = _segment_of([_usual(i) for i in range(6)])
    out = ["earlier", "earlier"]
    assert speedups.take_usual_records(data, 0, len(data), 4, False, out) == offsets[2]
    assert out[2:] == _dispatch_fields(data, offsets[:2])
    assert speedups.take_usual_records(data, 0, len(data), 2, False, out) == 0
    for stop_at, read in ((offsets[3], 3), (offsets[3] + 1, 4), (1, 1), (0, 0)):
        out = []
        assert speedups.take_usual_records(data, 0, stop_at, 100, False, out) == (
            offsets[read] if read < len(offsets) else len(data))
        assert out == _dispatch_fields(data, offsets[:read])


def test_take_usual_records_checks_the_body_crc_only_with_crc():
    bad = m.encode_record(m.MessageRecord("T", b"body", body_crc=masked_crc32(b"body") ^ 1))
    data, offsets = _segment_of([_usual(0), bad, _usual(1)])
    out = []
    assert speedups.take_usual_records(data, 0, len(data), 100, True, out) == offsets[1]
    assert speedups.take_usual_records(data, 0, len(data), 100, False, []) == len(data)
    assert out == _dispatch_fields(data, offsets[:1])


def test_take_usual_records_rejects_lengths_beyond_their_fields():
    for data in (_raw_record(200, b"t" * 200, b"TAGS\x01a"), _raw_record(1, b"t", b"p" * 40000)):
        assert speedups.take_usual_records(data, 0, len(data), 100, False, []) == 0
    edge = _raw_record(127, b"t" * 127, b"p\x01" + b"q" * 32765)
    out = []
    assert speedups.take_usual_records(edge, 0, len(edge), 100, False, out) == len(edge)
    assert out == [m.decode_dispatch_fields(edge)]


def _mmap_of(data):
    mapped = mmap.mmap(-1, len(data))
    mapped.write(data)
    return mapped


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview, _mmap_of,
                                  lambda d: memoryview(b"pad" + d + b"pad")[3:-3]])
def test_take_usual_records_reads_any_buffer(wrap):
    data, offsets = _segment_of([_usual(i) for i in range(3)] + [m.encode_blank(50)])
    buffer = wrap(data)
    out = []
    assert speedups.take_usual_records(buffer, 0, len(data), 100, True, out) == offsets[3]
    assert out == _dispatch_fields(data, offsets[:3])
    scan = m.iter_dispatch_fields(buffer, 0, True)
    assert scan.take(100) == out and (scan.stop, scan.position) == ("blank", offsets[3])


_HUGE = 1 << 70


@pytest.mark.parametrize("position", [-1, -100, -(1 << 62), 0, 1, 87, 88, 200, 10 ** 9, _HUGE,
                                      -_HUGE])
@pytest.mark.parametrize("stop_at", [-1, 0, 1, 100, 10 ** 9, (1 << 63) - 1, _HUGE])
def test_take_usual_records_out_of_range_positions(position, stop_at):
    data = _usual(0) + b"\x07" * 100
    out = []
    result = _outcome(speedups.take_usual_records, data, position, stop_at, 100, False, out)
    if abs(position) == _HUGE or stop_at == _HUGE:
        assert result[:2] == ("raised", OverflowError) and out == []
    elif position == 0 and stop_at > 0:
        assert result == len(_usual(0)) and len(out) == 1
    else:
        assert result == position and out == []


@pytest.mark.parametrize("args", [
    (), (b"", 0, 1, 1, None), (b"", 0, 1, 1, None, [], 0), (b"", 0, 1, 1, None, ()),
    ("text", 0, 1, 1, False, []), (None, 0, 1, 1, False, []), (b"", 0.0, 1, 1, False, []),
    (b"", 0, "1", 1, False, []), (b"", 0, 1, None, False, [])])
def test_take_usual_records_rejects_bad_arguments(args):
    with pytest.raises(TypeError):
        speedups.take_usual_records(*args)


class _Broken(Exception):
    pass


class _Undecided:
    """A ``check_crc`` whose truth cannot be told."""

    def __bool__(self):
        raise _Broken()


def test_take_usual_records_passes_on_what_check_crc_raises():
    data = _usual(0) + _usual(1)
    out = ["earlier"]
    with pytest.raises(_Broken):
        speedups.take_usual_records(data, 0, len(data), 100, _Undecided(), out)
    assert out == ["earlier"]


# ---------------------------------------------------------------- DispatchScan.take, C and Python

def _read_in_batches(scan, count, step):
    """Everything ``scan.take`` gives, ``count`` at a time, the limit moved ``step`` bytes on
    each time it is reached (no limit for step None)."""
    taken = []
    limit = None if step is None else scan.position + step
    while scan.stop is None:
        batch = scan.take(count, limit)
        assert len(batch) <= count
        taken += batch
        reached = limit is not None and scan.position >= limit
        if not reached and len(batch) < count:
            break  # take() ends a batch early only at a limit or a stop
        if reached:
            limit = scan.position + step
    return taken


def _scan_outcome(read, scan):
    fields = _outcome(read, scan)
    return (fields if fields and fields[0] == "raised" else _ordered(fields)), _state(scan)


def _check_take(buffer, start, check_crc, count, step):
    """take() with the C speedups and without them reads what iteration reads."""
    one_by_one = m.RecordScan(buffer, start, check_crc, m.decode_dispatch_fields)
    expected = _scan_outcome(list, one_by_one)

    def batches(scan):
        return _read_in_batches(scan, count, step)

    assert _scan_outcome(batches, m.iter_dispatch_fields(buffer, start, check_crc)) == expected
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(m, "speedups", None)
        assert _scan_outcome(batches, m.iter_dispatch_fields(buffer, start, check_crc)) == expected


_RAW_PIECES = [b"\x01", b"\x02", b"\x01", b"\x02", b"TAGS", b"a", b"\xff", b"\x80", b"\xc3",
               b"\xe4\xb8", b"\xe4\xb8\xad", b"\xed\xa0\x80", b"\xf0\x9f\x98", b"\xf0\x9f\x98\x80"]
#: Stored properties strings as no encoder writes them: invalid UTF-8 (whole or cut
#: sequences), separators anywhere, repeated names, empty fragments.
_RAW_PROPERTIES = st.one_of(st.lists(st.sampled_from(_RAW_PIECES), max_size=16).map(b"".join),
                            st.binary(max_size=40))
#: Topics the scan's one-topic cache must tell apart (same length, other bytes; invalid UTF-8).
_TOPICS = st.one_of(st.sampled_from(["TopicA", "TopicB", "T", "é", "\udcff", "\udcff\udcfe"]),
                    st.text("ab", min_size=125, max_size=129))


def _retopic(record, topic):
    record.topic = topic
    too_long = len(topic.encode("utf-8", "surrogateescape")) > m.MAX_TOPIC_LENGTH_V1
    if record.magic_code == m.MESSAGE_MAGIC_CODE and too_long:
        record.magic_code = m.MESSAGE_MAGIC_CODE_V2
    return record


#: Usual records (version 1 unless the topic is long, IPv4 hosts), the ones read in C.
_usual_records = st.builds(
    m.MessageRecord, topic=_TOPICS, body=st.binary(max_size=32), properties=properties(),
    queue_id=INT32, queue_offset=INT64, commit_log_offset=INT64, sys_flag=INT32,
    store_timestamp=INT64, prepared_transaction_offset=INT64)
_entries = st.tuples(st.one_of(_usual_records, _usual_records, _records),
                     st.one_of(st.none(), _TOPICS), st.one_of(st.none(), _RAW_PROPERTIES))
#: (field, value): one length field of one record set to a value near or far from the truth.
_LENGTH_FIELDS = ("total", "body_length", "topic_length", "properties_length")
_corruptions = st.lists(st.tuples(st.integers(0, 7), st.sampled_from(_LENGTH_FIELDS),
                                  st.one_of(st.integers(-2, 2), INT32)), max_size=2)


def _length_fields(record, blob, props):
    """(position, size) in ``blob`` of each length field of ``record``."""
    fixed = m._FIXED[record.sys_flag & 0x30].size
    topic_at = fixed + len(record.body)
    return {"total": (0, 4), "body_length": (fixed - 4, 4),
            "topic_length": (topic_at, 1 if record.magic_code == m.MESSAGE_MAGIC_CODE else 2),
            "properties_length": (len(blob) - len(props) - 2, 2)}


def _corrupt(blob, field, value):
    """``blob`` with ``field`` (position, size) moved by ``value`` (-2..2) or set to it."""
    pos, size = field
    old = int.from_bytes(blob[pos:pos + size], "big", signed=True)
    new = old + value if -2 <= value <= 2 else value
    blob[pos:pos + size] = (new & ((1 << 8 * size) - 1)).to_bytes(size, "big")


def _build(entries, corruptions, ending, flips, cut):
    blobs = []
    for record, topic, raw in entries:
        if topic is not None:
            _retopic(record, topic)
        props = raw if raw is not None else m._properties_bytes(record.properties)
        blobs.append(bytearray(m.encode_record(record, props)))
        for index, name, value in corruptions:
            if index == len(blobs) - 1:
                _corrupt(blobs[-1], _length_fields(record, blobs[-1], props)[name], value)
    return _segment([], b"".join(blobs) + ending, flips, cut)  # flips and cut as there


@settings(max_examples=200, deadline=None)
@given(st.lists(_entries, max_size=6), st.one_of(st.just([]), _corruptions), _endings,
       st.one_of(st.just([]), _flips), st.one_of(st.none(), st.none(), st.integers(0, 900)),
       st.booleans(), st.integers(1, 4),
       st.one_of(st.none(), st.integers(1, 300)),
       st.one_of(st.just(0), st.just(0), st.integers(-20, 1000)),
       st.sampled_from([bytes, bytearray, memoryview]))
def test_take_with_and_without_speedups_reads_what_iteration_reads(
        entries, corruptions, ending, flips, cut, check_crc, count, step, start, wrap):
    """Segments of usual and other records with stored properties and topics no encoder
    writes, corrupt length fields, random byte flips and cut tails, read in batches."""
    data = _build(entries, corruptions, ending, flips, cut)
    _check_take(wrap(data), min(start, len(data)), check_crc, count, step)


@pytest.mark.parametrize("beyond", [1, 2, 100])
def test_take_from_beyond_the_end_stops_as_iteration_does(beyond):
    data = _usual(0) + _usual(1)
    _check_take(data, len(data) + beyond, False, 10, None)


@pytest.mark.parametrize("start", [-len(_usual(0)), -1, -200, 0, 5, len(_usual(0))])
def test_take_from_odd_starts(start):
    _check_take(_usual(0) + _usual(1) + m.encode_blank(40), start, True, 3, None)


@pytest.mark.parametrize("raw", [b"", b"\x02", b"\x01", b"\x01\x02\x01", b"a\x01b\x01c",
                                 b"a\x01b\x02a\x01c\x02b\x01d", b"a\x01\x02\x02b\x01c\x02",
                                 b"\xff\x01\xfe\x02\xe4\x01\xb8\xad", b"\xf0\x9f\x98\x01\x80",
                                 b"k\x01\xed\xa0\x80\xed\xb0\x80"])
def test_take_of_stored_properties_no_encoder_writes(raw):
    records = [m.MessageRecord("T", b"b", queue_offset=i) for i in range(3)]
    data = b"".join(m.encode_record(r, raw) for r in records) + bytes(16)
    _check_take(data, 0, True, 2, None)
    (fields,) = m.iter_dispatch_fields(data).take(1)
    assert list(fields[7].items()) == list(
        m.python_string_to_properties(raw.decode("utf-8", "surrogateescape")).items())


# ---------------------------------------------------------------- put_index_hashes

_SLOTS, _INDEXES = 5, 9
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def _puts(batches, slots=(), end_phy_offset=0, end_timestamp=0):
    """``put_hashes(entries, start)`` of each batch on a fresh small index whose slots hold
    ``slots``: the buffer, each batch's outcome and the header attributes."""
    buffer = bytearray(ix.index_file_size(_SLOTS, _INDEXES))
    for number, value in enumerate(slots):
        buffer[ix.slot_position(number, _SLOTS):][:4] = value.to_bytes(4, "big", signed=True)
    index = ix.IndexFile(buffer, _SLOTS, _INDEXES, end_phy_offset, end_timestamp)
    outcomes = [_outcome(index.put_hashes, entries, start) for entries, start in batches]
    return bytes(buffer), outcomes, index.header


def _same_puts(batches, *args):
    ours, python = _with_and_without(ix, lambda: _puts(batches, *args))
    assert ours == python
    return ours


_HASHES = st.one_of(st.integers(-12, 12), INT32, st.booleans(), st.sampled_from(
    [_INT_MIN, _INT_MAX, _INT_MIN + 1, 1 << 31, _INT_MIN - 1, 1 << 40, -(1 << 64)]))
_LONGS = st.one_of(INT64, st.booleans(), st.sampled_from([_LONG_MIN, _LONG_MAX]))
_TIMESTAMPS = st.one_of(st.integers(-5000, 5000 * 1000), _LONGS)
_OUT_OF_LONG = st.sampled_from([_LONG_MAX + 1, _LONG_MIN - 1, 1 << 100])
_index_entries = st.one_of(
    st.tuples(_HASHES, st.one_of(_LONGS, st.integers(0, 99)), _TIMESTAMPS),
    st.tuples(_HASHES, st.one_of(_LONGS, _OUT_OF_LONG), st.one_of(_TIMESTAMPS, _OUT_OF_LONG)),
    st.tuples(_HASHES, INT64, _TIMESTAMPS).map(list))
_batches = st.lists(st.tuples(
    st.one_of(st.lists(_index_entries, max_size=12),
              st.lists(_index_entries, max_size=4).map(tuple)),
    st.one_of(st.just(0), st.just(0), st.integers(0, 5))), min_size=1, max_size=3)


@settings(max_examples=250, deadline=None)
@given(_batches, st.lists(st.one_of(st.integers(-2, 10), INT32), max_size=_SLOTS),
       st.sampled_from([0, 0, 7, 1 << 40]), st.sampled_from([0, 0, 1, 3000, 1700000000000]))
def test_put_hashes_with_and_without_speedups(batches, slots, end_phy_offset, end_timestamp):
    """Slot chains, stale slots, a file filling up mid-batch, negative elapsed times, entries
    out of range (raising with the earlier ones put), lists among the tuples."""
    _same_puts(batches, slots, end_phy_offset, end_timestamp)


@pytest.mark.parametrize("key_hash", [_INT_MIN, _INT_MIN + 1, -1, 0, _INT_MAX, True, False,
                                      1 << 31, _INT_MIN - 1, 1 << 70])
def test_put_hashes_of_odd_hashes(key_hash):
    entries = [(3, 10, 5000), (key_hash, 11, 6000), (3, 12, 7000)]
    data, outcomes, header = _same_puts([(entries, 0), (entries, 2)], (), 0, 1000)
    if -(1 << 31) <= key_hash < 1 << 31:
        assert outcomes == [3, 3] and header.index_count == 5
    else:  # struct.error from the Python loop, which the C loop left the entry to
        assert outcomes[0][:2] == ("raised", struct.error)
        assert outcomes[1] == 3 and header.index_count == 3


@pytest.mark.parametrize("entry", [(1, _LONG_MAX + 1, 0), (1, 0, _LONG_MIN - 1), (1, 1 << 99, 0)])
def test_put_hashes_out_of_range_puts_the_earlier_entries(entry):
    _, outcomes, header = _same_puts([([(1, 5, 9000), (2, 6, 9000), entry, (3, 7, 9000)], 0)])
    assert outcomes[0][:2] == ("raised", CodecError) and header.index_count == 3


@pytest.mark.parametrize("end_timestamp, timestamp", [
    (0, 5), (0, -5), (1, _LONG_MAX), (1000, 999), (1000, 1999), (1000, 2000),
    (1000, 1000 + 1000 * _INT_MAX), (1000, 1000 + 1000 * _INT_MAX + 1000), (1, _LONG_MIN)])
def test_put_hashes_time_diffs(end_timestamp, timestamp):
    """Begin timestamp 0 (the first put sets it), negative and huge elapsed times (clamped)."""
    _same_puts([([(7, 1, timestamp), (8, 2, timestamp), (7, 3, timestamp)], 0)],
               (), 0, end_timestamp)


def test_put_hashes_until_full_and_from_start():
    entries = tuple((i, i, 1000 * i) for i in range(20))
    _, outcomes, header = _same_puts([(entries, 3), (entries, 0), (entries, 25)])
    assert outcomes == [3 + _INDEXES - 1, 0, 25] and header.index_count == _INDEXES


# ---------------------------------------------------------------- encode_units

def _same_units(units):
    ours, python = _with_and_without(cq, lambda: _outcome(cq.encode_units, units))
    assert ours == python
    return ours


_UNIT_VALUES = st.one_of(INT64, st.booleans(), st.integers(-3, 3), st.sampled_from(
    [_LONG_MAX + 1, _LONG_MIN - 1, 1 << 31, _INT_MIN - 1, _INT_MAX, _INT_MIN]))
_units = st.one_of(
    st.tuples(INT64, INT32, INT64), st.tuples(INT64, INT32, INT64, INT64),
    st.tuples(_UNIT_VALUES, _UNIT_VALUES, _UNIT_VALUES),
    st.tuples(_UNIT_VALUES, _UNIT_VALUES, _UNIT_VALUES, st.integers()),
    st.builds(cq.ConsumeQueueUnit, INT64, INT32, INT64),
    st.lists(_UNIT_VALUES, min_size=2, max_size=4), st.tuples(INT64, INT32),
    st.tuples(INT64, st.just(1.5), INT64))


@settings(max_examples=250, deadline=None)
@given(st.one_of(st.lists(_units, max_size=6), st.lists(_units, max_size=3).map(tuple)))
def test_encode_units_with_and_without_speedups(units):
    _same_units(units)


@pytest.mark.parametrize("units, error", [
    ([], None), ([(0, 1, 2), cq.BLANK_UNIT, (5, 6, 7, 8)], None), ([[1, 2, 3]], None),
    ([(True, False, True)], None), ([(_LONG_MAX, _INT_MAX, _LONG_MIN)], None),
    ([(1, 2, 3), (1, 1 << 31, 3)], CodecError), ([(1, 2, _LONG_MAX + 1)], CodecError),
    ([(1, 2, 3), (1, 2)], CodecError), ([(1, "2", 3)], CodecError),
    ([(1, 2, 3), None], TypeError)])
def test_encode_units_edge_cases(units, error):
    outcome = _same_units(units)
    assert outcome[:2] == ("raised", error) if error else type(outcome) is bytes


@pytest.mark.parametrize("make", [iter, lambda units: map(tuple, units)])
@pytest.mark.parametrize("units", [[(1, 2, 3), (4, 5, 6)], [(1, 2, 3), (1, 2, 1 << 70)]])
def test_encode_units_of_an_iterator(make, units):
    ours, python = _with_and_without(cq, lambda: _outcome(cq.encode_units, make(units)))
    assert ours == python


# ---------------------------------------------------------------- memory

_ROUNDS = 1500


def _growth(call):
    """Bytes still allocated after ``_ROUNDS`` more calls of ``call(i)`` (fresh inputs each)
    than after a first ``_ROUNDS``."""
    tracemalloc.start()
    try:
        for i in range(_ROUNDS):
            call(i)
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for i in range(_ROUNDS, 2 * _ROUNDS):
            call(i)
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def _properties_call(i):
    text = "TAGS\x01t%d\x02KEYS\x01k%d\x02\x01x\x02n%d\x01\udcff" % (i, i, i)
    speedups.string_to_properties(text)
    _outcome(speedups.string_to_properties, [i])


def _pick_call(i):
    properties = {"a%d" % i: "b%d" % i, "WAIT": "true", "c": str(i)}
    speedups.pick_properties(properties, tuple(reversed(properties)), ("WAIT",))
    _outcome(speedups.pick_properties, properties, ("a", "z%d" % i), ())
    _outcome(speedups.pick_properties, properties, ("c", [i]), ())


def _utf8_call(i):
    speedups.properties_utf8({"TAGS": "t%d" % i, "K": None, "é%d" % i: "😀\udcff"})
    speedups.properties_utf8({"a": "\ud800%d" % i})
    speedups.properties_utf8({"a": i})


def _hash_call(i):
    speedups.java_string_hash_continued(i << 40, "key%d😀" % i)
    _outcome(speedups.java_string_hash_continued, i, b"x")


def _take_call(i):
    props = b"TAGS\x01t%d\x02U\x01\xff%d" % (i, i)
    data = b"".join(m.encode_record(m.MessageRecord("T%d" % (i % 3), b"b%d" % i, queue_offset=i),
                                    props) for _ in range(3))
    speedups.take_usual_records(data, 0, len(data), 100, True, [])
    _outcome(speedups.take_usual_records, data, 0, len(data), 100, _Undecided(), [])
    _outcome(speedups.take_usual_records, data, -1, _HUGE, 100, False, [])


_INDEX_BUFFER = bytearray(ix.index_file_size(_SLOTS, _INDEXES))


def _put_call(i):
    entries = [(i - 500, i, 1000 * i), (i, 1 << 62, i), [i, 1, 1], (1 << 40, 1, 1)]
    for start in range(4):
        speedups.put_index_hashes(_INDEX_BUFFER, entries, start, _INDEXES, _SLOTS, 1 + i % 8,
                                  0, i, 0)
    _outcome(speedups.put_index_hashes, b"read-only", entries, 0, 9, 5, 1, 0, 0, 0)
    _outcome(speedups.put_index_hashes, _INDEX_BUFFER, entries, 0, 9, 5, 1, 0, 1 << 70, 0)


def _units_call(i):
    speedups.encode_units([(i, i % 100, -i), cq.ConsumeQueueUnit(i, 1, 2), (1, 2, 3, i)])
    speedups.encode_units(((i, 1, 2), (i, 1 << 40, 2)))
    _outcome(speedups.encode_units, 5)


@pytest.mark.parametrize("call", [_properties_call, _pick_call, _utf8_call, _hash_call,
                                  _take_call, _put_call, _units_call])
def test_no_memory_grows(call):
    assert _growth(call) < 16 * 1024


def test_pick_properties_keeps_no_reference():
    properties = {"a" * 30: "b" * 30, "WAIT": "true", "c" * 30: "d" * 30}
    names, drop = tuple(reversed(properties)), ("WAIT",)
    objects = (properties, names, drop, *properties, *properties.values())
    counts = [sys.getrefcount(o) for o in objects]
    for _ in range(200):
        speedups.pick_properties(properties, names, drop)
        _outcome(speedups.pick_properties, properties, names + ("z",), drop)
    assert [sys.getrefcount(o) for o in objects] == counts


def test_properties_utf8_keeps_no_reference():
    properties = {"TAGS": "t" * 50, "é" * 20: "😀", "N": None, "S": "\udcff"}
    unusual = {"a": "\ud800", "b": 7}
    objects = (properties, unusual, *properties, *properties.values(), *unusual.values())
    counts = [sys.getrefcount(o) for o in objects]
    for _ in range(200):
        speedups.properties_utf8(properties)
        speedups.properties_utf8(unusual)
    assert [sys.getrefcount(o) for o in objects] == counts


def test_take_usual_records_keeps_no_reference():
    data = _usual(0) + _usual(1, "Other")
    out = []
    counts = sys.getrefcount(data), sys.getrefcount(out)
    for _ in range(200):
        speedups.take_usual_records(data, 0, len(data), 100, True, out)
        out.clear()
    assert (sys.getrefcount(data), sys.getrefcount(out)) == counts
