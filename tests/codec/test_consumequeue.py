"""Consume-queue units against the files of a real DefaultMessageStore."""

import pytest
from hypothesis import given, settings, strategies as st

from rmqproto.codec import consumequeue as cq
from rmqproto.codec.message import TRANSACTION_PREPARED_TYPE, transaction_type
from rmqproto.codec.storefile import file_name_to_offset, offset_to_file_name
from rmqproto.errors import CodecError
from storefiles_support import store_files
from support.interop import load_vectors

_i64 = st.integers(-(1 << 63), (1 << 63) - 1)
_units = st.builds(cq.ConsumeQueueUnit, _i64, st.integers(-(1 << 31), (1 << 31) - 1), _i64)


def test_real_consume_queues_point_at_their_records():
    files = store_files(load_vectors("store_files"))
    records, _ = files.commitlog_records()
    by_offset = {r.commit_log_offset: r for r in records}
    queues = files.queue_units()
    java = files.summary["java_reads"]["queues"]
    assert sorted(queues) == sorted(java)
    for key, units in queues.items():
        topic, queue_id = key.split("/")
        assert [u.commit_log_offset for u in units] == [x["commit_log_offset"] for x in java[key]]
        for logical, unit in enumerate(units):
            record = by_offset[unit.commit_log_offset]
            assert (record.topic, record.queue_id, record.queue_offset) == (topic, int(queue_id), logical)
            assert unit.size == record.store_size and unit.tags_code == record.tags_code
    dispatched = {u.commit_log_offset for units in queues.values() for u in units}
    skipped = [r for r in records if r.commit_log_offset not in dispatched]
    assert [transaction_type(r.sys_flag) for r in skipped] == [TRANSACTION_PREPARED_TYPE]
    size = files.summary["cq_file_size"]
    for path in files.paths("consumequeue/"):
        data = files.files[path]
        assert len(data) == size == cq.mapped_file_size(size)
        units = cq.valid_units(data)
        assert cq.encode_units(units) == data[:len(units) * 20] and not any(data[len(units) * 20:])
        start = file_name_to_offset(path.rsplit("/", 1)[1])
        assert start % size == 0 and offset_to_file_name(start) == path.rsplit("/", 1)[1]


def test_blank_unit_and_positions():
    assert cq.encode_unit(cq.BLANK_UNIT) == bytes(8) + b"\x7f\xff\xff\xff" + bytes(8)
    assert cq.decode_unit(cq.encode_unit(cq.BLANK_UNIT)).is_blank
    assert cq.unit_position(0) == (0, 0)
    assert cq.unit_position(300000) == (6000000, 0)
    assert cq.unit_position(300001, 6000000) == (6000000, 20)
    assert cq.mapped_file_size(150) == 160
    assert cq.is_ext_addr(-(1 << 31) - 1) and not cq.is_ext_addr(-(1 << 31))
    data = cq.encode_units([(0, 10, 1), (10, 20, 2), (-1, 0, 0), (30, 5, 0)])
    assert [u.commit_log_offset for u in cq.valid_units(data)] == [0, 10]
    with pytest.raises(CodecError):
        cq.decode_units(data[:-1])


@settings(max_examples=150, deadline=None)
@given(st.lists(_units, max_size=6))
def test_fast_path_equals_declaration(units):
    data = cq.encode_units(units)
    assert data == b"".join(cq.build_unit_declared(u) for u in units)
    assert cq.decode_units(data) == units
    assert [cq.parse_unit_declared(data[i:i + 20]) for i in range(0, len(data), 20)] == units
    assert [cq.decode_unit(data, i) for i in range(0, len(data), 20)] == units


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=70), st.integers(-5, 80))
def test_fuzz(data, offset):
    for call in (lambda: cq.decode_units(data), lambda: cq.decode_unit(data, offset),
                 lambda: cq.valid_units(data), lambda: cq.parse_unit_declared(data)):
        try:
            call()
        except CodecError:
            pass


@pytest.mark.java
def test_fresh_queues_equal_checked_in(fresh_vectors):
    assert store_files(fresh_vectors("store_files")).queue_units() == store_files(
        load_vectors("store_files")).queue_units()
