"""decode_batch_records: the records of a batch body as Java's batch encoder stores them
(``CommitLog.MessageExtBatchEncoder``): each message's properties bytes as the client sent them, a separator, the
batch's string; the properties parsed from that, as Java's dispatch reads them."""

import struct

from hypothesis import given, settings, strategies as st

from rmqproto.codec import message as m
from rmqproto.errors import CodecError
from support.recordstrategies import HOSTS, INT32, INT64, PROPERTY_TEXT, TOPICS

#: Names a batch header and its messages both may hold, so that they overlap often.
_NAMES = st.one_of(st.sampled_from(["WAIT", "CLUSTER", "UNIQ_KEY", "TAGS", "KEYS"]), PROPERTY_TEXT)
_VALUES = st.one_of(st.sampled_from(["true", "false", "C"]), PROPERTY_TEXT)


@st.composite
def _property_bytes(draw):
    """A message's properties string as a client may send it: pairs as the writer makes them,
    or with a trailing separator, empty fragments, a pair without value, a name twice, bytes
    that are not UTF-8."""
    pairs = draw(st.lists(st.tuples(_NAMES, _VALUES), max_size=4))
    fragments = [name + "\x01" + value for name, value in pairs]
    extra = draw(st.sampled_from(["", "", "", "\x02", "\x02\x02", "NAME\x01", "\x01v"]))
    if extra and fragments:
        fragments.insert(draw(st.integers(0, len(fragments))), extra)
    if pairs and draw(st.integers(0, 5)) == 0:
        fragments.append(fragments[0])  # a name twice
    raw = "\x02".join(fragments).encode("utf-8")
    if draw(st.integers(0, 9)) == 0:
        raw += b"\xff\xfe"  # not UTF-8: kept as it came
    return raw


def _batch_body(items):
    return b"".join(struct.pack(">iiiii", 22 + len(body) + len(props), 0, 0, flag, len(body))
                    + body + struct.pack(">h", len(props)) + props
                    for flag, body, props in items)


_ITEMS = st.lists(st.tuples(INT32, st.binary(max_size=40), _property_bytes()), max_size=5)
_BATCH_PROPERTIES = st.dictionaries(_NAMES, _VALUES, max_size=3)


def _prototype(draw_fields):
    topic, queue_id, sys_flag, born_timestamp, born_host, store_host, reconsume_times = draw_fields
    return m.MessageRecord(topic, queue_id=queue_id, sys_flag=sys_flag,
                           born_timestamp=born_timestamp, born_host=born_host,
                           store_host=store_host, reconsume_times=reconsume_times, body_crc=0)


_PROTOTYPES = st.tuples(TOPICS, INT32, INT32, INT64, HOSTS, HOSTS, INT32).map(_prototype)


def _java_stored(own, batch_string):
    """``MessageExtBatchEncoder.encode``'s properties: the message's bytes, a 0x02 when both
    are non-empty and the message's do not end in one, the batch's string."""
    separator = b"\x02" if own and batch_string and own[-1:] != b"\x02" else b""
    return own + separator + batch_string


def _expected(data, batch_properties, prototype):
    """Each message of the declared batch decoding, its stored properties by Java's rule and
    its properties parsed from them (as Java's dispatch reads them)."""
    batch_string = m.properties_to_string(batch_properties).encode("utf-8")
    records = []
    for item in m.BATCH.parse(data).messages:
        stored = _java_stored(item.properties, batch_string)
        properties = m.string_to_properties(stored.decode("utf-8", "surrogateescape"))
        record = m.MessageRecord(
            prototype.topic, item.body, properties, prototype.queue_id, item.flag,
            sys_flag=prototype.sys_flag, born_timestamp=prototype.born_timestamp,
            born_host=prototype.born_host, store_host=prototype.store_host,
            reconsume_times=prototype.reconsume_times, body_crc=0)
        records.append((record, stored))
    return records


@settings(max_examples=300, deadline=None)
@given(_ITEMS, _BATCH_PROPERTIES, _PROTOTYPES)
def test_records_follow_javas_batch_rule(items, batch_properties, prototype):
    data = _batch_body(items)
    records = m.decode_batch_records(data, batch_properties, prototype)
    expected = _expected(data, batch_properties, prototype)
    assert (records.body_length, records.properties) == (len(data), batch_properties)
    assert [r.fields() for r in records] == [e.fields() for e, _ in expected]
    assert [r.stored_properties for r in records] == [p for _, p in expected]
    for record, (_, stored) in zip(records, expected):
        # a stored record reads back with the properties the broker dispatched
        data = m.encode_record(record, stored)
        assert m.decode_record(data).properties == record.properties


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(INT32, st.binary(max_size=40), st.binary(max_size=30)), min_size=1,
                max_size=5), _BATCH_PROPERTIES, INT64, st.integers(0, 1 << 40))
def test_stored_batch_writes_javas_strings(items, batch_properties, store_timestamp, offset):
    """encode_stored_batch of decoded records: each record as encode_record writes it with
    Java's string, whatever bytes the message's properties are."""
    data = _batch_body(items)
    prototype = m.MessageRecord("T", queue_id=1, born_host=("10.0.0.1", 5), body_crc=0)
    records = m.decode_batch_records(data, batch_properties, prototype)
    expected = _expected(data, batch_properties, prototype)
    stored, ids, _ = m.encode_stored_batch(records, [p for _, p in expected], store_timestamp,
                                        offset, 7)
    parts = []
    for record in records:
        parts.append(m.encode_record(record, record.stored_properties))
        assert m.decode_record(parts[-1]).properties == record.properties
    assert stored == b"".join(parts)
    assert ids == [m.create_message_id(r.store_host, r.commit_log_offset) for r in records]


def test_own_bytes_then_the_batch_string():
    items = [(0, b"a", b"WAIT\x01true\x02UNIQ_KEY\x01U1"), (1, b"b", b""),
             (2, b"c", b"UNIQ_KEY\x01U3\x02"), (3, b"d", b"CLUSTER\x01Other\x02\x02K\x01")]
    batch = {"CLUSTER": "C", "WAIT": "true"}
    records = m.decode_batch_records(_batch_body(items), batch, m.MessageRecord("T"))
    assert [r.stored_properties for r in records] == [
        b"WAIT\x01true\x02UNIQ_KEY\x01U1\x02CLUSTER\x01C\x02WAIT\x01true",  # WAIT twice
        b"CLUSTER\x01C\x02WAIT\x01true",
        b"UNIQ_KEY\x01U3\x02CLUSTER\x01C\x02WAIT\x01true",  # no second separator
        b"CLUSTER\x01Other\x02\x02K\x01\x02CLUSTER\x01C\x02WAIT\x01true"]
    # the batch's value of a name in both wins, as a HashMap filled in string order
    assert records[3].properties == {"CLUSTER": "C", "WAIT": "true"}
    assert [r.flag for r in records] == [0, 1, 2, 3]
    assert [type(r) for r in records] == [m.BatchRecord] * 4
    # without batch properties a message's bytes are stored as they came
    alone = m.decode_batch_records(_batch_body(items), {}, m.MessageRecord("T"))
    assert [r.stored_properties for r in alone] == [props for _, _, props in items]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_bad_bodies_fail_as_decode_batch_does(data):
    def outcome(fn):
        try:
            fn(data)
        except CodecError as exc:
            return type(exc), str(exc)
        return None

    assert outcome(lambda d: m.decode_batch_records(d, {"CLUSTER": "C"}, m.MessageRecord("T"))) \
        == outcome(m.decode_batch)
