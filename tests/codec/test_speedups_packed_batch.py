"""A batch body written whole (``PackedBatch``): ``pack_batch`` and
``write_packed_batch`` against the records ``decode_batch_records`` makes and
``write_stored_batch`` writes. The same bytes, message ids and dispatch fields (the
properties dicts in order) on random and edge-case bodies; what ``pack_batch`` leaves to the
records (odd prototypes, long properties, malformed bodies); the sequence a packed batch is
for code that does not know it; and that the C functions neither leak nor keep references.
"""

import copy
import sys

import pytest
from hypothesis import given, settings, strategies as st

from rmqproto.codec import message as m
from rmqproto.codec.native import speedups
from rmqproto.errors import CodecError
from rmqproto.store import commitlog
from rmqproto.store.results import PUT_OK
from support.speedups import require_speedups
from test_batch_records import _batch_body
from test_speedups import _growth, _outcome
from test_speedups_batch import (_AT, _BATCH_PROPERTIES, _ITEMS, _STORE_TIMESTAMPS, _all_slots,
                                 _batch_args, _buffer, _prototypes, _same_batch_records,
                                 _written)

require_speedups()

_OFFSETS = st.integers(0, 1 << 40)


def _usual_prototype(topic="T", **changes):
    fields = dict(queue_id=3, sys_flag=0, born_timestamp=1_700_000_000_000,
                  born_host=("10.0.0.2", 5123), store_host=("10.0.0.1", 10911),
                  reconsume_times=0, body_crc=0)
    fields.update(changes)
    return m.MessageRecord(topic, **fields)


def _changed(record, **changes):
    """``record`` with attributes set after its constructor (which fits the host bits of
    the sys flag to the hosts)."""
    for name, value in changes.items():
        setattr(record, name, value)
    return record


def _same_writes(data, batch_properties, prototype, store_timestamp, offset, queue_offset):
    """The packed batch (when ``pack_batch`` packs it) checked and written against its
    records: the same status, bytes, ids and dispatch fields. Returns what ``pack_batch``
    gave."""
    packed = m.pack_batch(data, batch_properties, prototype)
    if not isinstance(packed, m.PackedBatch):
        return packed
    records = m.decode_batch_records(data, batch_properties, copy.deepcopy(prototype))
    checked = _outcome(commitlog.check_batch, records, 1 << 30)
    packed_checked = _outcome(commitlog.check_packed_batch, packed, 1 << 30)
    if checked[0] is not PUT_OK:
        assert packed_checked[:2] == checked[:2]
        return packed
    status, props, total = checked
    assert packed_checked == (PUT_OK, None, total)
    expected_buffer, buffer = _buffer(total), _buffer(total)
    expected = _outcome(m.write_stored_batch, expected_buffer, _AT, total, records, props,
                        store_timestamp, offset, queue_offset)
    ours = _outcome(m.write_packed_batch, buffer, _AT, total, packed, store_timestamp, offset,
                    queue_offset)
    assert ours == expected and type(ours) is tuple
    if ours[0] != "raised":  # both raise for a store timestamp out of range
        assert [list(f[7].items()) for f in ours[1]] == [list(f[7].items()) for f in expected[1]]
    assert _written(buffer, total) == _written(expected_buffer, total)
    return packed


@settings(max_examples=300, deadline=None)
@given(_ITEMS, _BATCH_PROPERTIES, _prototypes(), _STORE_TIMESTAMPS, _OFFSETS, _OFFSETS)
def test_packed_batches_write_what_their_records_write(items, batch_properties, prototype,
                                                       store_timestamp, offset, queue_offset):
    if not items:
        return
    _same_writes(_batch_body(items), batch_properties, prototype, store_timestamp, offset,
                 queue_offset)


@settings(max_examples=200, deadline=None)
@given(_ITEMS.filter(bool), _BATCH_PROPERTIES, _OFFSETS, _OFFSETS)
def test_usual_batches_are_packed(items, batch_properties, offset, queue_offset):
    assert not any(len(own) > 1000 for _, _, own in items)
    packed = _same_writes(_batch_body(items), batch_properties, _usual_prototype(),
                          1_700_000_000_123, offset, queue_offset)
    assert isinstance(packed, m.PackedBatch) and len(packed) == len(items)


_PATTERN_NAMES = st.lists(st.sampled_from(["UNIQ_KEY", "KEYS", "TAGS", "WAIT", "C", "a", "é",
                                          "n1", "n2"]), min_size=1, max_size=9, unique=True)
_PATTERN_VALUES = st.one_of(st.sampled_from(["v", "true", "k1 k2"]),
                            st.text(st.characters(min_codepoint=3, max_codepoint=0x7F),
                                    min_size=1, max_size=8),
                            st.sampled_from(["é", "a\x01b", ""]))
#: How a message may stray from its batch's pattern of names.
_STRAYS = st.sampled_from(["", "", "", "", "swap", "drop", "twice", "extra", "separator",
                           "not ascii"])


@st.composite
def _patterned_bodies(draw):
    """A batch whose messages mostly carry the same names in the same order (as clients'
    do), some straying from it, with values plain and not."""
    names = draw(_PATTERN_NAMES)
    items = []
    for flag in range(draw(st.integers(1, 6))):
        pairs = [(n, draw(_PATTERN_VALUES)) for n in names]
        stray = draw(_STRAYS)
        if stray == "swap" and len(pairs) > 1:
            pairs[0], pairs[-1] = pairs[-1], pairs[0]
        elif stray == "drop":
            pairs.pop()
        elif stray == "twice":
            pairs.append(pairs[0])
        elif stray == "extra":
            pairs.append(("zz", "v"))
        own = "\x02".join(n + "\x01" + v for n, v in pairs).encode("utf-8", "surrogateescape")
        if stray == "separator":
            own += b"\x02"
        elif stray == "not ascii":
            own += b"\x02x\x01\xff"
        items.append((flag, b"m%d" % flag, own))
    return _batch_body(items)


@settings(max_examples=300, deadline=None)
@given(_patterned_bodies(), _BATCH_PROPERTIES, _OFFSETS)
def test_messages_of_one_pattern(data, batch_properties, offset):
    """Messages with the names of the first in the same order get that message's dict
    copied with their own values: the same keys, order and values as parsing gives."""
    _same_batch_records(data, *_batch_args(batch_properties), _usual_prototype())
    _same_writes(data, batch_properties, _usual_prototype(), 7, offset, 0)


def test_a_pattern_is_copied_not_parsed_again():
    """The later messages' dicts share the first one's key objects (a parse makes new ones
    for names that are not interned), and the batch's value wins where it should."""
    items = [(i, b"m", b"n1\x01v%d\x02WAIT\x01false\x02n2\x01w%d" % (i, i)) for i in range(3)]
    data, batch = _batch_body(items), {"WAIT": "true", "C": "d"}
    records = speedups.batch_records(data, *_batch_args(batch), _usual_prototype(),
                                     m.BatchRecord)
    packed = m.pack_batch(data, batch, _usual_prototype())
    total = commitlog.check_packed_batch(packed, 1 << 30)[2]
    dispatched = [f[7] for f in m.write_packed_batch(bytearray(total), 0, total, packed, 1, 0,
                                                     0)[1]]
    for dicts in ([r.properties for r in records], dispatched):
        assert [list(d.items()) for d in dicts] == [
            [("n1", "v%d" % i), ("WAIT", "true"), ("n2", "w%d" % i), ("C", "d")]
            for i in range(3)]
        first = list(dicts[0])
        assert all(a is b for d in dicts[1:] for a, b in zip(d, first))


def test_the_separator_rule_of_stored_properties():
    """Own string then the batch's: a 0x02 between them unless either is empty or the own
    string ends in one (the rule of ``stored_batch_properties``)."""
    items = [(0, b"a", b""), (1, b"b", b"x\x01y"), (2, b"c", b"x\x01y\x02"), (3, b"", b"\x02")]
    for batch_properties in ({}, {"C": "d"}):
        packed = _same_writes(_batch_body(items), batch_properties, _usual_prototype(), 5, 0, 0)
        assert isinstance(packed, m.PackedBatch)


@pytest.mark.parametrize("prototype", [
    _usual_prototype(born_host=("::1", 5)),
    _usual_prototype(store_host=("fe80::1", 10911)),
    _changed(_usual_prototype(), sys_flag=0x10),
    _usual_prototype("é" * 70),
    _usual_prototype(queue_id=1 << 31),
    _usual_prototype(reconsume_times="0"),
])
def test_other_prototypes_give_records(prototype):
    data = _batch_body([(0, b"a", b"k\x01v"), (1, b"bb", b"")])
    packed = m.pack_batch(data, {"C": "d"}, prototype)
    decoded = m.decode_batch_records(data, {"C": "d"}, prototype)
    assert type(packed) is m.BatchRecords and _all_slots(packed) == _all_slots(decoded)
    assert packed.body_length == len(data) and packed.properties == {"C": "d"}


def test_a_stored_string_over_the_limit_gives_records():
    """32767 bytes in all (own, separator, batch's) are packed; one more is left to the
    records, whose check refuses it with PROPERTIES_SIZE_EXCEEDED."""
    batch = {"C": "d"}
    room = m.MAX_PROPERTIES_LENGTH - 1 - len(b"C\x01d")
    for own, kind in ((b"a\x01" + b"v" * (room - 2), m.PackedBatch),
                      (b"a\x01" + b"v" * (room - 1), m.BatchRecords)):
        packed = m.pack_batch(_batch_body([(0, b"x", own)]), batch, _usual_prototype())
        assert type(packed) is kind
    assert commitlog.check_batch(packed, 1 << 30)[0].name == "PROPERTIES_SIZE_EXCEEDED"


@pytest.mark.parametrize("data", [b"", b"\x00" * 21, _batch_body([(0, b"a", b"")])[:-1],
                                  _batch_body([(0, b"a", b"")]) + b"\x00"])
def test_malformed_bodies_raise_as_decoding_does(data):
    decoded = _outcome(m.decode_batch_records, data, {}, _usual_prototype())
    packed = _outcome(m.pack_batch, data, {}, _usual_prototype())
    if type(decoded) is tuple:
        assert packed == decoded and issubclass(decoded[1], CodecError)
    else:  # no message at all: records, which the store's check refuses
        assert type(packed) is m.BatchRecords and list(packed) == [] == list(decoded)


def test_a_packed_batch_is_the_sequence_of_its_records():
    data = _batch_body([(5, b"one", b"KEYS\x01k1"), (6, b"two", b"TAGS\x01t")])
    prototype = _usual_prototype()
    packed = m.pack_batch(data, {"C": "d"}, prototype)
    decoded = m.decode_batch_records(data, {"C": "d"}, prototype)
    assert isinstance(packed, m.PackedBatch) and len(packed) == 2
    assert packed.body_length == len(data) and packed.properties == {"C": "d"}
    assert _all_slots(packed) == _all_slots(decoded)
    assert _all_slots([packed[1]]) == _all_slots([decoded[1]])
    assert packed.records() is packed.records()  # made once
    assert commitlog.check_batch(list(packed), 1 << 30)[2] \
        == commitlog.check_packed_batch(m.pack_batch(data, {"C": "d"}, prototype), 1 << 30)[2]


def _packed(count=3, topic="T"):
    items = [(i, b"body%d" % i, b"UNIQ_KEY\x01u%d" % i) for i in range(count)]
    return m.pack_batch(_batch_body(items), {"C": "d", "WAIT": "true"}, _usual_prototype(topic))


def test_write_packed_batch_refuses_what_does_not_fit_or_add_up():
    packed = _packed()
    total = commitlog.check_packed_batch(packed, 1 << 30)[2]
    for position, room in ((_AT, total - 1), (-1, total)):
        buffer = bytearray(_AT + room)
        before = bytes(buffer)
        with pytest.raises(ValueError):
            m.write_packed_batch(buffer, position, total, packed, 1, 0, 0)
        assert buffer == before
    buffer = _buffer(total + 1)
    for wrong in (total - 1, total + 1):
        with pytest.raises(CodecError):
            m.write_packed_batch(buffer, _AT, wrong, packed, 1, 0, 0)
        assert buffer == _buffer(total + 1)


def test_write_packed_batch_declines_a_count_the_body_does_not_hold():
    packed = _packed()
    total = commitlog.check_packed_batch(packed, 1 << 30)[2]
    for count in (packed.count - 1, packed.count + 1, 0, 1 << 40):
        buffer = _buffer(total)
        assert speedups.write_packed_batch(buffer, _AT, total, packed.data, packed.batch_raw,
                                           packed.batch_parsed, packed.prototype, 1, 0, 0,
                                           count) is None
        assert buffer == _buffer(total)


def test_the_batch_head_is_checked_as_for_records():
    """What the records share (topic, transaction flag, body length, the batch's DELAY and
    string) is refused as ``check_batch`` refuses it."""
    cases = [(dict(topic="a/b"), {}, 1 << 30), (dict(sys_flag=8), {}, 1 << 30),
             ({}, {"DELAY": "2"}, 1 << 30), ({}, {}, 10), ({}, {"DELAY": "x"}, 1 << 30),
             ({}, {"C": "v" * 40_000}, 1 << 30)]
    data = _batch_body([(0, b"a" * 20, b"k\x01v")])
    for changes, batch_properties, max_message_size in cases:
        prototype = _usual_prototype(**changes)
        records = m.decode_batch_records(data, batch_properties, prototype)
        packed = m.pack_batch(data, batch_properties, prototype)
        if isinstance(packed, m.PackedBatch):
            got = _outcome(commitlog.check_packed_batch, packed, max_message_size)
        else:
            got = _outcome(commitlog.check_batch, packed, max_message_size)
        expected = _outcome(commitlog.check_batch, records, max_message_size)
        assert got[:2] == expected[:2] and got[0] is not PUT_OK


# ---------------------------------------------------------------- memory and references

def _packed_call(i):
    packed = _packed(1 + i % 4, "T%d" % (i % 3))
    total = commitlog.check_packed_batch(packed, 1 << 30)[2]
    buffer = bytearray(total + 16)
    speedups.measure_packed_batch(packed.data, i % 40)
    speedups.measure_packed_batch(packed.data[:-1], 0)
    speedups.usual_batch_prototype(_usual_prototype(born_host=("::1", i)))
    m.write_packed_batch(buffer, i % 9, total, packed, i, i * 1000, i)
    _outcome(m.write_packed_batch, buffer, 0, total + 1, packed, i, 0, 0)
    _outcome(m.write_packed_batch, buffer, 20, total, packed, i, 0, 0)
    _outcome(speedups.write_packed_batch, buffer, 0, total, packed.data, "raw", {}, None, 0,
             0, 0, packed.count)
    speedups.write_packed_batch(buffer, 0, total, packed.data, packed.batch_raw,
                                packed.batch_parsed, packed.prototype, i, 0, 0, packed.count + 1)


def test_no_memory_grows():
    assert _growth(_packed_call) < 16 * 1024


def test_write_packed_batch_keeps_no_reference():
    packed = _packed()
    total = commitlog.check_packed_batch(packed, 1 << 30)[2]
    buffer = bytearray(total)
    store_timestamp = 1 << 50
    arguments = (buffer, packed.data, packed.batch_raw, packed.batch_parsed, packed.prototype,
                 store_timestamp)

    def calls():
        m.write_packed_batch(buffer, 0, total, packed, store_timestamp, 0, 0)
        # the wrong total falls back to the records, made once, which keep the timestamp
        _outcome(m.write_packed_batch, buffer, 0, total - 1, packed, store_timestamp, 0, 0)
        _outcome(m.write_packed_batch, buffer, 5, total, packed, store_timestamp, 0, 0)

    calls()
    counts = [sys.getrefcount(a) for a in arguments]
    for _ in range(200):
        calls()
    assert [sys.getrefcount(a) for a in arguments] == counts
    buffer.append(0)  # no buffer export is left either
