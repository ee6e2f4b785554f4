"""The master's pure HA rules (``docs/ha.md``): replica tracking, where a transfer
starts, the group-transfer waits and the flow monitor. No sockets, no clock."""

import pytest

from rmqproto.ha.flowcontrol import UNLIMITED, FlowMonitor
from rmqproto.ha.replicas import ReplicaTable, ReportKind, fallbehind_max, transfer_start
from rmqproto.ha.transfer import GroupTransferWaits
from rmqproto.store.config import STORE_SETTINGS

MIB = 1024 * 1024
FILE = 16 * MIB


def config(**overrides):
    values, _ = STORE_SETTINGS.resolve()
    values.update(mappedFileSizeCommitLog=FILE, **overrides)
    return values


# ---------------------------------------------------------------- transfer start


@pytest.mark.parametrize("request_offset, max_offset, min_offset, expected", [
    (0, 0, -1, (0, False)),                       # empty master
    (0, 5000, 0, (0, False)),                     # 0: start of the last segment
    (0, 3 * FILE + 77, FILE, (3 * FILE, False)),
    (0, 2 * FILE, FILE, (2 * FILE, False)),       # last segment full: its end
    (1234, 5000, 0, (1234, False)),               # else the request
    (FILE + 5, 3 * FILE, 2 * FILE, (2 * FILE, True)),  # below the oldest kept file
    (2 * FILE, 3 * FILE, 2 * FILE, (2 * FILE, False)),
])
def test_transfer_start(request_offset, max_offset, min_offset, expected):
    assert transfer_start(request_offset, max_offset, min_offset, FILE) == expected


def test_fallbehind_max_takes_the_rocketmq5_name_when_set():
    assert fallbehind_max(config()) == 256 * MIB
    assert fallbehind_max(config(haMaxGapNotInSync=MIB)) == MIB


# ---------------------------------------------------------------- replica table


def table(**overrides):
    return ReplicaTable(config(**overrides), now=0)


def _oldest_kept():
    """The oldest kept offset of a log whose first segment is still there."""
    return 0


def _not_asked():
    raise AssertionError("the oldest kept offset was asked for an ack")


def sent_and_acked(t, token, offset, now, max_offset=5000):
    """``token``'s slave requests 0 (the stream starts at 0), is sent up to ``offset`` and
    acks it (an ack counts only for bytes its connection was sent)."""
    replica = t.replicas[token]
    if not replica.reported:
        t.report(token, 0, now, max_offset, _oldest_kept)
    replica.transfer_from_where = max(replica.transfer_from_where, offset)
    return t.report(token, offset, now, max_offset, _not_asked)


def test_first_report_is_the_request_later_ones_acks():
    t = table()
    r = t.register("a", "10.0.0.5:4000", 0)
    first = t.report("a", 1000, 10, max_offset=5000, oldest=_oldest_kept)
    assert (first.kind, first.start, first.below_min) == (ReportKind.REQUEST, 1000, False)
    assert (r.slave_request_offset, r.slave_ack_offset, r.transfer_from_where) == (1000, 1000, 1000)
    assert t.push2slave_max_offset == 0  # a request claims what was never sent here
    r.transfer_from_where = 3000  # the adapter sent up to 3000
    later = t.report("a", 3000, 20, 5000, _not_asked)  # an ack needs no oldest offset
    assert later.kind is ReportKind.ACK and later.start is None
    assert (r.slave_request_offset, r.slave_ack_offset) == (1000, 3000)
    assert t.push2slave_max_offset == 3000


def test_push2slave_max_offset_is_the_largest_ack_ever():
    t = table()
    t.register("a", "10.0.0.5:1", 0)
    t.register("b", "10.0.0.6:1", 0)
    sent_and_acked(t, "a", 4000, 1)
    sent_and_acked(t, "b", 2000, 1)
    outcome = t.report("a", 3000, 2, 5000, _not_asked)  # a slave that went back
    assert outcome.kind is ReportKind.ACK and outcome.regressed == 4000
    assert t.replicas["a"].slave_ack_offset == 3000  # the newest report wins, as in Java
    assert t.replicas["a"].transfer_from_where == 4000  # the stream goes on where it is
    assert t.push2slave_max_offset == 4000


@pytest.mark.parametrize("first", [True, False])
def test_a_report_beyond_the_master_max_offset_is_refused(first):
    t = table()
    r = t.register("a", "10.0.0.5:1", 0)
    if not first:
        sent_and_acked(t, "a", 100, 1)
    outcome = t.report("a", 5001, 2, 5000, _oldest_kept)
    assert outcome.kind is ReportKind.BEYOND_MAX
    assert r.slave_ack_offset == (-1 if first else 100)
    assert t.push2slave_max_offset == (0 if first else 100)


def test_is_slave_ok_needs_a_live_reported_replica_within_the_gap():
    t = table(haSlaveFallbehindMax=1000)
    assert not t.is_slave_ok(10, now=0)           # no connection
    t.register("probe", "10.0.0.5:1", 0)
    assert not t.is_slave_ok(10, now=0)           # connected, never reported (a port probe)
    t.register("a", "10.0.0.6:1", 0)
    sent_and_acked(t, "a", 500, 0)
    assert t.is_slave_ok(1499, now=0)
    assert not t.is_slave_ok(1500, now=0)         # gap == haSlaveFallbehindMax
    assert t.is_slave_ok(1499, now=10_000)        # heard 10 s ago: 2 x heartbeat interval
    assert not t.is_slave_ok(1499, now=10_001)    # silent longer: not live any more
    sent_and_acked(t, "a", 600, 12_000)
    assert t.is_slave_ok(1599, now=12_000)


def test_the_gap_is_measured_against_live_replicas_only():
    t = table(haSlaveFallbehindMax=1000)
    t.register("old", "10.0.0.5:1", 0)
    sent_and_acked(t, "old", 4000, 0)
    t.register("new", "10.0.0.6:1", 0)
    sent_and_acked(t, "new", 100, 20_000)
    # push2SlaveMaxOffset still remembers 4000, but only "new" is live
    assert t.push2slave_max_offset == 4000
    assert not t.is_slave_ok(4500, now=20_000)
    assert t.is_slave_ok(1099, now=20_000)


def test_a_reconnected_slave_retires_its_silent_older_connections():
    t = table()
    t.register("stale", "10.0.0.5:4000", 0)
    t.report("stale", 100, 0, 5000, _oldest_kept)
    t.register("sibling", "10.0.0.5:4001", 0)  # another slave on the same host, reporting
    t.register("other-host", "10.0.0.9:4000", 0)
    t.report("other-host", 100, 0, 5000, _oldest_kept)
    t.register("new", "10.0.0.5:4002", 11_000)
    t.report("sibling", 100, 10_000, 5000, _oldest_kept)
    outcome = t.report("new", 100, 11_000, 5000, _oldest_kept)
    assert outcome.retired == ["stale"]  # the sibling was heard 1 s ago; other hosts untouched
    # a newer connection is never retired by an older one
    assert t.report("stale", 100, 30_000, 5000, _oldest_kept).retired == []


def test_housekeeping_finds_connections_silent_for_the_interval():
    t = table(haHousekeepingInterval=20_000)
    t.register("quiet", "10.0.0.5:1", 0)   # never sends anything
    t.register("busy", "10.0.0.6:1", 0)
    t.heard("busy", 15_000)                # part of a report counts as traffic
    assert t.expired(20_000) == []
    assert t.expired(20_001) == ["quiet"]
    assert t.unregister("quiet").addr == "10.0.0.5:1"
    assert t.unregister("quiet") is None


def test_runtime_info_names_and_values():
    t = table(haSlaveFallbehindMax=1000)
    t.register("a", "10.0.0.5:4000", 0)
    sent_and_acked(t, "a", 4500, 0)
    t.register("b", "10.0.0.6:4000", 0)
    info = t.runtime_info(5000, now=0)
    assert info == {
        "haConnectionCount": "2", "push2SlaveMaxOffset": "4500", "slaveFallBehindMuch": "500",
        "masterCommitLogMaxOffset": "5000", "inSyncSlaveNums": "1",
        "slaveAckOffset_10.0.0.5:4000": "4500", "diff_10.0.0.5:4000": "500",
        "inSync_10.0.0.5:4000": "true", "transferFromWhere_10.0.0.5:4000": "4500",
        "transferredByteInSecond_10.0.0.5:4000": "0",
        "slaveAckOffset_10.0.0.6:4000": "-1", "diff_10.0.0.6:4000": "5000",
        "inSync_10.0.0.6:4000": "false", "transferFromWhere_10.0.0.6:4000": "-1",
        "transferredByteInSecond_10.0.0.6:4000": "0",
    }


def test_ha_runtime_info_is_rocketmq5s_body_of_the_same_figures():
    t = table(haSlaveFallbehindMax=1000)
    t.register("a", "10.0.0.5:4000", 0)
    t.report("a", 4500, 0, 5000, _oldest_kept)
    t.replicas["a"].flow.add(700, 10)
    t.register("b", "10.0.0.6:4000", 0)
    info = t.ha_runtime_info(5000, now=1500)
    assert (info.master, info.master_commit_log_max_offset, info.in_sync_slave_nums) == (True, 5000, 1)
    assert [(c.addr, c.slave_ack_offset, c.diff, c.in_sync, c.transfer_from_where,
             c.transferred_byte_in_second) for c in info.ha_connection_info] == [
        ("10.0.0.5:4000", 4500, 500, True, 4500, 700),
        ("10.0.0.6:4000", -1, 5000, False, -1, 0)]


# ---------------------------------------------------------------- group transfer waits


def test_an_ack_answers_the_prefix_it_covers():
    w = GroupTransferWaits()
    for offset in (100, 200, 300):
        w.add(offset, 3000, offset)
    assert w.acked(99) == []
    assert w.acked(250) == [100, 200]
    assert len(w) == 1 and w.next_deadline() == 3000
    assert w.acked(300) == [300] and w.next_deadline() is None


def test_deadlines_expire_each_wait_on_its_own_time():
    w = GroupTransferWaits()
    w.add(100, 3000, "a")
    w.add(200, 3500, "b")
    assert w.expired(2999) == []
    assert w.expired(3000) == ["a"]
    assert w.next_deadline() == 3500
    assert w.expired(4000) == ["b"]


def test_out_of_order_offsets_and_deadlines_stay_correct():
    w = GroupTransferWaits()
    w.add(300, 3000, "c")
    w.add(100, 5000, "a")    # ends before a waiting put: kept in offset order
    w.add(400, 2000, "d")    # a clock that stepped back: an earlier deadline behind
    assert w.next_deadline() == 2000
    assert w.expired(2000) == ["d"]
    assert w.acked(150) == ["a"]
    assert w.expired(3000) == ["c"]
    assert len(w) == 0


def test_many_waits_are_answered_in_one_pass():
    w = GroupTransferWaits()
    for i in range(10_000):
        w.add(i * 100 + 100, 3000 + i // 100, i)
    assert w.acked(500_000) == list(range(5000))
    assert w.expired(3060) == list(range(5000, 6100))
    assert w.take_all() == list(range(6100, 10_000))


# ---------------------------------------------------------------- flow monitor


def test_flow_monitor_off_counts_but_never_caps():
    f = FlowMonitor(False, 1000, now=0)
    f.add(5000, 0)
    assert f.can_transfer(10) == UNLIMITED
    assert f.speed(999) == 0
    assert f.speed(1000) == 5000     # last whole second
    assert f.speed(2500) == 0        # a second without traffic


def test_flow_monitor_caps_each_second():
    f = FlowMonitor(True, 1000, now=0)
    assert f.can_transfer(0) == 1000
    f.add(700, 0)
    assert f.can_transfer(500) == 300
    f.add(300, 600)
    assert f.can_transfer(900) == 0
    assert f.next_window(900) == 1000
    assert f.can_transfer(1000) == 1000
    assert f.speed(1000) == 1000
