"""The pure rules of the DLedger commit log: reading records out of entries with
``DLedgerCommitLog#checkMessageAndReturnSize``'s ``[magic][next]`` rule, the append status
mapping, the PHYSICALOFFSET hook; and the queue offsets a new leader counts from a tail
of entries that are not committed yet."""

import struct

import pytest
from twisted.internet import defer

from dledger_support import Group, put, record
from rmqproto.codec import dledger as entry_codec
from rmqproto.codec import message as msg
from rmqproto.codec.dledger_rpc import DLedgerResponseCode as Code
from rmqproto.store.dledger.entries import (EntryScan, put_status, set_physical_offset,
                                            split_records)
from rmqproto.store.results import PutMessageStatus as S
from support.realreactor import run_reactor


def encoded(*records):
    """Records encoded back to back, and their dispatch fields (queue offsets from 5)."""
    total = sum(len(msg.encode_record(r)) for r in records)
    data = bytearray(total)
    _, fields = msg.write_stored_batch(data, 0, total, list(records),
                                       [msg.properties_utf8(r.properties) for r in records],
                                       1700000000123, 0, 5)
    return data, fields


def entry(index, pos, body):
    body = set_physical_offset(pos + entry_codec.BODY_OFFSET, bytearray(body))
    return entry_codec.encode_entry(entry_codec.DLedgerEntry(index=index, term=1, pos=pos,
                                                             body=bytes(body)))


def test_records_are_read_out_of_entries_and_a_blank_closes_the_segment():
    data, fields = encoded(record(body=b"a", KEYS="k"), record(body=b"bb"))
    first, second = split_records(data, fields)
    buffer = entry(0, 0, first)
    buffer += entry(1, len(buffer), second)
    end = len(buffer)
    buffer += entry_codec.encode_blank(64)
    scan = EntryScan(memoryview(buffer))
    got = scan.take(10)
    assert [(f[0], f[2], f[3], f[-1]) for f in got] == [
        ("TopicA", 5, 48, len(first)), ("TopicA", 6, len(entry(0, 0, first)) + 48, len(second))]
    assert got[0][7]["KEYS"] == "k"
    assert (scan.stop, scan.position) == ("blank", end)
    # a limit stops between entries; the rest comes with the next take
    scan = EntryScan(memoryview(buffer))
    assert len(scan.take(10, limit=1)) == 1 and scan.stop is None
    assert len(scan.take(10)) == 1 and scan.stop == "blank"


def test_classic_records_below_the_division_are_read_as_such():
    data, fields = encoded(record(body=b"old"))
    buffer = bytes(data) + msg.encode_blank(100) + bytes(92)
    scan = EntryScan(memoryview(buffer))
    assert [f[-1] for f in scan.take(10)] == [len(data)]
    assert (scan.stop, scan.position) == ("blank", len(data))


def test_the_end_an_entry_without_a_record_and_garbage():
    buffer = entry(0, 0, b"not a record") + bytes(16)  # the hook leaves a short body alone
    scan = EntryScan(memoryview(buffer))
    assert scan.take(10) == [] and scan.skipped == [0]
    assert (scan.stop, scan.position) == ("empty", 48 + 12)
    scan = EntryScan(memoryview(entry(0, 0, b"x")[:30]))  # not all readable yet
    assert scan.take(10) == [] and (scan.stop, scan.position) == ("empty", 0)
    scan = EntryScan(memoryview(struct.pack(">ii", 7, 1000) + bytes(8)))
    assert scan.take(10) == [] and scan.stop == "corrupt" and scan.error is not None


@pytest.mark.parametrize("code, status", [
    (Code.SUCCESS, S.PUT_OK), (Code.NOT_LEADER, S.SERVICE_NOT_AVAILABLE),
    (Code.INCONSISTENT_LEADER, S.SERVICE_NOT_AVAILABLE),
    (Code.LEADER_NOT_READY, S.SERVICE_NOT_AVAILABLE), (Code.DISK_FULL, S.SERVICE_NOT_AVAILABLE),
    (Code.WAIT_QUORUM_ACK_TIMEOUT, S.OS_PAGECACHE_BUSY),
    (Code.LEADER_PENDING_FULL, S.OS_PAGECACHE_BUSY), (Code.TERM_CHANGED, S.UNKNOWN_ERROR),
    (int(Code.LEADER_TRANSFERRING), S.UNKNOWN_ERROR)])
def test_the_status_of_a_settled_append(code, status):
    assert put_status(code) is status


def test_a_new_leader_counts_the_records_of_its_uncommitted_tail(tmp_path):
    @defer.inlineCallbacks
    def scenario(reactor):
        group = Group(reactor, tmp_path, ids=["n0"])
        store = group.open("n0")
        try:
            yield group.wait_for_leader()
            for k in range(3):
                yield put(store, record(body=b"c%d" % k))
            # entries of an older leader that this one holds, not committed yet
            ledger = store.commit_log.ledger
            data, fields = encoded(record(body=b"t0"), record(topic="TopicB", body=b"t1"))
            for body in split_records(data, fields):
                ledger.append_as_leader(bytes(body), 0)
            store.commit_log.topic_queue_table.clear()
            store.recover_topic_queue_table()
            table = store.commit_log.topic_queue_table
            assert (table[("TopicA", 0)], table[("TopicB", 0)]) == (6, 7)
            assert store.dispatched() and store.get_max_offset_in_queue("TopicA", 0) == 3
        finally:
            yield group.close_all()

    run_reactor(scenario, timeout=30)
