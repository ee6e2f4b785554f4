"""encode_stored_batch: a batch encoded in one pass is byte for byte what encode_record writes
for each of its records in turn, with the same offsets, CRCs and message ids, and hands back
each record's dispatch fields as the dispatcher would read them from those bytes."""

import copy

from hypothesis import given, settings, strategies as st

from rmqproto.codec import message as m
from rmqproto.codec.javalang import masked_crc32
from support.recordstrategies import HOSTS, INT32, INT64, properties

_i32, _i64, _host, _props = INT32, INT64, HOSTS, properties(max_size=4)


@st.composite
def _batches(draw):
    """Records of one batch: the shared fields of a first record, each later record keeping
    them or (now and then) changing one, as a store caller may."""
    shared = dict(
        topic=draw(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=140)),
        queue_id=draw(_i32), sys_flag=draw(_i32), born_timestamp=draw(_i64),
        born_host=draw(_host), store_host=draw(_host), reconsume_times=draw(_i32),
        prepared_transaction_offset=draw(_i64))
    records = []
    for _ in range(draw(st.integers(1, 6))):
        fields = dict(shared)
        if draw(st.integers(0, 4)) == 0:
            name = draw(st.sampled_from(sorted(shared)))
            fields[name] = {"topic": "Other", "born_host": ("::1", 7), "store_host": ("10.0.0.9", 1)
                            }.get(name, 3)
        records.append(m.MessageRecord(body=draw(st.binary(max_size=200)),
                                       properties=draw(_props), flag=draw(_i32), body_crc=0,
                                       **fields))
    return records


@settings(max_examples=200, deadline=None)
@given(_batches(), _i64, st.integers(0, 1 << 40), st.integers(0, 1 << 40))
def test_stored_batch_equals_record_by_record(records, store_timestamp, offset, queue_offset):
    expected = copy.deepcopy(records)
    properties = [m.properties_to_string(r.properties).encode("utf-8", "surrogateescape")
                  for r in records]
    data, ids, dispatch = m.encode_stored_batch(records, properties, store_timestamp, offset,
                                                queue_offset)
    parts, expected_ids = [], []
    for i, record in enumerate(expected):
        record.store_timestamp = store_timestamp
        record.body_crc = masked_crc32(record.body)
        record.commit_log_offset = offset
        record.queue_offset = queue_offset + i
        parts.append(m.encode_record(record))
        expected_ids.append(m.create_message_id(record.store_host, offset))
        offset += len(parts[-1])
    assert data == b"".join(parts)
    assert ids == expected_ids
    assert [r.fields() for r in records] == [r.fields() for r in expected]
    starts = [r.commit_log_offset - expected[0].commit_log_offset for r in expected]
    assert [f[:7] + f[8:] for f in dispatch] == [
        (r.topic,) + d[1:7] + d[8:] for r, d in
        zip(records, (m.decode_dispatch_fields(data, start) for start in starts))]
    assert all(f[7] is r.properties for f, r in zip(dispatch, records))
