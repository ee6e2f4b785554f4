"""The store's pure rules, without files: recovery decisions, flush thresholds, group commit,
pull caps and offset corrections, put checks, delay levels (``docs/store.md``)."""

import struct

import pytest
from hypothesis import given, settings, strategies as st

from rmqproto.codec import message as msg
from rmqproto.errors import CodecError
from rmqproto.store import recovery
from rmqproto.store.commitlog import check_batch, check_message
from rmqproto.store.config import STORE_SETTINGS
from rmqproto.store.consumequeue import search_offset_by_time, valid_prefix_length
from rmqproto.store.defaultstore import next_offset_correction, to_schedule_topic
from rmqproto.store.dispatch import SCHEDULE_TOPIC, dispatch_request, parse_delay_levels
from rmqproto.store.flush import GroupCommitRequests, least_pages_for
from rmqproto.store.mappedfile import able_to_flush
from rmqproto.store.results import PutMessageStatus as S
from rmqproto.store.transfer import is_the_batch_full, transfer_caps
from store_support import record

CONFIG = STORE_SETTINGS.resolve()[0]
CAPS = transfer_caps(CONFIG)
DELAYS = parse_delay_levels(CONFIG["messageDelayLevel"])


def encoded(offset, store_timestamp=1000, **kw):
    r = record(**kw)
    r.commit_log_offset = offset
    r.store_timestamp = store_timestamp
    return msg.encode_record(r)


# ---------------------------------------------------------------- recovery

def test_normal_recovery_starts_at_the_third_last_segment():
    assert [recovery.normal_start_index(n) for n in range(6)] == [0, 0, 0, 0, 1, 2]


def test_abnormal_recovery_starts_at_newest_segment_stored_before_the_checkpoint():
    assert recovery.abnormal_start_index([100, 200, 300, None], 250) == 1
    assert recovery.abnormal_start_index([100, 200, 300], 300) == 2
    assert recovery.abnormal_start_index([100, 200], 50) == 0
    assert recovery.abnormal_start_index([None, None], 10 ** 15) == 0


def test_first_record_timestamp_reads_the_store_time_and_rejects_other_bytes():
    assert recovery.first_record_timestamp(encoded(0, 1234) + bytes(100)) == 1234
    assert recovery.first_record_timestamp(bytes(200)) is None
    assert recovery.first_record_timestamp(msg.encode_blank(100) + bytes(92)) is None


def test_walk_follows_blanks_and_stops_at_a_torn_tail():
    size = 1024
    first = encoded(0)
    seg0 = bytearray(size)
    seg0[:len(first)] = first
    seg0[len(first):len(first) + 8] = msg.encode_blank(size - len(first))
    second = encoded(size)
    seg1 = bytearray(size)
    seg1[:len(second)] = second
    seg1[len(second):len(second) + 40] = encoded(size + len(second))[:40]  # torn
    seen = []
    end = recovery.walk_commit_log([(0, seg0), (size, seg1)], 0, True, seen.append)
    assert end == size + len(second)
    offset = msg.DISPATCH_FIELDS.index("commit_log_offset")
    assert [fields[offset] for fields in seen] == [0, size]


def test_walk_stops_at_a_bad_crc():
    data = bytearray(encoded(0) + encoded(100))
    first_len = len(encoded(0))
    data[first_len + 90] ^= 0xFF  # a body byte of the second record
    buffer = data + bytes(200)
    assert recovery.walk_commit_log([(0, buffer)], 0, True) == first_len
    assert recovery.walk_commit_log([(0, buffer)], 0, False) == len(data)


def test_reput_starts_at_what_the_consume_queues_cover():
    assert recovery.reput_start_offset([10, 500, -1], 0) == 500
    assert recovery.reput_start_offset([], 4096) == 4096
    assert recovery.reput_start_offset([100], 4096) == 4096


def test_consume_queue_valid_prefix_stops_at_first_invalid_unit():
    unit = struct.Struct(">qiq")
    data = unit.pack(0, 100, 1) + unit.pack(100, 50, 2) + unit.pack(150, 0, 0) + unit.pack(200, 9, 0)
    assert valid_prefix_length(data + bytes(40), 120) == 40
    blank = unit.pack(0, 0x7FFFFFFF, 0)
    assert valid_prefix_length(blank * 3 + bytes(20), 80) == 60


# ---------------------------------------------------------------- flushing

def test_able_to_flush_counts_dirty_pages():
    assert not able_to_flush(3 * 4096, 0, False, 4)
    assert able_to_flush(4 * 4096, 0, False, 4)
    assert able_to_flush(1, 0, False, 0)
    assert not able_to_flush(5, 5, True, 0)
    assert able_to_flush(100, 0, True, 4)


def test_thorough_interval_drops_the_page_threshold():
    assert least_pages_for(1000, 0, 4, 10_000) == (4, 0)
    assert least_pages_for(10_000, 0, 4, 10_000) == (0, 10_000)


def test_group_commit_answers_covered_and_expired_requests():
    requests = GroupCommitRequests()
    requests.add(100, 5000, "a")
    requests.add(200, 5001, "b")
    requests.add(300, 6000, "c")
    assert requests.covered(150) == ["a"]
    assert requests.next_deadline() == 5001
    assert requests.expired(5500) == ["b"]
    assert requests.covered(300) == ["c"]
    assert len(requests) == 0


# ---------------------------------------------------------------- pulls

def test_batch_caps_memory_and_disk():
    assert not is_the_batch_full(1000, 1, 0, 0, False, CAPS)  # never before the first message
    assert is_the_batch_full(10, 2, 10, 2, False, CAPS)
    assert is_the_batch_full(10, 100, 10, 32, False, CAPS)  # maxTransferCountOnMessageInMemory
    assert not is_the_batch_full(10, 100, 10, 31, False, CAPS)
    assert is_the_batch_full(10, 100, 10, 8, True, CAPS)  # maxTransferCountOnMessageInDisk
    assert is_the_batch_full(2000, 100, 64 * 1024 - 1000, 2, True, CAPS)
    assert not is_the_batch_full(2000, 100, 64 * 1024 - 1000, 2, False, CAPS)
    assert is_the_batch_full(2000, 100, 256 * 1024 - 1000, 2, False, CAPS)


def test_slave_keeps_the_requested_offset():
    assert next_offset_correction(5, 9, "ASYNC_MASTER", False) == 9
    assert next_offset_correction(5, 9, "SLAVE", False) == 5
    assert next_offset_correction(5, 9, "SLAVE", True) == 9


def test_offset_by_time_picks_exact_or_nearer_neighbour():
    units = [(i * 100, 100) for i in range(5)]
    times = {0: 10, 100: 20, 200: 30, 300: 40, 400: 50}
    store_time = lambda offset, size: times[offset]  # noqa: E731
    assert search_offset_by_time(units, 0, 30, store_time, 0) == 2
    assert search_offset_by_time(units, 0, 33, store_time, 0) == 2
    assert search_offset_by_time(units, 0, 37, store_time, 0) == 3
    assert search_offset_by_time(units, 0, 5, store_time, 0) == 0
    assert search_offset_by_time(units, 0, 99, store_time, 0) == 4
    assert search_offset_by_time(units, 0, 35, lambda o, s: -1, 0) is None


# ---------------------------------------------------------------- puts

def test_put_checks():
    limit = CONFIG["maxMessageSize"]
    assert check_message(record(), limit)[0] is S.PUT_OK
    assert check_message(record(topic="t" * 128), limit)[0] is S.MESSAGE_ILLEGAL
    assert check_message(record(topic="é" * 64), limit)[0] is S.MESSAGE_ILLEGAL  # 128 bytes
    assert check_message(record(body=bytes(limit + 1)), limit)[0] is S.MESSAGE_ILLEGAL
    assert check_message(record(body=bytes(limit)), limit)[0] is S.PUT_OK
    assert check_message(record(P="é" * 20000), limit)[0] is S.PROPERTIES_SIZE_EXCEEDED
    assert check_message(record(P="x" * 40000), limit)[0] is S.MESSAGE_ILLEGAL
    # the properties string the append then writes, encoded once, and the size it takes
    checked, other = record(P="é"), record()
    _, props, size = check_message(checked, limit)
    assert props == msg.properties_to_string(checked.properties).encode("utf-8")
    assert size == checked.store_size == len(msg.encode_record(checked, props))
    _, props, total = check_batch([checked, other], limit)
    assert props == [msg.properties_to_string(r.properties).encode("utf-8")
                     for r in (checked, other)]
    assert total == checked.store_size + other.store_size


@pytest.mark.parametrize("topic", [".", "..", "%RETRY%a/b", "/", "a\0b", "%DLQ%\0"])
def test_a_topic_that_cannot_name_a_directory_is_illegal(topic):
    """Its consume queue would nest a directory or have no name (Java's dispatch then fails
    or its next start cannot load the queue): refused before anything is written."""
    limit = CONFIG["maxMessageSize"]
    assert check_message(record(topic=topic), limit) == (S.MESSAGE_ILLEGAL, None, None)
    assert check_batch([record(topic=topic)], limit) == (S.MESSAGE_ILLEGAL, None, None)
    assert check_message(record(topic=topic.replace("/", "|").replace("\0", "%") + "x"),
                         limit)[0] is S.PUT_OK


def test_batch_checks():
    limit = CONFIG["maxMessageSize"]
    assert check_batch([record(), record()], limit)[0] is S.PUT_OK
    assert check_batch([], limit)[0] is S.MESSAGE_ILLEGAL
    assert check_batch([record(), record(queue_id=1)], limit)[0] is S.MESSAGE_ILLEGAL
    # only the batch's own DELAY refuses it (below); a message's is stored as it is
    assert check_batch([record(), record(DELAY="2")], limit)[0] is S.PUT_OK
    tx = record()
    tx.sys_flag |= msg.TRANSACTION_PREPARED_TYPE
    assert check_batch([tx], limit)[0] is S.MESSAGE_ILLEGAL
    assert check_batch([record(body=bytes(limit // 2)), record(body=bytes(limit // 2))],
                       limit)[0] is S.MESSAGE_ILLEGAL
    assert check_batch([record(P="é" * 20000)], limit)[0] is S.PROPERTIES_SIZE_EXCEEDED


def _decoded(messages, batch_properties=None, **fields):
    body = msg.encode_batch(messages)
    return msg.decode_batch_records(body, batch_properties or {"CLUSTER": "C", "WAIT": "true"},
                                    record(**fields))


def test_batch_checks_take_a_batch_records_stored_properties():
    limit = CONFIG["maxMessageSize"]
    records = _decoded([msg.Message(b"a", {"UNIQ_KEY": "U1", "WAIT": "true"}),
                        msg.Message(b"b", {"TAGS": "T"}, 3)])
    status, properties, total = check_batch(records, limit)
    assert status is S.PUT_OK
    assert properties == [r.stored_properties for r in records] == [
        b"UNIQ_KEY\x01U1\x02WAIT\x01true\x02CLUSTER\x01C\x02WAIT\x01true",
        b"TAGS\x01T\x02CLUSTER\x01C\x02WAIT\x01true"]
    assert [r.store_size for r in records] == [
        len(msg.encode_record(r, p)) for r, p in zip(records, properties)]
    assert total == sum(r.store_size for r in records)
    records[1].stored_properties = ("P\x01" + "é" * 16400).encode()  # trusted as it is
    assert check_batch(records, limit)[0] is S.PROPERTIES_SIZE_EXCEEDED


def test_batch_checks_the_batch_body_as_it_came():
    """``checkMessages``: the batch body's own length against ``maxMessageSize``."""
    messages = [msg.Message(b"x" * 100, {"UNIQ_KEY": "U%d" % i}) for i in range(3)]
    records = _decoded(messages, {"CLUSTER": "C" * 200})
    body_length = len(msg.encode_batch(messages))
    assert records.body_length == body_length
    assert check_batch(records, body_length)[0] is S.PUT_OK
    assert check_batch(records, body_length - 1)[0] is S.MESSAGE_ILLEGAL


def test_only_the_batchs_own_delay_level_refuses_it():
    limit = CONFIG["maxMessageSize"]
    own = _decoded([msg.Message(b"a", {"DELAY": "3"})])
    assert check_batch(own, limit)[0] is S.PUT_OK
    assert own[0].properties["DELAY"] == "3"
    for level, status in (("3", S.MESSAGE_ILLEGAL), ("+1", S.MESSAGE_ILLEGAL),
                          ("0", S.PUT_OK), ("-2", S.PUT_OK)):
        batch = _decoded([msg.Message(b"a")], {"CLUSTER": "C", "DELAY": level})
        assert check_batch(batch, limit)[0] is status, level
    # Integer.parseInt throws in Java (SYSTEM_ERROR): so does the check
    for level in ("x", "", " 3", "3_0", "99999999999"):
        with pytest.raises(CodecError, match="DELAY"):
            check_batch(_decoded([msg.Message(b"a")], {"DELAY": level}), limit)


def test_batch_properties_over_32767_bytes_raise_as_javas_encoder_throws():
    limit = CONFIG["maxMessageSize"]
    fits = {"CLUSTER": "C", "P": "x" * (32767 - len("CLUSTER\x01C\x02P\x01"))}
    assert check_batch(_decoded([msg.Message(b"a")], fits), limit)[0] is S.PUT_OK
    with pytest.raises(CodecError, match="32768 bytes exceed 32767"):
        check_batch(_decoded([msg.Message(b"a")], dict(fits, CLUSTER="CC")), limit)
    # the batch's string fits, the message's with it does not: Java would write a corrupt length
    long_own = _decoded([msg.Message(b"a", {"Q": "y"})], fits)
    assert check_batch(long_own, limit)[0] is S.PROPERTIES_SIZE_EXCEEDED


def test_batch_checks_size_each_sys_flag():
    v6 = record()
    v6.born_host = ("::1", 5)
    v6.sys_flag |= msg.BORNHOST_V6_FLAG
    records = [record(), v6, record()]
    assert check_batch(records, CONFIG["maxMessageSize"])[0] is S.PUT_OK
    assert [r.store_size for r in records] == [len(msg.encode_record(r)) for r in records]
    assert records[1].store_size == records[0].store_size + 12


# ---------------------------------------------------------------- delay levels

def test_delay_levels_parse_like_java():
    assert DELAYS[1] == 1000 and DELAYS[5] == 60_000 and DELAYS[18] == 7_200_000
    assert parse_delay_levels("1s 2d") == {1: 1000, 2: 172_800_000}
    for text in ("", "  ", "1s 5x", "s"):  # Java's parseDelayLevel fails on these
        with pytest.raises(ValueError):
            parse_delay_levels(text)


def test_delay_moves_to_schedule_topic_with_real_topic_and_queue():
    r = record(topic="T", queue_id=3, DELAY="3")
    to_schedule_topic(r, 18)
    assert (r.topic, r.queue_id) == (SCHEDULE_TOPIC, 2)
    assert r.properties["REAL_TOPIC"] == "T" and r.properties["REAL_QID"] == "3"
    clamped = record(DELAY="99")
    to_schedule_topic(clamped, 18)
    assert clamped.queue_id == 17 and clamped.properties["DELAY"] == "18"
    prepared = record(DELAY="3")
    prepared.sys_flag |= msg.TRANSACTION_PREPARED_TYPE
    to_schedule_topic(prepared, 18)
    assert prepared.topic == "TopicA"
    plain = record(DELAY="0")
    to_schedule_topic(plain, 18)
    assert plain.topic == "TopicA"


def test_schedule_tags_code_is_the_delivery_time():
    r = record(topic=SCHEDULE_TOPIC, TAGS="x", DELAY="2")
    r.store_timestamp = 1_000_000
    assert dispatch_request(r, DELAYS).tags_code == 1_005_000
    r.properties["DELAY"] = "40"  # clamped to level 18
    assert dispatch_request(r, DELAYS).tags_code == 1_000_000 + 7_200_000
    plain = record(TAGS="TagA")
    assert dispatch_request(plain, DELAYS).tags_code == msg.tags_code("TagA")


@settings(max_examples=50)
@given(st.integers(0, 30), st.integers(1, 10), st.integers(0, 10))
def test_walk_never_passes_the_written_records(count, body, cut):
    records = b"".join(encoded(0, body=bytes(body)) for _ in range(count))
    # offsets inside are not checked by recovery; a cut tail is dropped
    buffer = records[:len(records) - cut] + bytes(64)
    end = recovery.walk_commit_log([(0, buffer)], 0, True)
    unit = len(encoded(0, body=bytes(body)))
    kept = max(len(records) - cut, 0)
    # trailing zero bytes of a cut record may come back from the zero padding
    assert kept // unit * unit <= end <= len(records) and end % unit == 0
