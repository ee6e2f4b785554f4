"""The store checkpoint (Java ``StoreCheckpoint``)."""

import pytest
from hypothesis import given, settings, strategies as st

from rmqproto.codec import checkpoint as c
from rmqproto.errors import CodecError
from storefiles_support import store_files
from support.interop import load_vectors

_i64 = st.integers(-(1 << 63), (1 << 63) - 1)


def test_real_checkpoint():
    files = store_files(load_vectors("store_files"))
    data = files.files["checkpoint"]
    point = c.decode_checkpoint(data)
    assert len(data) == c.CHECKPOINT_FILE_SIZE and c.encode_checkpoint(point) == data
    stored = {p["store_timestamp"] for p in files.summary["puts"]}
    # the flushed commit-log / consume-queue timestamps are store timestamps of messages
    assert point.physic_msg_timestamp in stored and point.logics_msg_timestamp in stored
    assert (point.master_flushed_offset, point.confirm_phy_offset) == (0, 0)  # 4.x: absent
    assert point.min_timestamp() == min(point[:2]) - 3000


def test_v4_head_only_and_rmq5_fields():
    assert c.decode_checkpoint(bytes(range(24))) == c.Checkpoint(
        0x0001020304050607, 0x08090A0B0C0D0E0F, 0x1011121314151617)
    rmq5 = c.Checkpoint(1, 2, 3, 4, 5)
    assert c.decode_checkpoint(c.encode_checkpoint(rmq5)) == rmq5
    assert c.Checkpoint(1000, 5000, 10).min_timestamp() == 0
    assert c.Checkpoint(10000, 9000, 10).min_timestamp_index() == 10


@settings(max_examples=100, deadline=None)
@given(st.builds(c.Checkpoint, _i64, _i64, _i64, _i64, _i64))
def test_fast_path_equals_declaration(point):
    data = c.encode_checkpoint(point)
    assert data == c.build_checkpoint_declared(point)
    assert c.decode_checkpoint(data) == point == c.parse_checkpoint_declared(data)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=60))
def test_fuzz(data):
    for call in (c.decode_checkpoint, c.parse_checkpoint_declared):
        try:
            call(data)
        except CodecError:
            pass


@pytest.mark.java
def test_fresh_checkpoint_decodes(fresh_vectors):
    files = store_files(fresh_vectors("store_files"))
    point = c.decode_checkpoint(files.files["checkpoint"])
    assert point.physic_msg_timestamp in {p["store_timestamp"] for p in files.summary["puts"]}
