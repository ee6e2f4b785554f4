"""Upgrading a classic commit log in place to a DLedger one (``dividedCommitlogOffset``):
the last old file sealed, the DLedger data from the next file boundary, reads on both sides
of it, restarts, and the retention rule while old files remain."""

import os

from twisted.internet import defer

from dledger_support import SMALL, Group, pull_bodies, put, record
from rmqproto.codec import message as msg
from rmqproto.store.defaultstore import DefaultMessageStore
from rmqproto.store.dledger.commitlog import KEEP_DLEDGER_HOURS
from rmqproto.store.results import PutMessageStatus
from support.realreactor import poll_until, run_reactor

SEGMENT = SMALL["mappedFileSizeCommitLog"]


def classic_store(reactor, group):
    """A classic store with 100 messages of about 1 KiB (two segments) on n0's root."""
    settings = dict(group.settings("n0"), enableDLegerCommitLog=False)
    store = DefaultMessageStore(settings, reactor)
    store.load()
    store.start()
    for k in range(100):
        store.put_message(record(body=b"old%03d" % k + b"o" * 1000, KEYS="old%d" % k))
    store.shutdown()


def test_a_classic_log_is_sealed_and_continued_in_dledger_files(tmp_path):
    @defer.inlineCallbacks
    def scenario(reactor):
        group = Group(reactor, tmp_path, ids=["n0"])
        classic_store(reactor, group)
        old_dir = os.path.join(str(tmp_path), "n0", "commitlog")
        assert sorted(os.listdir(old_dir)) == ["%020d" % 0, "%020d" % SEGMENT]
        store = group.open("n0")
        log = store.commit_log
        assert log.divided_commitlog_offset == 2 * SEGMENT
        assert [f.file_from_offset for f in log.ledger.data.files] == [2 * SEGMENT]
        scan = msg.iter_records(log.queue.files[-1].mm)
        assert len(list(scan)) > 0 and scan.stop == "blank"  # the last old file is sealed
        assert store.get_max_offset_in_queue("TopicA", 0) == 100
        assert pull_bodies(store, 98, 2)[0].startswith(b"old098")
        try:
            yield group.wait_for_leader()
            result = yield put(store, record(body=b"new"))
            assert result.status is PutMessageStatus.PUT_OK
            assert result.append_result.wrote_offset == 2 * SEGMENT + 48
            assert result.append_result.logics_offset == 100
            yield poll_until(reactor, lambda: store.get_max_offset_in_queue("TopicA", 0) == 101)
            got = pull_bodies(store, 98, 32)
            assert [b[:6] for b in got] == [b"old098", b"old099", b"new"]
            assert store.query_message("TopicA", "old5", 32, 0, 2 ** 62).messages
            assert store.get_min_phy_offset() == 0

            # a restart finds the division in the data files
            yield group.close("n0")
            store = group.open("n0")
            log = store.commit_log
            assert log.divided_commitlog_offset == 2 * SEGMENT
            assert [b[:6] for b in pull_bodies(store, 98, 32)] == [b"old098", b"old099", b"new"]

            # retention: the old files go first, the DLedger files are kept meanwhile
            member = store.dledger_config
            assert (yield store.retention.delete_expired_segments(True)) == 1
            assert member.fileReservedHours == KEEP_DLEDGER_HOURS
            assert not member.enableDiskForceClean
            assert (yield store.retention.delete_expired_segments(True)) == 1  # the last one
            assert not log.has_old_files and store.get_min_phy_offset() == 2 * SEGMENT
            assert (yield store.retention.delete_expired_segments(True)) == 0
            assert member.fileReservedHours == store.config["fileReservedTime"] + 1
            assert member.enableDiskForceClean
            yield store.retention.clean_consume_queues()
            assert store.get_min_offset_in_queue("TopicA", 0) == 100
            assert pull_bodies(store, 100, 32) == [b"new"]
        finally:
            yield group.close_all()

    run_reactor(scenario, timeout=40)
