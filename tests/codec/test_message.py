"""Commit-log records, blanks, scanning, properties, batches and msgIds against the Java classes."""

import ipaddress
import struct

import pytest
from hypothesis import given, settings, strategies as st

from rmqproto.codec import message as m
from rmqproto.codec.javalang import masked_crc32
from rmqproto.errors import BadMagicError, ChecksumError, CodecError
from storefiles_support import canonical, store_files
from support.interop import load_vectors
from support.recordstrategies import HOSTS, INT32, INT64, TOPICS, properties


def _host(pair):
    return (pair[0], pair[1])


def _same_ip(a, b):
    return ipaddress.ip_address(a) == ipaddress.ip_address(b)


def _check_record_fields(record, fields):
    fields = dict({"properties": {}}, **fields)  # Java leaves an empty map null
    assert record.store_size == fields["store_size"]
    for name in ("body_crc", "queue_id", "flag", "queue_offset", "commit_log_offset", "sys_flag",
                 "born_timestamp", "store_timestamp", "reconsume_times",
                 "prepared_transaction_offset", "topic", "properties", "msg_id"):
        assert getattr(record, name) == fields[name], name
    for name in ("born_host", "store_host"):
        ip, port = getattr(record, name)
        assert _same_ip(ip, fields[name][0]) and port == fields[name][1]
    assert m.uncompressed_body(record).hex() == fields["uncompressed_body"]


# ---------------------------------------------------------------- Java vectors

@pytest.mark.parametrize("vector", load_vectors("store_message_record"), ids=lambda v: v["name"])
def test_record_vectors(vector):
    data = bytes.fromhex(vector["hex"])
    record = m.decode_record(data, check_crc=not vector["name"].startswith("zlib"))
    _check_record_fields(record, vector["fields"])
    assert m.parse_record_declared(data) == record
    assert m.encode_record(record) == data
    assert m.build_record_declared(record) == data


@pytest.mark.parametrize("vector", load_vectors("store_properties"), ids=lambda v: v["name"])
def test_properties_vectors(vector):
    text = bytes.fromhex(vector["hex"]).decode("utf-8")
    props = m.string_to_properties(text)
    assert props == vector["fields"]["properties"]
    if vector["fields"]["written_by_java"]:
        assert m.properties_to_string(props) == text
        assert m.string_to_properties(m.properties_to_string(props, trailing_separator=True)) == props


def _batch_fields(messages):
    return [dict(flag=x.flag, body=x.body.hex(), properties=x.properties) for x in messages]


@pytest.mark.parametrize("vector", load_vectors("store_batch"), ids=lambda v: v["name"])
def test_batch_vectors(vector):
    data = bytes.fromhex(vector["hex"])
    messages = m.decode_batch(data)
    assert _batch_fields(messages) == vector["fields"]["messages"]
    assert m.parse_batch_declared(data) == messages
    assert m.encode_batch(messages) == data == m.build_batch_declared(messages)


@pytest.mark.parametrize("vector", load_vectors("store_message_id"), ids=lambda v: v["name"])
def test_message_id_vectors(vector):
    f = vector["fields"]
    (ip, port), offset = m.decode_message_id(f["msg_id"])
    assert _same_ip(ip, f["host"]) and port == f["port"] and offset == f["offset"]
    assert m.create_message_id((ip, port), offset) == f["msg_id"]
    assert bytes.fromhex(vector["hex"]).decode() == f["msg_id"]


# ---------------------------------------------------------------- the real store's commit log

def test_real_commitlog_segments():
    files = store_files(load_vectors("store_files"))
    records, scans = files.commitlog_records()
    size = files.summary["commitlog_file_size"]
    (first, scan0), (second, scan1) = scans
    assert (scan0.stop, scan1.stop) == ("blank", "empty")
    assert scan0.blank_size == size - scan0.position  # the blank declares the rest of the segment
    puts = files.summary["puts"]
    assert len(records) == len(puts) == 100
    for record, put in zip(records, puts):
        assert record.commit_log_offset == put["wrote_offset"]
        assert record.store_size == put["wrote_bytes"]
        assert record.msg_id == put["msg_id"]
        assert record.store_timestamp == put["store_timestamp"]
        assert (record.topic, record.queue_id) == (put["topic"], put["queue_id"])
        assert record.queue_offset == put["logics_offset"]
    assert records[-1].commit_log_offset + records[-1].store_size == size + scan1.position
    # every record re-encodes to exactly the stored bytes
    for record in records:
        segment = files.files[m_segment_path(record.commit_log_offset, size)]
        pos = record.commit_log_offset % size
        assert m.encode_record(record) == segment[pos:pos + record.store_size]
    assert {r.sys_flag & 0x30 for r in records} == {0, 0x10, 0x20, 0x30}


def m_segment_path(offset, size):
    from rmqproto.codec.storefile import offset_to_file_name, segment_start
    return "commitlog/" + offset_to_file_name(segment_start(offset, size))


def test_scan_stops_at_corruption():
    files = store_files(load_vectors("store_files"))
    segment = bytearray(files.files["commitlog/00000000000000000000"])
    good = list(m.iter_records(bytes(segment)))
    victim = good[5]
    segment[victim.commit_log_offset + victim.store_size - 3] ^= 0xFF  # inside properties
    segment[victim.commit_log_offset + 100] ^= 0x01  # inside the body
    scan = m.iter_records(bytes(segment), check_crc=True)
    assert len(list(scan)) == 5 and scan.stop == "corrupt"
    assert isinstance(scan.error, ChecksumError) and scan.position == victim.commit_log_offset
    segment[victim.commit_log_offset + 4] ^= 0x10  # magic
    scan = m.iter_records(bytes(segment))
    assert len(list(scan)) == 5 and isinstance(scan.error, BadMagicError)
    truncated = bytes(segment[:good[3].commit_log_offset + 50])
    scan = m.iter_records(truncated)
    assert len(list(scan)) == 3 and scan.stop == "corrupt"


def test_blank_and_needs_blank():
    assert m.encode_blank(1234) == struct.pack(">iI", 1234, 0xCBD43194)
    assert m.BLANK.build(dict(total_size=1234)) == m.encode_blank(1234)
    assert m.needs_blank(100, 107) and not m.needs_blank(100, 108)
    with pytest.raises(BadMagicError):
        m.decode_record(m.encode_blank(99) + bytes(200))


# ---------------------------------------------------------------- RMQ5 V2 records (no Java 4.9.8 producer)

def test_v2_record_layout_from_reference():
    """RMQ5 ``MessageVersion.MESSAGE_VERSION_V2``: same record, magic 0xDAA320AB, 2-byte topic length (RMQ5 writes it for topics > 127)."""
    topic = "t" * 200
    record = m.MessageRecord(topic, b"xyz", {"a": "b"}, born_host=("10.0.0.1", 1),
                             store_host=("10.0.0.2", 2))
    assert record.magic_code == m.MESSAGE_MAGIC_CODE_V2 == struct.unpack(">i", bytes.fromhex("DAA320AB"))[0]
    data = m.encode_record(record)
    assert len(data) == 92 + 3 + 200 + 3 == record.store_size
    assert data[4:8] == bytes.fromhex("DAA320AB")
    body_end = 84 + 4 + 3
    assert data[body_end:body_end + 2] == struct.pack(">h", 200)
    assert data[body_end + 2:body_end + 202] == topic.encode()
    assert data[body_end + 202:] == b"\x00\x03a\x01b"
    assert m.decode_record(data) == record == m.parse_record_declared(data)
    short = m.MessageRecord("T", b"", magic_code=m.MESSAGE_MAGIC_CODE_V2)
    assert m.decode_record(m.encode_record(short)).magic_code == m.MESSAGE_MAGIC_CODE_V2
    with pytest.raises(CodecError):
        m.encode_record(m.MessageRecord(topic, magic_code=m.MESSAGE_MAGIC_CODE))


# ---------------------------------------------------------------- small API facts

def test_properties_trailing_separator_accepted():
    props = {"TAGS": "a", "KEYS": "k1 k2"}
    assert m.properties_to_string(props) == "TAGS\x01a\x02KEYS\x01k1 k2"
    assert m.properties_to_string(props, trailing_separator=True).endswith("\x02")
    for text in (m.properties_to_string(props), m.properties_to_string(props, True)):
        assert m.string_to_properties(text) == props
    assert m.properties_to_string({"a": None, "b": "c"}) == "b\x01c"


def test_record_helpers():
    record = m.MessageRecord("T", b"b", {"TAGS": "TagA", "KEYS": "k1  k2", "UNIQ_KEY": "U"},
                             store_host=("10.9.8.7", 10911), commit_log_offset=358)
    assert record.tags_code == 2598919 and record.keys == ["k1", "k2"] and record.uniq_key == "U"
    assert record.msg_id == "0A09080700002A9F0000000000000166"
    assert record.body_crc == masked_crc32(b"b")
    assert m.tags_code(None) == m.tags_code("") == 0
    assert m.transaction_type(m.TRANSACTION_ROLLBACK_TYPE | 0x31) == m.TRANSACTION_ROLLBACK_TYPE
    with pytest.raises(CodecError):
        m.decode_message_id("XYZ")
    with pytest.raises(CodecError):
        m.decode_message_id("Z" * 32)


# ---------------------------------------------------------------- property tests

_i32, _i64, _host_st, _props = INT32, INT64, HOSTS, properties()
_records = st.builds(
    m.MessageRecord,
    topic=TOPICS,
    body=st.binary(max_size=300), properties=_props, queue_id=_i32, flag=_i32, queue_offset=_i64,
    commit_log_offset=_i64, sys_flag=_i32, born_timestamp=_i64, born_host=_host_st,
    store_timestamp=_i64, store_host=_host_st, reconsume_times=_i32,
    prepared_transaction_offset=_i64, body_crc=st.one_of(st.none(), _i32),
    magic_code=st.one_of(st.none(), st.just(m.MESSAGE_MAGIC_CODE_V2)))


@settings(max_examples=150, deadline=None)
@given(_records)
def test_record_fast_path_equals_declaration(record):
    data = m.encode_record(record)
    assert data == m.build_record_declared(record)
    fast, declared = m.decode_record(data), m.parse_record_declared(data)
    assert fast == declared
    assert m.encode_record(fast) == data
    scan = m.iter_records(data + m.encode_blank(50) + bytes(42))
    assert list(scan) == [fast] and scan.stop == "blank" and scan.position == len(data)


def _dispatch_fields_of(record):
    """What :func:`m.decode_dispatch_fields` must return, read from a fully decoded record."""
    return tuple(getattr(record, name) for name in m.DISPATCH_FIELDS)


@settings(max_examples=150, deadline=None)
@given(_records, st.booleans())
def test_dispatch_fields_agree_with_the_full_decoder(record, check_crc):
    data = m.encode_record(record)
    expected = _outcome(lambda d: _dispatch_fields_of(m.decode_record(d, 0, check_crc)), data)
    assert _outcome(lambda d: m.decode_dispatch_fields(d, 0, check_crc), data) == expected
    scan = m.iter_dispatch_fields(data + data + m.encode_blank(50) + bytes(42), 0, check_crc)
    if expected is CodecError:  # a body CRC that does not match
        assert list(scan) == [] and (scan.stop, scan.position) == ("corrupt", 0)
    else:
        assert list(scan) == [expected] * 2
        assert (scan.stop, scan.position) == ("blank", 2 * len(data))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.builds(m.Message, body=st.binary(max_size=100), properties=_props, flag=_i32),
                max_size=4))
def test_batch_fast_path_equals_declaration(messages):
    data = m.encode_batch(messages)
    assert data == m.build_batch_declared(messages)
    assert m.decode_batch(data) == messages == m.parse_batch_declared(data)


@settings(max_examples=100, deadline=None)
@given(_props, st.booleans())
def test_properties_round_trip(props, trailing):
    assert m.string_to_properties(m.properties_to_string(props, trailing)) == props


@settings(max_examples=100, deadline=None)
@given(_host_st, _i64)
def test_message_id_round_trip(host, offset):
    (ip, port), back = m.decode_message_id(m.create_message_id(host, offset))
    assert _same_ip(ip, host[0]) and (port, back) == (host[1], offset)


@settings(max_examples=200, deadline=None)
@given(_host_st, _i64)
def test_message_id_fast_path_equals_packed_bytes(host, offset):
    packed = m._pack_ip(host[0]) + struct.pack(">iq", host[1], offset)
    assert m.create_message_id(host, offset) == packed.hex().upper()


def test_encode_record_takes_the_encoded_properties():
    record = m.MessageRecord("T", b"body", {"UNIQ_KEY": "K", "TAGS": "é"})
    encoded = m.properties_to_string(record.properties).encode("utf-8")
    assert m.encode_record(record, encoded) == m.encode_record(record) == \
        m.build_record_declared(record)


def _outcome(fn, data):
    """The decoded value, or ``CodecError`` for any of its subclasses (anything else propagates)."""
    try:
        return fn(data)
    except CodecError:
        return CodecError


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_fuzz_random_bytes(data):
    assert _outcome(m.decode_record, data) == _outcome(m.parse_record_declared, data)
    assert _outcome(m.decode_batch, data) == _outcome(m.parse_batch_declared, data)
    list(m.iter_records(data))
    assert _outcome(m.decode_dispatch_fields, data) == (
        _outcome(lambda d: _dispatch_fields_of(m.decode_record(d)), data))
    _outcome(lambda d: m.string_to_properties(d.decode("utf-8", "replace")), data)
    _outcome(lambda d: m.decode_message_id(d.decode("latin-1")), data)


@settings(max_examples=200, deadline=None)
@given(_records, st.lists(st.tuples(st.integers(0, 10000), st.integers(0, 255)), min_size=1,
                          max_size=4), st.integers(0, 400))
def test_fuzz_mutated_records(record, flips, cut):
    data = bytearray(m.encode_record(record))
    for pos, value in flips:
        data[pos % len(data)] = value
    for candidate in (bytes(data), bytes(data[:cut])):
        fast = _outcome(m.decode_record, candidate)
        assert fast == _outcome(m.parse_record_declared, candidate)
        scan = m.iter_records(candidate, check_crc=True)
        records = list(scan)
        assert scan.stop in ("blank", "empty", "corrupt")
        quick = m.iter_dispatch_fields(candidate, check_crc=True)
        assert list(quick) == [_dispatch_fields_of(r) for r in records]
        assert (quick.stop, quick.position, repr(quick.error)) == (
            scan.stop, scan.position, repr(scan.error))
        assert _outcome(lambda d: m.decode_dispatch_fields(d, 0, True), candidate) == (
            _outcome(lambda d: _dispatch_fields_of(m.decode_record(d, 0, True)), candidate))


# ---------------------------------------------------------------- against Java

@pytest.mark.java
def test_fresh_vectors_equal_checked_in(fresh_vectors):
    for kind in ("store_message_record", "store_properties", "store_batch", "store_message_id",
                 "store_javalang"):
        assert fresh_vectors(kind) == load_vectors(kind), kind
    # A real store: identical except for the values taken from the clock.
    assert canonical(store_files(fresh_vectors("store_files"))) == canonical(
        store_files(load_vectors("store_files")))


@pytest.mark.java
def test_java_decodes_our_records(java_interop):
    records = [
        m.MessageRecord("TopicTest", bytes(range(256)) * 3, {"TAGS": "标签", "KEYS": "a b", "UNIQ_KEY": "U1"},
                        queue_id=2, flag=9, queue_offset=77, commit_log_offset=65536 * 3 + 8,
                        born_timestamp=1700000000000, born_host=("10.0.0.1", 5555),
                        store_timestamp=1700000000005, store_host=("fd00::abcd", 10911),
                        reconsume_times=1),
        m.MessageRecord("主题", b"", {}, sys_flag=m.TRANSACTION_PREPARED_TYPE,
                        born_host=("2001:db8::1", 1), store_host=("127.0.0.1", 2)),
        m.MessageRecord("t" * 127, b"x", {"a": "b"}),
    ]
    blobs = [m.encode_record(r) for r in records]
    for record, answer in zip(records, java_interop.decode("store_message_record", blobs)):
        f = answer["fields"]
        _check_record_fields(record, dict(f, uncompressed_body=f["body"]))
    for record, answer in zip(records, java_interop.decode("store_record_check", blobs)):
        f = answer["fields"]
        assert f["success"] and f["msg_size"] == record.store_size
        assert f["tags_code"] == record.tags_code and f["topic"] == record.topic
        assert f.get("uniq_key") == record.uniq_key


@pytest.mark.java
def test_java_recovery_check_agrees_on_corruption(java_interop):
    """Where the broker's recovery check fails, our decoder fails too, and vice versa."""
    base = m.encode_record(m.MessageRecord("TopicT", b"0123456789" * 5, {"TAGS": "x"},
                                           commit_log_offset=100))
    cases = [base]
    for pos in (0, 3, 5, 8, 86, 90, 140, len(base) - 4, len(base) - 1):
        broken = bytearray(base)
        broken[pos] ^= 0x5A
        cases.append(bytes(broken))
    cases.append(m.encode_blank(4000))
    answers = java_interop.decode("store_record_check", cases)
    for data, answer in zip(cases, answers):
        # A huge corrupt TOTALSIZE makes Java allocate it: OutOfMemoryError ("error").
        f = answer.get("fields", {})
        java_ok = bool(f.get("success")) and f["msg_size"] > 0
        try:
            m.decode_record(data, check_crc=True)
            ours = True
        except CodecError:
            ours = False
        assert ours == java_ok, (data.hex(), answer)


@pytest.mark.java
def test_java_decodes_our_properties_batches_and_ids(java_interop):
    props = [{"TAGS": "a", "KEYS": "k1 k2"}, {"ключ": "значение😀"}, {}]
    texts = [m.properties_to_string(p, trailing) for p in props for trailing in (False, True)]
    answers = java_interop.decode("store_properties", [t.encode() for t in texts])
    assert [a["fields"] for a in answers] == [p for p in props for _ in (0, 1)]
    batch = [m.Message(b"abc", {"UNIQ_KEY": "X"}, 3), m.Message(b"", {}, 0)]
    (answer,) = java_interop.decode("store_batch", [m.encode_batch(batch)])
    assert answer["fields"] == _batch_fields(batch)
    ids = [m.create_message_id(("10.1.2.3", 10911), 99), m.create_message_id(("fd00::5", 7), 1 << 40)]
    for msg_id, answer in zip(ids, java_interop.decode("store_message_id", [i.encode() for i in ids])):
        (ip, port), offset = m.decode_message_id(msg_id)
        f = answer["fields"]
        assert _same_ip(f["host"], ip) and (f["port"], f["offset"]) == (port, offset)
