"""Index files against the one a real DefaultMessageStore wrote."""

import pytest
from hypothesis import given, settings, strategies as st

from rmqproto.codec import indexfile as ix
from rmqproto.codec.javalang import java_string_hash, java_string_hash_continued
from rmqproto.codec.message import TRANSACTION_ROLLBACK_TYPE, transaction_type
from rmqproto.errors import CodecError
from storefiles_support import store_files
from support.interop import load_vectors

_i32 = st.integers(-(1 << 31), (1 << 31) - 1)
_i64 = st.integers(-(1 << 63), (1 << 63) - 1)


def _index_keys(record):
    """The keys ``IndexService.buildIndex`` puts for a record: UNIQ_KEY, then each KEYS word."""
    keys = [record.uniq_key] if record.uniq_key is not None else []
    return [ix.build_key(record.topic, k) for k in keys + record.keys]


def test_real_index_finds_every_key():
    files = store_files(load_vectors("store_files"))
    index = files.index()
    java = files.summary["java_reads"]["keys"]
    for full_key, offsets in java.items():
        assert sorted(index.select_phy_offsets(full_key)) == offsets, full_key  # Java sorts
    assert len(files.files["index"]) == ix.index_file_size(index.hash_slot_num, index.index_num)


def test_replaying_the_store_rebuilds_the_index_byte_for_byte():
    files = store_files(load_vectors("store_files"))
    records, _ = files.commitlog_records()
    ours = ix.IndexFile(bytearray(len(files.files["index"])), files.summary["hash_slot_num"],
                        files.summary["index_num"])
    for record in records:
        if transaction_type(record.sys_flag) == TRANSACTION_ROLLBACK_TYPE:
            continue
        for key in _index_keys(record):
            assert ours.put_key(key, record.commit_log_offset, record.store_timestamp)
    assert bytes(ours.buffer) == files.files["index"]
    header = ix.decode_header(files.files["index"])
    assert header == ours.header and header.index_count == 1 + sum(len(_index_keys(r)) for r in records)


def test_replaying_the_store_in_one_batch_rebuilds_the_index_byte_for_byte():
    files = store_files(load_vectors("store_files"))
    records, _ = files.commitlog_records()
    ours = ix.IndexFile(bytearray(len(files.files["index"])), files.summary["hash_slot_num"],
                        files.summary["index_num"])
    entries = [(java_string_hash(key), r.commit_log_offset, r.store_timestamp) for r in records
               if transaction_type(r.sys_flag) != TRANSACTION_ROLLBACK_TYPE
               for key in _index_keys(r)]
    assert ours.put_hashes(entries) == len(entries)
    assert bytes(ours.buffer) == files.files["index"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["T#a", "T#b", "T#c", "U#a", "polygenelubricants"]),
                          st.integers(0, 1 << 40), st.integers(0, 1 << 42)), max_size=14),
       st.integers(1, 5), st.integers(0, 1 << 40), st.integers(0, 1 << 42))
def test_put_hashes_in_chunks_equals_put_key_one_by_one(puts, chunk, seed_offset, seed_time):
    """Seven entries fit: the batch stops where put_key starts refusing."""
    one = ix.IndexFile(bytearray(ix.index_file_size(3, 8)), 3, 8, seed_offset, seed_time)
    many = ix.IndexFile(bytearray(ix.index_file_size(3, 8)), 3, 8, seed_offset, seed_time)
    taken = [one.put_key(*put) for put in puts]
    done = 0
    for start in range(0, len(puts), chunk):
        stop = min(start + chunk, len(puts))
        done = many.put_hashes([(java_string_hash(key), offset, timestamp)
                                for key, offset, timestamp in puts[:stop]], done)
    assert done == sum(taken) == min(len(puts), 7) and taken == [True] * done + [False] * (
        len(puts) - done)
    assert bytes(many.buffer) == bytes(one.buffer) and many.header == one.header
    assert ix.IndexFile(many.buffer, 3, 8).header == many.header


def test_put_hashes_stops_at_a_value_beyond_a_java_long_with_the_header_written():
    index = ix.IndexFile(bytearray(ix.index_file_size(4, 8)), 4, 8)
    with pytest.raises(CodecError):
        index.put_hashes([(java_string_hash("T#a"), 5, 1700000000000),
                          (java_string_hash("T#b"), 1 << 63, 1700000000000)])
    assert index.index_count == 2 and ix.decode_header(index.buffer) == index.header
    assert index.select_phy_offsets("T#a") == [5]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=12), st.one_of(st.text(max_size=40),
                                       st.text("0123456789ABCDEF", min_size=32, max_size=32),
                                       st.text(st.characters(max_codepoint=127), min_size=630,
                                               max_size=650)))
def test_topic_prefix_hash_continued_is_the_hash_of_the_built_key(topic, key):
    """The topic's ``topic#`` hash continued over the key: hex ids, ASCII across the base-31
    length limit, any text."""
    assert java_string_hash_continued(ix.topic_prefix_hash(topic), key) == java_string_hash(
        ix.build_key(topic, key))


def test_key_hash_of_integer_min_value():
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE; Math.abs keeps it negative,
    # indexKeyHashMethod then uses 0.
    assert ix.index_key_hash("polygenelubricants") == 0
    assert ix.index_key_hash("TagA") == 2598919
    index = ix.IndexFile(bytearray(ix.index_file_size(4, 8)), 4, 8)
    assert index.put_key("polygenelubricants", 5, 1700000000000) and index.entry(1).key_hash == 0
    assert index.select_phy_offsets("polygenelubricants") == [5]
    assert ix.slot_position(17, 16) == 40 + 4 and ix.entry_position(1, 16) == 40 + 64 + 20
    assert ix.index_file_size() == 420000040


def test_full_file_and_chains():
    index = ix.IndexFile(bytearray(ix.index_file_size(4, 6)), 4, 6)
    for n in range(5):
        assert index.put_key("T#k", 100 + n, 1700000000000 + 1500 * n)
    assert not index.put_key("T#k", 999, 1700000000000) and index.is_write_full
    assert index.select_phy_offsets("T#k") == [104, 103, 102, 101, 100]
    assert index.select_phy_offsets("T#k", max_num=2) == [104, 103]
    assert index.select_phy_offsets("T#k", begin=1700000003001) == [104, 103]
    assert [index.entry(n).time_diff for n in range(1, 6)] == [0, 1, 3, 4, 6]
    seeded = ix.IndexFile(bytearray(ix.index_file_size(4, 6)), 4, 6, end_phy_offset=50,
                          end_timestamp=1700000000000)
    assert seeded.header.begin_phy_offset == 50 and seeded.header.begin_timestamp == 1700000000000


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=6), st.integers(0, 1 << 40),
                          st.integers(0, 1 << 42)), max_size=12),
       st.integers(0, 1 << 40), st.integers(0, 1 << 42))
def test_the_buffer_holds_the_whole_header_after_every_put(puts, seed_offset, seed_time):
    """Each put writes only the header fields it changes; what the buffer holds is always the
    complete header (a count of 0 in a fresh file reads as 1, as Java loads it)."""
    index = ix.IndexFile(bytearray(ix.index_file_size(4, 8)), 4, 8, seed_offset, seed_time)
    assert ix.decode_header(index.buffer)._replace(index_count=1) == index.header
    for key, offset, timestamp in puts:
        index.put_key(key, offset, timestamp)
        assert ix.decode_header(index.buffer) == index.header
        reread = ix.IndexFile(index.buffer, 4, 8)
        assert reread.header == index.header


def test_put_key_refuses_values_beyond_a_java_long_and_writes_nothing():
    index = ix.IndexFile(bytearray(ix.index_file_size(4, 8)), 4, 8)
    index.put_key("T#a", 5, 1700000000000)
    before = bytes(index.buffer)
    with pytest.raises(CodecError):
        index.put_key("T#b", 1 << 63, 1700000000000)
    with pytest.raises(CodecError):
        index.put_key("T#b", 6, -(1 << 63) - 1)
    assert bytes(index.buffer) == before and index.index_count == 2


@settings(max_examples=100, deadline=None)
@given(st.builds(ix.IndexHeader, _i64, _i64, _i64, _i64, _i32, _i32),
       st.builds(ix.IndexEntry, _i32, _i64, _i32, _i32))
def test_fast_path_equals_declaration(header, entry):
    data = ix.encode_header(header)
    assert data == ix.build_header_declared(header)
    assert ix.decode_header(data) == header == ix.parse_header_declared(data)
    data = ix.encode_entry(entry)
    assert data == ix.build_entry_declared(entry)
    assert ix.decode_entry(data) == entry == ix.parse_entry_declared(data)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300), st.text(max_size=10))
def test_fuzz(data, key):
    for call in (ix.decode_header, ix.decode_entry, ix.parse_header_declared,
                 ix.parse_entry_declared):
        try:
            call(data)
        except CodecError:
            pass
    try:
        index = ix.IndexFile(bytearray(data), 2, 4)
    except CodecError:
        return
    index.select_phy_offsets(key)  # garbage chains end: every step checks its bounds


@pytest.mark.java
def test_fresh_index_finds_the_same_keys(fresh_vectors):
    fresh = store_files(fresh_vectors("store_files"))
    index = fresh.index()
    for full_key, offsets in fresh.summary["java_reads"]["keys"].items():
        assert sorted(index.select_phy_offsets(full_key)) == offsets
