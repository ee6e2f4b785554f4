"""The store on a DLedger commit log (``DLedgerMessageStore``) in a group of one on a real
reactor: sends and batches through the member, records inside entries at ``pos + 48``,
consume queues and queries from committed entries, restarts and a torn tail."""

import importlib.util
import os
from pathlib import Path

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock

from dledger_support import Group, offset_of, put, record
from rmqproto.codec import dledger as entry_codec
from rmqproto.codec.message import decode_record
from rmqproto.config import ConfigError
from rmqproto.store.config import STORE_SETTINGS
from rmqproto.store.defaultstore import DefaultMessageStore
from rmqproto.store.dledger import DLedgerMessageStore, dledger_config
from rmqproto.store.results import GetMessageStatus, PutMessageStatus
from support.realreactor import poll_until, run_reactor


def data_dir(group, member):
    return os.path.join(str(group.root), member, "dledger-%s" % member, "data")


def test_sends_and_batches_become_entries_read_back_through_the_queues(tmp_path):
    @defer.inlineCallbacks
    def scenario(reactor):
        group = Group(reactor, tmp_path, ids=["n0"])
        store = group.open("n0")
        try:
            yield group.wait_for_leader()
            first = yield put(store, record(body=b"one", KEYS="k1"))
            assert first.status is PutMessageStatus.PUT_OK
            appended = first.append_result
            # the first entry at 0: its record at 48, the offset msgId and PHYSICALOFFSET say so
            assert appended.wrote_offset == 48 == offset_of(appended.msg_id)
            assert appended.logics_offset == 0
            batch = yield put(store, *[record(body=b"b%d" % k) for k in range(3)])
            assert batch.status is PutMessageStatus.PUT_OK
            assert batch.append_result.logics_offset == 1 and batch.append_result.msg_num == 3
            offsets = [offset_of(i) for i in batch.append_result.msg_id.split(",")]
            yield poll_until(reactor, lambda: store.get_max_offset_in_queue("TopicA", 0) == 4)
            got = store.get_message("g", "TopicA", 0, 0, 32)
            assert got.status is GetMessageStatus.FOUND
            records = [decode_record(m) for m in got.messages]
            assert [r.body for r in records] == [b"one", b"b0", b"b1", b"b2"]
            assert [r.queue_offset for r in records] == [0, 1, 2, 3]
            assert [r.commit_log_offset for r in records] == [48] + offsets
            assert store.look_message_by_offset(offsets[1]).body == b"b1"
            assert store.get_commit_log_offset_in_queue("TopicA", 0, 2) == offsets[1]
            found = store.query_message("TopicA", "k1", 32, 0, 2 ** 62)
            assert [decode_record(m).body for m in found.messages] == [b"one"]
            # the entries on disk: [header][record], the record's position pos + 48
            ledger = store.commit_log.ledger
            entry = ledger.get(1)
            assert entry.pos + entry_codec.BODY_OFFSET == offsets[0]
            assert decode_record(entry.body).commit_log_offset == offsets[0]
            assert store.get_max_phy_offset() == ledger.committed_pos == ledger.end_pos
        finally:
            yield group.close_all()

    run_reactor(scenario, timeout=30)


def test_a_member_that_is_not_the_leader_writes_nothing_and_is_busy(tmp_path):
    @defer.inlineCallbacks
    def scenario(reactor):
        group = Group(reactor, tmp_path)  # three members, one of them up: no leader
        store = group.open("n0")
        try:
            refused = yield put(store, record())
            assert refused.status is PutMessageStatus.OS_PAGECACHE_BUSY
            assert refused.append_result.wrote_offset == 0
            assert store.commit_log.ledger.end_index == -1
            assert store.get_max_phy_offset() == 0
            store.config["brokerRole"] = "SLAVE"
            refused = yield put(store, record())
            assert refused.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        finally:
            yield group.close_all()

    run_reactor(scenario, timeout=30)


def test_a_restart_keeps_queues_and_offsets_and_a_torn_tail_is_cut(tmp_path):
    @defer.inlineCallbacks
    def scenario(reactor):
        group = Group(reactor, tmp_path, ids=["n0"])
        store = group.open("n0")
        yield group.wait_for_leader()
        bodies = [b"m%03d" % k + b"x" * 900 for k in range(150)]  # more than one 64 KiB segment
        for k, body in enumerate(bodies):
            result = yield put(store, record(body=body, KEYS="key%d" % k))
            assert result.status is PutMessageStatus.PUT_OK
        yield poll_until(reactor, store.dispatched)
        assert len(os.listdir(data_dir(group, "n0"))) == 3
        yield group.close("n0")
        store = group.open("n0")
        assert store.get_max_offset_in_queue("TopicA", 0) == 150
        assert store.commit_log.topic_queue_table[("TopicA", 0)] == 150
        yield group.wait_for_leader()
        result = yield put(store, record(body=b"after"))
        assert result.append_result.logics_offset == 150
        yield poll_until(reactor, lambda: store.get_max_offset_in_queue("TopicA", 0) == 151)
        # a crash that tore the last entry: its header zeroed, abort left behind
        last = store.commit_log.ledger.get(150)
        yield group.close("n0")
        open(os.path.join(str(tmp_path), "n0", "abort"), "wb").close()
        size = 64 * 1024
        with open(os.path.join(data_dir(group, "n0"), "%020d" % (last.pos - last.pos % size)),
                  "r+b") as f:
            f.seek(last.pos % size)
            f.write(bytes(entry_codec.BODY_OFFSET))
        store = group.open("n0")
        try:
            assert store.commit_log.ledger.end_index == 149
            assert store.get_max_offset_in_queue("TopicA", 0) == 150
            got = store.get_message("g", "TopicA", 0, 149, 32)
            assert [decode_record(m).body for m in got.messages] == [bodies[-1]]
            # the index lost its files after the crash: made whole again
            for k in (0, 77, 149):
                found = store.query_message("TopicA", "key%d" % k, 32, 0, 2 ** 62)
                assert [decode_record(m).body for m in found.messages] == [bodies[k]]
            yield group.wait_for_leader()
            result = yield put(store, record(body=b"again"))
            assert result.append_result.logics_offset == 150
        finally:
            yield group.close_all()

    run_reactor(scenario, timeout=40)


def test_the_member_settings_come_from_the_store_settings_as_java_passes_them(tmp_path):
    group = Group(None, tmp_path, ids=["n0"])
    values, _ = STORE_SETTINGS.resolve()
    values.update(group.settings("n0"), fileReservedTime=48, deleteWhen="03",
                  enableBatchPush=True, diskMaxUsedSpaceRatio=60, preferredLeaderId="n0")
    config = dledger_config(values)
    assert (config.mappedFileSizeForEntryData, config.fileReservedHours, config.deleteWhen,
            config.group, config.selfId, config.isEnableBatchPush, config.preferredLeaderIds,
            config.diskSpaceRatioToCheckExpired) == (64 * 1024, 49, "03", "g", "n0", True, "n0",
                                                     0.6)
    assert config.storeBaseDir == os.path.join(str(tmp_path), "n0")
    assert entry_codec.store_paths(config.storeBaseDir, "n0")["data"] == data_dir(group, "n0")
    with pytest.raises(ConfigError):
        dledger_config(dict(values, dLegerSelfId="n7"))
    # the store plugin picks the DLedger store by enableDLegerCommitLog, as Java's does
    # (this checkout's plugin: the installed rmqproto_plugins may be another checkout's)
    spec = importlib.util.spec_from_file_location(
        "stores_plugin", Path(__file__).parents[2] / "plugins" / "rmqproto_stores.py")
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    DefaultStore = plugin.DefaultStore
    assert isinstance(DefaultStore.create(values, Clock()), DLedgerMessageStore)
    assert type(DefaultStore.create(dict(values, enableDLegerCommitLog=False), Clock())) \
        is DefaultMessageStore
