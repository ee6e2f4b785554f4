"""``DLedgerConfig``'s names and defaults, and the ``ILedger`` contract of ``MemoryLedger``."""

import pytest
from zope.interface.verify import verifyObject

from rmqproto.codec.dledger import BODY_OFFSET, DLedgerEntry
from rmqproto.codec.dledger_rpc import DLedgerResponseCode
from rmqproto.dledger import DLedgerConfig, DLedgerConfigError, ILedger, LedgerError, MemoryLedger

#: ``DLedgerConfig`` of DLedger 0.3.1.2: property name → default.
JAVA_DEFAULTS = {
    "group": "default", "selfId": "n0", "peers": "n0-localhost:20911",
    "storeBaseDir": "/tmp/dledgerstore", "peerPushThrottlePoint": 300 * 1024 * 1024,
    "peerPushQuota": 20 * 1024 * 1024, "maxPendingRequestsNum": 10000,
    "maxWaitAckTimeMs": 2500, "maxPushTimeOutMs": 1000, "enableLeaderElector": True,
    "heartBeatTimeIntervalMs": 2000, "maxHeartBeatLeak": 3, "minVoteIntervalMs": 300,
    "maxVoteIntervalMs": 1000, "fileReservedHours": 72, "deleteWhen": "04",
    "flushFileInterval": 10, "checkPointInterval": 3000,
    "mappedFileSizeForEntryData": 1024 * 1024 * 1024,
    "mappedFileSizeForEntryIndex": 32 * 5 * 1024 * 1024, "enablePushToFollower": True,
    "preferredLeaderIds": None, "maxLeadershipTransferWaitIndex": 1000,
    "minTakeLeadershipVoteIntervalMs": 30, "maxTakeLeadershipVoteIntervalMs": 100,
    "isEnableBatchPush": False, "maxBatchPushSize": 4 * 1024,
    "leadershipTransferWaitTimeout": 1000, "dataStorePath": None,
    "diskSpaceRatioToCheckExpired": 0.70, "diskSpaceRatioToForceClean": 0.85,
    "enableDiskForceClean": True,
}


def test_names_and_defaults_are_dledgers():
    config = DLedgerConfig()
    for name, default in JAVA_DEFAULTS.items():
        assert getattr(config, name) == default, name
    ours = set(DLedgerConfig.names()) - set(JAVA_DEFAULTS)
    assert ours == {"enablePreVote", "preferredLeaderRetryIntervalMs"}


def test_peers_are_read_like_member_state():
    config = DLedgerConfig(selfId="n1", peers="n0-10.0.0.1:20911;n1-host-a:20912",
                           preferredLeaderIds="n0;n1")
    assert config.peer_map == {"n0": "10.0.0.1:20911", "n1": "host-a:20912"}
    assert config.preferred_leaders == ["n0", "n1"]


@pytest.mark.parametrize("settings", [
    {"selfId": "n3"}, {"peers": "n0"}, {"peers": "n0-a:1;n0-b:2"},
    {"minVoteIntervalMs": 1000, "maxVoteIntervalMs": 1000},
])
def test_settings_that_cannot_work_are_refused(settings):
    with pytest.raises(DLedgerConfigError):
        DLedgerConfig(**settings)


def test_memory_ledger_provides_the_interface():
    ledger = MemoryLedger()
    assert verifyObject(ILedger, ledger)
    assert (ledger.begin_index, ledger.end_index, ledger.end_term, ledger.end_pos) == (
        -1, -1, -1, 0)


def test_append_as_leader_lays_out_positions():
    ledger = MemoryLedger()
    first = ledger.append_as_leader(b"abc", 1)
    second = ledger.append_as_leader(b"", 2)
    assert (first.index, first.term, first.pos, first.size) == (0, 1, 0, BODY_OFFSET + 3)
    assert (second.index, second.pos) == (1, BODY_OFFSET + 3)
    assert (ledger.end_index, ledger.end_term, ledger.end_pos) == (1, 2, 2 * BODY_OFFSET + 3)
    assert ledger.get(0) == first


def test_get_outside_the_range():
    ledger = MemoryLedger()
    ledger.append_as_leader(b"a", 1)
    for index, code in ((1, DLedgerResponseCode.INDEX_OUT_OF_RANGE),
                        (-1, DLedgerResponseCode.INDEX_OUT_OF_RANGE)):
        with pytest.raises(LedgerError) as caught:
            ledger.get(index)
        assert caught.value.code is code
    ledger.truncate(DLedgerEntry(index=5, term=1, body=b"x", pos=500))
    with pytest.raises(LedgerError) as caught:
        ledger.get(4)
    assert caught.value.code is DLedgerResponseCode.INDEX_LESS_THAN_LOCAL_BEGIN


def test_append_as_follower_checks_index_and_position():
    source = MemoryLedger()
    entries = [source.append_as_leader(b"x%d" % k, 1) for k in range(3)]
    ledger = MemoryLedger()
    with pytest.raises(LedgerError) as caught:
        ledger.append_as_follower(entries[1])
    assert caught.value.code is DLedgerResponseCode.INCONSISTENT_INDEX
    ledger.append_as_follower(entries[0])
    moved = DLedgerEntry(index=1, term=1, body=b"x1", pos=7, size=entries[1].size)
    with pytest.raises(LedgerError) as caught:
        ledger.append_as_follower(moved)
    assert caught.value.code is DLedgerResponseCode.DISK_ERROR
    assert ledger.append_as_follower(entries[1]) == entries[1]


def test_truncate_keeps_the_prefix_and_makes_the_entry_last():
    ledger = MemoryLedger()
    for k in range(4):
        ledger.append_as_leader(b"old%d" % k, 1)
    replacement = DLedgerEntry(index=2, term=2, body=b"new", pos=ledger.get(2).pos)
    replacement.compute_size()
    assert ledger.truncate(replacement) == 2
    assert [e.body for e in ledger.entries] == [b"old0", b"old1", b"new"]
    assert ledger.end_term == 2
