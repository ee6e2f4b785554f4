"""CommitLog.append_message against CommitLog.append: one record written
either way leaves the same bytes, counters and result."""

import copy

from rmqproto.codec import message as msg
from rmqproto.store.commitlog import CommitLog, check_message
from rmqproto.store.results import APPENDED
from store_support import record

SEGMENT = 4096


def _log(directory):
    log = CommitLog(str(directory), SEGMENT)
    log.load()
    return log


def _records():
    """Records that go different ways: the usual one, one the C writer leaves to Python (an
    IPv6 born host), a prepared transaction (queue offset 0), and bodies that fill a
    segment so that the next record needs the blank and a new segment."""
    usual = record("TopicA", 1, b"x" * 100, TAGS="t", KEYS="k")
    ipv6 = record("TopicA", 1, b"y" * 50)
    ipv6.born_host = ("::1", 40000)
    ipv6.sys_flag |= msg.BORNHOST_V6_FLAG
    prepared = record("TopicA", 1, b"z" * 10)
    prepared.sys_flag |= msg.TRANSACTION_PREPARED_TYPE
    filling = [record("TopicB", 0, b"f" * 900) for _ in range(6)]
    return [usual, ipv6, prepared, usual] + filling


def _append_all(log, records, one_by_one):
    results = []
    for i, rec in enumerate(records):
        rec = copy.deepcopy(rec)
        _, properties, total = check_message(rec, 4 * 1024 * 1024)
        if one_by_one:
            results.append(log.append_message(rec, 1700000000000 + i, properties, total))
        else:
            results.append(log.append([rec], 1700000000000 + i, [properties], total))
    return results


def test_append_message_writes_what_append_writes(tmp_path):
    ours, theirs = _log(tmp_path / "one"), _log(tmp_path / "batch")
    got = _append_all(ours, _records(), True)
    want = _append_all(theirs, _records(), False)
    assert len(ours.queue.files) == len(theirs.queue.files) > 1  # a blank and a new segment
    for a, b in zip(got, want):
        assert a.status is b.status is APPENDED
        assert [getattr(a, s) for s in type(a).__slots__] == [
            getattr(b, s) for s in type(b).__slots__]
    assert ours.topic_queue_table == theirs.topic_queue_table == {
        ("TopicA", 1): 3, ("TopicB", 0): 6}
    for a, b in zip(ours.queue.files, theirs.queue.files):
        assert a.wrote_position == b.wrote_position
        assert a.mm[:a.wrote_position] == b.mm[:b.wrote_position]
    ours.close()
    theirs.close()


def test_append_message_refuses_a_record_larger_than_a_segment(tmp_path):
    log = _log(tmp_path)
    big = record("TopicA", 0, b"b" * SEGMENT)
    _, properties, total = check_message(big, 4 * 1024 * 1024)
    result = log.append_message(big, 1, properties, total)
    assert result.status.name == "MESSAGE_SIZE_EXCEEDED"
    assert log.topic_queue_table == {}
    log.close()


def test_append_message_without_the_c_speedups(tmp_path, monkeypatch):
    monkeypatch.setattr("rmqproto.store.commitlog.speedups", None)
    test_append_message_writes_what_append_writes(tmp_path)
