"""The store's C speedups (``rmqproto.codec._speedups``) against their Python twins: dispatch
requests of decoded fields, index entries of requests,
consume-queue runs and their units written into a queue's file and the checks of
one message (``check_message_record``, ``check_usual_message``), the reput of usual
records straight from their bytes (``dispatch_usual_records``), on edge cases and random inputs; then that
they do not leak.
The codec's C functions: ``test_speedups``."""

import copy
import sys

import pytest
from hypothesis import given, settings, strategies as st

from rmqproto.codec import message as m
from rmqproto.codec.indexfile import PackedEntries
from rmqproto.codec.native import speedups
from rmqproto.errors import CodecError
from rmqproto.store import commitlog, consumequeue, dispatch
from rmqproto.store.indexservice import index_entries, python_index_entries
from support.recordstrategies import HOSTS, INT32, INT64, PROPERTY_TEXT, properties
from support.speedups import require_speedups
from test_speedups import _growth, _outcome
from test_speedups_batch import _slots, same_check

require_speedups()

_SCHEDULE = dispatch.SCHEDULE_TOPIC
_ROLLBACK = m.TRANSACTION_ROLLBACK_TYPE
#: Topics, scheduled or not, some of them outside the BMP.
_TOPIC_NAMES = st.sampled_from(["TopicA", "TopicB", "é", "😀", "a😀", _SCHEDULE, _SCHEDULE])
_KEY_TEXT = st.one_of(
    st.text(st.sampled_from(" ab😀é\U0010FFFF\ud800\x00"), max_size=10),
    st.sampled_from(["", " ", "  ", "k", " k", "k ", "a  b", " a b ", "😀 \U0001F600"]))
_SYS_FLAGS = st.one_of(st.sampled_from([0, 4, 8, 12, 0x10 | 4, 0x10 | 12, 0x13, -1, -4]),
                       INT32)


def _fresh(text):
    """An equal str, another object unless it is one character long."""
    return "".join(list(text))


#: The same topic objects, and equal topics that are other objects.
_TOPICS = st.one_of(_TOPIC_NAMES, _TOPIC_NAMES.map(_fresh))


# ---------------------------------------------------------------- requests_of_fields

_DELAY_TABLES = st.one_of(st.just({}), st.sampled_from([  # {}: no level, as a bare table can be
    "1s", "1s 5s 10s", "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"]).map(
        dispatch.parse_delay_levels))
_DELAYS = st.one_of(st.sampled_from(["1", "2", "3", "0", "-1", "18", "19", "99", "x", "",
                                     " 2", "1.5", "٣", "+1", "99999999999999999999"]),
                    PROPERTY_TEXT)
_properties = st.fixed_dictionaries({}, optional={
    m.PROPERTY_TAGS: st.one_of(st.text(max_size=8), _KEY_TEXT),
    m.PROPERTY_KEYS: _KEY_TEXT,
    m.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: st.one_of(st.just(""), _KEY_TEXT),
    m.PROPERTY_DELAY_TIME_LEVEL: _DELAYS,
    "other": PROPERTY_TEXT})
#: :func:`~rmqproto.codec.message.decode_dispatch_fields` tuples.
_fields = st.tuples(_TOPICS, INT32, INT64, INT64, _SYS_FLAGS, INT64, INT64, _properties,
                    INT32)


def _same_requests(fields, table):
    ours = dispatch.requests_of_fields(fields, table)
    python = dispatch.python_requests_of_fields(fields, table)
    assert ours == python
    assert [r[11] for r in ours] == [f[7] for f in fields]
    assert [type(r[4]) for r in ours] == [type(r[4]) for r in python]
    return ours


@settings(max_examples=250, deadline=None)
@given(st.lists(_fields, max_size=6), _DELAY_TABLES)
def test_requests_of_fields_with_and_without_speedups(fields, table):
    _same_requests(fields, table)
    assert (dispatch.requests_of_fields(map(tuple, fields), table)
            == dispatch.python_requests_of_fields(map(tuple, fields), table))


@pytest.mark.parametrize("topic", [_SCHEDULE, _fresh(_SCHEDULE), "TopicA"])
@pytest.mark.parametrize("delay", [None, "1", "3", "4", "0", "-2", "x", ""])
def test_requests_of_scheduled_fields(topic, delay):
    props = {m.PROPERTY_TAGS: "tag"} if delay is None else {m.PROPERTY_DELAY_TIME_LEVEL: delay}
    (request,) = _same_requests([(topic, 3, 7, 100, 0, 1700000000000, 0, props, 90)],
                                dispatch.parse_delay_levels("1s 5s 10s"))
    scheduled = topic == _SCHEDULE and delay in ("1", "3", "4")
    assert request[4] == (1700000000000 + {"1": 1000}.get(delay, 10000) if scheduled
                          else m.tags_code(props.get(m.PROPERTY_TAGS)))


@pytest.mark.parametrize("tags", ["", "a", "TagA", "é", "中文", "😀", "a😀b", "\ud800",
                                  "\U0010FFFF" * 3, "x" * 700])
def test_requests_of_fields_tags_codes(tags):
    _same_requests([("TopicA", 0, 0, 0, 0, 0, 0, {m.PROPERTY_TAGS: tags}, 1)], {})


# ---------------------------------------------------------------- index_entries

#: Request tuples in ``DispatchRequest`` order.
_requests = st.builds(
    lambda topic, queue_id, offset, timestamp, keys, uniq, flag: (
        topic, queue_id, offset, 90, 0, timestamp, offset // 10, keys, uniq, flag, 0, {}),
    _TOPICS, st.integers(0, 3), st.integers(-5, 60), INT64, _KEY_TEXT,
    st.one_of(st.none(), st.just(""), _KEY_TEXT), _SYS_FLAGS)


def _entries_outcome(index_fn, requests, end, rollback_type):
    calls = []

    def newest_end_phy_offset():
        calls.append(end)
        if isinstance(end, Exception):
            raise end
        return end

    return _outcome(index_fn, requests, newest_end_phy_offset, rollback_type), calls


def _same_entries(requests, end=0, rollback_type=_ROLLBACK):
    ours = _entries_outcome(index_entries, requests, end, rollback_type)
    assert ours == _entries_outcome(python_index_entries, requests, end, rollback_type)
    with_keys = any(uniq or keys for _, _, _, _, _, _, _, keys, uniq, _, _, _ in requests)
    assert len(ours[1]) == with_keys  # called once, at the first request with keys
    return ours[0]


@settings(max_examples=250, deadline=None)
@given(st.lists(_requests, max_size=8), st.integers(-1, 70),
       st.sampled_from([_ROLLBACK, _ROLLBACK, m.TRANSACTION_PREPARED_TYPE, 0]))
def test_index_entries_with_and_without_speedups(requests, end, rollback_type):
    _same_entries(requests, end, rollback_type)
    _same_entries(tuple(requests), end, rollback_type)


@pytest.mark.parametrize("keys, uniq", [
    ("", None), ("", ""), ("k", None), ("", "u"), ("a b", "u"), ("  a   b  ", ""), (" ", None),
    ("😀 a😀", "😀"), ("\U0010FFFF", "\ud800"), ("a\tb", None)])
@pytest.mark.parametrize("flag", [0, m.TRANSACTION_PREPARED_TYPE, m.TRANSACTION_COMMIT_TYPE,
                                  _ROLLBACK, _ROLLBACK | 0x10])
def test_index_entries_of_keys(keys, uniq, flag):
    requests = [("TopicA", 0, 10, 90, 0, 1000, 1, keys, uniq, flag, 0, {}),
                ("😀", 1, 20, 90, 0, 2000, 2, keys, uniq, 0, 0, {}),
                ("TopicA", 0, 5, 90, 0, 3000, 3, "late", None, 0, 0, {})]
    entries, rolls = _same_entries(requests, 10)
    assert rolls is True  # the last request with keys is below the offset of the one before


@pytest.mark.parametrize("requests", [[], [("T", 0, 1, 1, 0, 1, 0, "", None, 0, 0, {})],
                                      [("T", 0, 1, 1, 0, 1, 0, "k", None, 0, 0, {})]])
def test_index_entries_pass_on_what_the_callback_raises(requests):
    _same_entries(requests, KeyError("newest"))


# ---------------------------------------------------------------- consume_queue_runs

_run_requests = st.builds(
    lambda topic, queue_id, offset, timestamp, flag: (
        topic, queue_id, offset, 90, offset * 7, timestamp, offset + 1, "", None, flag, 0,
        {}),
    _TOPICS, st.integers(0, 3), INT64, INT64, _SYS_FLAGS)


def _same_runs(requests):
    ours = dispatch.consume_queue_runs(requests)
    python = dispatch.python_consume_queue_runs(requests)
    assert list(ours[0].items()) == list(python[0].items()) and ours[1] == python[1]
    assert [(id(t), id(q)) for t, q in ours[0]] == [(id(t), id(q)) for t, q in python[0]]
    return ours


@settings(max_examples=250, deadline=None)
@given(st.lists(_run_requests, max_size=10))
def test_consume_queue_runs_with_and_without_speedups(requests):
    _same_runs(requests)
    _same_runs(tuple(requests))


def test_consume_queue_runs_edge_cases():
    assert _same_runs([]) == ({}, None)
    topic, other = "TopicA", _fresh("TopicA")
    requests = [(topic if i % 2 else other, i % 3, i, 9, i, 100 + i, i, "", None, flag, 0, {})
                for i, flag in enumerate([0, 4, 8, 12, 0x10, 0x14, 0x18, 0x1C, -4, -8, 0])]
    runs, timestamp = _same_runs(requests)
    assert timestamp == 110 and sum(map(len, runs.values())) == 6
    assert _same_runs(requests[1:2]) == ({}, None)


# ---------------------------------------------------------------- put_unit_run

_UNITS_PER_FILE = 4


def _queue_after(tmp_path, name, batches, c_runs):
    """The files and counters of a consume queue of 4-unit files after ``put_positions`` of
    each batch, with ``put_unit_run`` in C or not."""
    with pytest.MonkeyPatch.context() as patch:
        if not c_runs:
            patch.setattr(consumequeue, "put_unit_run", None)
        cq = consumequeue.ConsumeQueue("T", 0, str(tmp_path / name), _UNITS_PER_FILE * 20)
        outcomes = [_outcome(cq.put_positions, units) for units in batches]
        files = [(f.file_from_offset, f.wrote_position, bytes(f.mm)) for f in cq.queue.files]
        state = (outcomes, files, cq.max_physic_offset, cq.min_logic_offset)
        cq.queue.close()
        return state


#: Units that mostly continue one another, with gaps, repeats and values out of range.
_unit_values = st.tuples(st.sampled_from([1, 1, 1, 0, 2, -1, 5]), st.sampled_from(
    [10, 10, 10, 1, 0, -5, 2**31 - 1, 2**31]), st.one_of(st.sampled_from([0, 7, -7]), INT64),
    st.sampled_from([1, 1, 1, 1, 0, 2, -1]))


def _units(steps, start=0):
    """``(offset, size, tags_code, cq_offset)`` units built by stepping offsets forward."""
    units, offset, cq_offset = [], 0, start
    for offset_step, size, tags_code, cq_step in steps:
        offset += offset_step * 10
        cq_offset += cq_step
        units.append((offset, size, tags_code, cq_offset))
    return units


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_unit_values, max_size=9), max_size=4), st.sampled_from([0, 0, 3, 6]))
def test_put_unit_run_with_and_without_speedups(tmp_path_factory, batches, start):
    units = _units([step for batch in batches for step in batch], start)
    sizes = [len(batch) for batch in batches]
    cut = [units[sum(sizes[:k]):sum(sizes[:k + 1])] for k in range(len(sizes))]
    tmp = tmp_path_factory.mktemp("cq")
    assert _queue_after(tmp, "c", cut, True) == _queue_after(tmp, "py", cut, False)


def test_put_unit_run_edge_cases(tmp_path):
    continuing = [(0, 10, 1, 0), (10, 10, 2, 1), (20, 10, 3, 2), (30, 10, 4, 3), (40, 10, 5, 4)]
    odd = [(50, 10, 1, 5), (60, 10, 1, 6, 0), [70, 10, 1, 7], (80, 10.0, 1, 8), (90, 10, 1, 9),
           (2**63 - 5, 10, 0, 10), (0, 10, 2**63, 11), (100, -2**31 - 1, 0, 12)]
    for batches in ([continuing, odd], [continuing[1:], continuing], [odd[5:], odd[:5]]):
        assert (_queue_after(tmp_path, "c%d" % len(batches[0]), batches, True)
                == _queue_after(tmp_path, "p%d" % len(batches[0]), batches, False))
    buffer = bytearray(40)
    assert speedups.put_unit_run(buffer, 20, 0, continuing, 1, 10) == (2, 20)
    assert buffer[20:40] == b"\0" * 7 + bytes([10, 0, 0, 0, 10]) + b"\0" * 7 + b"\2"
    assert speedups.put_unit_run(buffer, 40, 0, continuing, 2, 20) == (2, 20)  # full
    assert speedups.put_unit_run(buffer, 0, 0, continuing, 0, -1) == (0, -1)  # nothing yet
    assert speedups.put_unit_run(buffer, 20, 0, continuing, 5, 20) == (5, 20)  # no unit left
    with pytest.raises(BufferError):
        speedups.put_unit_run(bytes(40), 20, 0, continuing, 1, 10)  # not writable
    with pytest.raises(TypeError):
        speedups.put_unit_run(buffer, 20, 0, iter(continuing), 1, 10)


# ---------------------------------------------------------------- dispatch_usual_records

_usual_records = st.lists(st.tuples(_TOPIC_NAMES, st.integers(0, 70), st.sampled_from([1, 1, 0, 2]),
                                    _properties, _SYS_FLAGS.map(lambda f: f & ~0x30), HOSTS),
                          max_size=40)


def _commit_log(records, damage):
    """Records at offsets from 0, logical offsets mostly one after another by queue; then
    the bytes of ``damage`` ((position, byte) pairs) written over them."""
    data = bytearray()
    next_cq = {}
    for i, (topic, queue_id, step, props, sys_flag, host) in enumerate(records):
        cq_offset = next_cq.get((topic, queue_id), 0)
        try:
            data += m.encode_record(m.MessageRecord(
                topic, b"b", props, queue_id=queue_id, queue_offset=cq_offset,
                commit_log_offset=len(data), sys_flag=sys_flag, born_host=host,
                store_host=("10.0.0.2", 2), store_timestamp=1000 + i))
        except CodecError:  # a lone surrogate has no UTF-8
            continue
        next_cq[topic, queue_id] = cq_offset + step
    for position, byte in damage:
        if data:
            data[position % len(data)] = byte
    return bytes(data)


def _python_dispatch(buffer, position, end, end_phy_offset, schedule_table):
    """What the Python twins make of the records from ``position`` to ``end``."""
    scan = m.iter_dispatch_fields(buffer, position)
    records = iter(scan)
    fields = []
    while scan.position < end:
        fields.append(next(records, None))
        assert fields[-1] is not None, "C took a record Python refuses (%s)" % scan.error
    assert scan.position == end
    requests = dispatch.python_requests_of_fields(fields, schedule_table)
    runs, store_timestamp = dispatch.python_consume_queue_runs(requests)
    entries, rolls = python_index_entries(requests, lambda: end_phy_offset, _ROLLBACK)
    return runs, entries, rolls, store_timestamp


@settings(max_examples=300, deadline=None)
@given(_usual_records, st.lists(st.tuples(INT32, st.integers(0, 255)), max_size=2),
       st.integers(0, 400), st.integers(0, 200), st.integers(1, 60), st.integers(0, 1200))
def test_dispatch_usual_records_makes_what_the_python_twins_make(
        records, damage, start, stop_at, max_count, end_phy_offset):
    buffer = _commit_log(records, damage)
    starts = [0]
    for _ in records:  # a record's start, from those before it
        if starts[-1] + 4 > len(buffer):
            break
        starts.append(starts[-1] + max(int.from_bytes(buffer[starts[-1]:starts[-1] + 4], "big"),
                                       1))
    position = starts[start % len(starts)] if start < 300 else start
    end, runs, entries, rolls, store_timestamp = speedups.dispatch_usual_records(
        buffer, position, position + stop_at, max_count, _SCHEDULE.encode(),
        lambda: end_phy_offset, _ROLLBACK)
    assert end == position or position < end <= len(buffer)
    expected = _python_dispatch(buffer, position, end, end_phy_offset, {})
    got_runs = {(topic, queue_id): [unit + (cq_offset + i,) for i, unit
                                    in enumerate(consumequeue._UNIT.iter_unpack(units))]
                for topic, queue_id, cq_offset, units in runs}
    packed = PackedEntries(entries)
    assert (got_runs, [packed[i] for i in range(len(packed))], rolls, store_timestamp) == (
        expected[0], [tuple(entry) for entry in expected[1]], expected[2], expected[3])
    assert len(runs) <= 64


# ---------------------------------------------------------------- check_message_record

_LONGEST = m.MAX_PROPERTIES_LENGTH - 2
#: Properties as the send path makes them, and odd ones (not str, surrogates, too long).
_MESSAGE_PROPERTIES = st.one_of(
    properties(), st.dictionaries(st.text(max_size=6), st.one_of(st.text(max_size=6),
                                                                  st.none()), max_size=4),
    st.sampled_from([{}, {"a": None}, {"a": 1}, {1: "a"}, {"a": "\ud800"}, {"a": "\udcff"},
                     {"k": "v" * _LONGEST}, {"k": "v" * (_LONGEST + 1)},
                     {"k": "é" * (_LONGEST // 2)}, {"k": "é" * (_LONGEST // 2 + 1)},
                     {"k": "é" * _LONGEST}, {"k": "v" * (_LONGEST - 1) + "é"}]))
class _Body(bytes):
    def __len__(self):
        return 1


_BODIES = st.one_of(st.binary(max_size=40), st.sampled_from(
    [b"b" * 100, b"b" * 101, bytearray(b"body"), memoryview(b"body"), "body😀", _Body(b"b" * 101)]))
_MAX_MESSAGE_SIZES = st.sampled_from([1 << 22, 100, 0, -1, 1 << 62, (1 << 63) - 1, 1 << 63])


@st.composite
def _message_records(draw):
    record = m.MessageRecord(
        draw(st.sampled_from(["T", "TopicA", "é" * 60, "x" * 127, "😀"])), draw(_BODIES),
        draw(_MESSAGE_PROPERTIES), queue_id=draw(st.integers(0, 3)),
        sys_flag=draw(st.sampled_from([0, 1, 4, 8, 12, 0x80])), born_host=draw(HOSTS),
        store_host=draw(HOSTS), body_crc=0, magic_code=draw(st.sampled_from([None, 7])))
    sys_flag = draw(st.sampled_from([None, 0x30, -1, 1 << 70, 1.0, "0"]))
    if sys_flag is not None:
        record.sys_flag = sys_flag
    return record


def _same_check(record, max_message_size):
    """check_message with and without the C check: same outcome, same record afterwards."""
    # a shallow copy: neither check changes the body or the properties
    return same_check(commitlog.check_message, record, copy.copy(record), max_message_size,
                      _slots)


@settings(max_examples=400, deadline=None)
@given(_message_records(), _MAX_MESSAGE_SIZES)
def test_check_message_with_and_without_speedups(record, max_message_size):
    _same_check(record, max_message_size)


_USUAL_TOPICS = st.sampled_from(["TopicA", "é" * 63, "é" * 64, "x" * 127, "x" * 128, "", ".",
                                 "..", "...", "a/b", "a\0b", "%RETRY%g", "\udcff", "😀"])
_USUAL_HOSTS = st.one_of(HOSTS, st.sampled_from([("localhost", 1), ("::1",), (1, 2), "host"]))


@st.composite
def _usual_candidates(draw):
    """Single-put records, usual or one step from it: a DELAY, an IPv6 host or host bits,
    a topic the commit log refuses, any of _message_records' odd fields."""
    record = draw(_message_records())
    record.topic = draw(_USUAL_TOPICS)
    record.born_host, record.store_host = draw(_USUAL_HOSTS), draw(_USUAL_HOSTS)
    if type(record.properties) is dict and draw(st.booleans()):
        record.properties[m.PROPERTY_DELAY_TIME_LEVEL] = "3"
    return record


def _plain_utf8(text):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@settings(max_examples=500, deadline=None)
@given(_usual_candidates(), _MAX_MESSAGE_SIZES)
def test_check_usual_message_answers_as_python_or_leaves_the_record_to_it(record,
                                                                          max_message_size):
    """What the C check answers, Python answers too, and the record ends the same. None
    (the put's full checks) wherever Python has no answer, and for what the C leaves to
    Python: fields of other types, a topic that is not plain UTF-8, a size beyond a long."""
    twin = copy.copy(record)
    ours = _outcome(speedups.check_usual_message, record, max_message_size)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(commitlog, "speedups", None)
        python = _outcome(commitlog.python_check_usual_message, twin, max_message_size)
    if ours is None:
        answered = type(python) is tuple and len(python) == 2  # not _outcome's "raised"
        assert not (answered and type(record.properties) is dict
                    and type(record.body) is bytes and type(record.sys_flag) is int
                    and -(1 << 63) <= record.sys_flag < 1 << 63
                    and isinstance(record.born_host, tuple)
                    and isinstance(record.store_host, tuple) and _plain_utf8(record.topic)
                    and -(1 << 63) <= max_message_size < 1 << 63)
        return
    assert ours == python
    assert _slots(record) == _slots(twin)


def test_check_usual_message_takes_the_usual_message():
    record = m.MessageRecord("TopicA", b"body", {"KEYS": "k", "WAIT": "true"}, queue_id=1,
                             born_host=("10.0.0.1", 5), store_host=("10.0.0.2", 10911))
    properties, total = speedups.check_usual_message(record, 1 << 22)
    assert properties == m.properties_utf8(record.properties)
    assert total == record.store_size == m.record_length(0, 4, 6, len(properties))
    for odd in (dict(topic="a/b"), dict(born_host=("::1", 5)), dict(sys_flag=0x10),
                dict(properties={"DELAY": "2"}), dict(body=b"b" * 101)):
        twin = copy.copy(record)
        for name, value in odd.items():
            setattr(twin, name, value)
        assert speedups.check_usual_message(twin, 100) is None
    with pytest.raises(TypeError):
        speedups.check_usual_message(record)


def test_check_message_record_answers():
    record = m.MessageRecord("TopicA", b"body", {"a": "é", "b": None, "c": ""}, body_crc=0,
                             magic_code=5)
    raw, size = speedups.check_message_record(record, 6, 100)
    assert raw == "a\x01é\x02c\x01".encode()
    assert (record.magic_code, record.store_size) == (m.MESSAGE_MAGIC_CODE, 91 + 6 + 4 + 7)
    assert size == record.store_size
    assert speedups.check_message_record(record, 6, 3) is None  # the body is too long
    assert speedups.check_message_record(record, 128, 100) is None
    assert speedups.check_message_record(record, -1, 100) is None
    assert speedups.check_message_record(record, 1 << 70, 100) is None
    record.sys_flag |= 0x30
    assert speedups.check_message_record(record, 6, 100) == (raw, 132) == (raw, record.store_size)
    assert speedups.check_message_record(record, 6, 4) == (raw, 132)


@pytest.mark.parametrize("args, error", [
    ((m.MessageRecord("T"), 1), TypeError), ((m.MessageRecord("T"), "1", 5), TypeError),
    ((m.MessageRecord("T"), 1, 5.0), TypeError), ((object(), 1, 5), AttributeError),
    ((None, 1, 5), AttributeError)])
def test_check_message_record_of_wrong_arguments(args, error):
    assert _outcome(speedups.check_message_record, *args)[:2] == ("raised", error)


# ---------------------------------------------------------------- memory

def _requests_call(i):
    props = {m.PROPERTY_TAGS: "t%d" % i, m.PROPERTY_KEYS: "k%d 😀" % i, "UNIQ_KEY": "U%d" % i}
    delayed = {m.PROPERTY_DELAY_TIME_LEVEL: str(i % 5)}
    fields = [("T", 1, i, 100 * i, 0, i, 0, props, 90), (_SCHEDULE, 0, i, 0, 0, i, 0, delayed, 9)]
    dispatch.requests_of_fields(fields, {1: 1000, 2: 5000})
    dispatch.requests_of_fields(map(tuple, fields), {})
    _outcome(speedups.requests_of_fields, [fields[0][:8]], _SCHEDULE, None)
    _outcome(speedups.requests_of_fields, fields, _SCHEDULE, lambda *a: 1 / 0)


def _entries_call(i):
    requests = [("T%d" % (i % 3), 0, 10 + i, 9, 0, i, i, " k%d  😀 " % i, "U%d" % i, 0, 0, {}),
                ("T", 0, 5, 9, 0, i, i, "x", None, 0, 0, {})]
    index_entries(requests, lambda: i % 12, _ROLLBACK)
    _outcome(index_entries, requests, lambda: 1 / 0, _ROLLBACK)
    _outcome(index_entries, requests + [("T", 0, 99, 9, 0, i, i, 5, None, 0, 0, {})],
             lambda: 0, _ROLLBACK)


def _runs_call(i):
    requests = [("T%d" % (i % 3), i % 2, i, 9, i, i, i, "", None, flag, 0, {})
                for flag in (0, 4, 8, 12)]
    dispatch.consume_queue_runs(requests)
    _outcome(dispatch.consume_queue_runs, requests + [("T",)])


def _unit_run_call(i):
    buffer = bytearray(100)
    units = [(i, 10, -i, 1), (i + 10, 10, i, 2), (i + 20, 2**40, 0, 3)]
    speedups.put_unit_run(buffer, 20, 0, units, 0, 0)
    speedups.put_unit_run(buffer, 20, 0, units, 0, 2**64 + i)
    _outcome(speedups.put_unit_run, buffer, 20, "x", units, 0, 0)


def _dispatch_usual_call(i):
    records = b"".join(m.encode_record(m.MessageRecord(
        "T%d" % (i % 3), b"b", {"TAGS": "t", "KEYS": "k%d k" % i, "UNIQ_KEY": "U%d" % i},
        queue_id=q, queue_offset=i, born_host=("10.0.0.1", 1), store_host=("10.0.0.2", 2)))
        for q in range(3))
    speedups.dispatch_usual_records(records, 0, len(records), 99, _SCHEDULE.encode(),
                                    lambda: i % 5, _ROLLBACK)
    speedups.dispatch_usual_records(records, 0, len(records), 99, b"T0", None, _ROLLBACK)
    speedups.put_index_hashes(bytearray(4000), bytes(40), 0, 9, 5, 1, 0, 0, 0)
    _outcome(speedups.dispatch_usual_records, records, 0, 99, 9, b"S", lambda: 1 / 0, 12)
    _outcome(speedups.dispatch_usual_records, records, 0, 99, 9, b"S", lambda: "x", 12)


def _check_message_call(i):
    record = m.MessageRecord("T%d" % (i % 3), b"b%d" % i, {"K": "é%d" % i, "N": None},
                             body_crc=0)
    speedups.check_message_record(record, 2, 1 << 22)
    speedups.check_message_record(record, 2, 1)
    record.properties = {"K": "\ud800%d" % i}
    speedups.check_message_record(record, 2, 1 << 22)
    _outcome(speedups.check_message_record, None, 2, 1)


def _usual_message_call(i):
    record = m.MessageRecord("T%d" % (i % 3), b"b%d" % i, {"K": "é%d" % i, "N": None},
                             body_crc=0, born_host=("10.0.0.%d" % (i % 9), i),
                             store_host=("10.0.0.1", 1))
    speedups.check_usual_message(record, 1 << 22)
    speedups.check_usual_message(record, 1)
    record.topic = "a/%d" % i
    speedups.check_usual_message(record, 1 << 22)
    record.topic, record.properties = "T", {"DELAY": str(i)}
    speedups.check_usual_message(record, 1 << 22)
    _outcome(speedups.check_usual_message, None, 1)


@pytest.mark.parametrize("call", [_requests_call, _entries_call, _runs_call, _unit_run_call,
                                  _dispatch_usual_call, _check_message_call,
                                  _usual_message_call])
def test_no_memory_grows(call):
    assert _growth(call) < 16 * 1024


def test_check_message_record_keeps_no_reference():
    record = m.MessageRecord("T", b"body", {"K": "é" * 9, "N": None}, body_crc=0)
    speedups.check_message_record(record, 1, 1 << 22)  # the record keeps its store size
    objects = (record, record.properties, record.body, *record.properties.values())
    counts = [sys.getrefcount(o) for o in objects]
    for _ in range(200):
        speedups.check_message_record(record, 1, 1 << 22)
        speedups.check_message_record(record, 1, 1)
        speedups.check_usual_message(record, 1 << 22)
    assert [sys.getrefcount(o) for o in objects] == counts
