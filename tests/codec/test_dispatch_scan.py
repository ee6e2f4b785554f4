"""DispatchScan.take, the reput's batch reader, against the record-by-record scan
(``docs/store.md``, "Dispatching")."""

from hypothesis import given, settings, strategies as st

from rmqproto.codec import message as m
from rmqproto.codec.javalang import masked_crc32
from support.recordstrategies import HOSTS, INT32, INT64, TOPICS, properties

_IPV4 = st.tuples(st.ip_addresses(v=4).map(str), st.integers(0, 65535))
_KEYS = st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "WAIT"])
#: Mostly what the fast path reads (version 1, IPv4 hosts), sometimes anything else.
_records = st.builds(
    m.MessageRecord, topic=TOPICS, body=st.binary(max_size=64),
    properties=st.one_of(properties(), st.dictionaries(_KEYS, st.text(min_size=1, max_size=8))),
    queue_id=INT32, flag=INT32, queue_offset=INT64, commit_log_offset=INT64,
    sys_flag=st.one_of(st.just(0), INT32), born_timestamp=INT64,
    born_host=st.one_of(_IPV4, _IPV4, HOSTS), store_timestamp=INT64,
    store_host=st.one_of(_IPV4, _IPV4, HOSTS), reconsume_times=INT32,
    prepared_transaction_offset=INT64, body_crc=st.one_of(st.none(), st.none(), INT32),
    magic_code=st.one_of(st.none(), st.none(), st.just(m.MESSAGE_MAGIC_CODE_V2)))
_endings = st.sampled_from([b"", m.encode_blank(60) + bytes(52), bytes(30), b"\x00" * 5 + b"\x07"])
_flips = st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=3)


def _segment(records, ending, flips, cut):
    data = bytearray(b"".join(m.encode_record(r) for r in records) + ending)
    for pos, value in flips:
        if data:
            data[pos % len(data)] = value
    return bytes(data[:cut]) if cut is not None else bytes(data)


def _state(scan):
    return scan.stop, scan.position, repr(scan.error), scan.blank_size


@settings(max_examples=300, deadline=None)
@given(st.lists(_records, max_size=6), _endings, _flips,
       st.one_of(st.none(), st.integers(0, 800)), st.booleans(), st.integers(1, 4),
       st.one_of(st.none(), st.integers(1, 300)), st.integers(0, 2))
def test_take_reads_what_iteration_reads(records, ending, flips, cut, check_crc, count, step, start):
    data = _segment(records, ending, flips, cut)
    one_by_one = m.RecordScan(data, 0, check_crc, m.decode_dispatch_fields)
    expected = list(one_by_one)
    scan = m.iter_dispatch_fields(data, 0, check_crc)
    taken = []
    limit = None if step is None else step
    while True:
        batch = scan.take(count, limit)
        assert len(batch) <= count
        taken += batch
        if scan.stop is not None:
            assert scan.take(count, limit) == []
            break
        reached = limit is not None and scan.position >= limit
        assert len(batch) == count or reached  # nothing else ends a batch early
        if reached:
            limit = scan.position + step
    assert taken == expected
    assert _state(scan) == _state(one_by_one)
    # a scan starting inside the data agrees too (mid-record starts are corrupt on both sides)
    assert m.iter_dispatch_fields(data, start, check_crc).take(100) == list(
        m.RecordScan(data, start, check_crc, m.decode_dispatch_fields))


def test_take_of_a_stored_segment_in_slices():
    records = [m.MessageRecord("TopicTest", b"x" * i, {"TAGS": "t%d" % i, "UNIQ_KEY": "U%d" % i},
                               queue_id=i % 3, queue_offset=i // 3) for i in range(20)]
    data = b"".join(m.encode_record(r) for r in records) + m.encode_blank(200)
    scan = m.iter_dispatch_fields(memoryview(data))
    first = scan.take(5)
    assert [f[0] for f in first] == ["TopicTest"] * 5 and scan.stop is None
    assert [f[7]["TAGS"] for f in first] == ["t0", "t1", "t2", "t3", "t4"]
    rest = scan.take(100, limit=len(data) // 2)
    assert scan.stop is None and scan.position >= len(data) // 2
    rest += scan.take(100)
    assert len(first + rest) == 20 and (scan.stop, scan.blank_size) == ("blank", 200)
    assert scan.position == len(data) - 8
    assert [f[-1] for f in first + rest] == [r.store_size for r in records]


def _raw_record(topic_length_byte, topic, properties):
    """A version-1, IPv4 record laid out by hand, with any topic length byte."""
    body = b"body"
    total = 88 + len(body) + 1 + len(topic) + 2 + len(properties)
    head = m._FIXED[0].pack(total, m.MESSAGE_MAGIC_CODE, masked_crc32(body), 0, 0, 0, 0, 0, 0,
                            bytes(4), 0, 0, bytes(4), 0, 0, 0, len(body))
    return (head + body + bytes((topic_length_byte,)) + topic
            + (len(properties) & 0xFFFF).to_bytes(2, "big") + properties)


def test_take_rejects_lengths_beyond_their_fields():
    """A topic length byte above 127 and a properties length above 32767 are negative in
    Java (signed byte, signed short): corrupt, even where the bytes would line up."""
    for data in (_raw_record(200, b"t" * 200, b"TAGS\x01a"),
                 _raw_record(1, b"t", b"p" * 40000)):
        scan, one_by_one = m.iter_dispatch_fields(data), m.iter_dispatch_fields(data)
        assert scan.take(10) == list(one_by_one) == []
        assert _state(scan) == _state(one_by_one) and scan.stop == "corrupt"
    good = _raw_record(1, b"t", b"TAGS\x01a")
    assert m.iter_dispatch_fields(good).take(10)[0][0] == "t"
