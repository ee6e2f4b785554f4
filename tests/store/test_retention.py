"""Retention and disk-space protection (rmqproto.store.retention): the pure rules, then the
service on a store with 64 KiB segments, 10-unit consume queues and a fake clock."""

import os
import time

import pytest
from hypothesis import given, strategies as st

from rmqproto.codec import message as msg
from rmqproto.store import retention as r
from rmqproto.store.results import GetMessageStatus as G, PutMessageStatus as S
from store_support import put, record

HOUR = 3600
#: The store clock starts at 1700000000 s = 2023-11-14 22:13:20 UTC; the tests use UTC hours.
START_HOUR = 22
QUIET = dict(deleteCommitLogFilesInterval=0, deleteConsumeQueueFilesInterval=0,
             deleteWhen="%02d" % ((START_HOUR + 12) % 24))


# ------------------------------------------------------------------ pure rules

@pytest.mark.parametrize("text, hours", [
    ("04", [4]), ("04;16", [4, 16]), ("4;", [4]), (";", []), ("+7", [7])])
def test_delete_hours(text, hours):
    assert r.delete_hours(text) == hours


@pytest.mark.parametrize("text", ["", "4a", " 4", "4;;x", ";4;x"])
def test_delete_hours_refuses_what_integer_parse_int_refuses(text):
    with pytest.raises(ValueError):
        r.delete_hours(text)


def test_is_time_to_delete_uses_the_local_hour():
    now = 1700000000 * 1000  # 22:13 UTC
    assert r.is_time_to_delete("04;22", now, time.gmtime)
    assert not r.is_time_to_delete("04;21", now, time.gmtime)
    assert r.is_time_to_delete("%02d" % time.localtime(now / 1000).tm_hour, now)


@pytest.mark.parametrize("percent, ratio", [(75, 0.75), (5, 0.10), (99, 0.95), (10, 0.10)])
def test_disk_max_used_ratio_is_clamped(percent, ratio):
    assert r.disk_max_used_ratio(percent) == ratio


@pytest.mark.parametrize("physic, logics, expected", [
    (0.50, 0.50, (False, False, False)),      # all fine: flag cleared
    (0.80, 0.50, (True, False, False)),       # over diskMaxUsedSpaceRatio: delete expired files
    (0.86, 0.50, (True, True, None)),         # over the forcible ratio: delete even unexpired
    (0.91, 0.50, (True, True, True)),         # over the warning level: disk full
    (-1.0, 0.99, (True, False, False)),       # unknown: delete; the logics disk is not looked at
    (0.50, 0.91, (True, True, True)),         # the consume-queue disk counts too
    (0.50, 0.86, (True, True, False)),        # ... and its level is the last word on the flag
    (0.50, -1.0, (True, False, False)),
])
def test_space_check(physic, logics, expected):
    assert tuple(r.space_check(physic, logics, 0.90, 0.85, 0.75)) == expected


def test_space_check_with_a_high_max_ratio_reaches_the_logics_disk():
    # 0.92 > warning but < max (0.95): the consume-queue disk is checked and clears the flag
    assert r.space_check(0.92, 0.30, 0.90, 0.85, 0.95) == r.SpaceCheck(False, True, False)


def test_is_space_full():
    assert r.is_space_full(0.91, 0.90) and not r.is_space_full(0.90, 0.90)


def test_expired_by_time():
    day = 24 * HOUR * 1000
    times = [0, 10, 20, 30]
    assert r.expired_by_time(times, day + 15, day, False) == 2
    assert r.expired_by_time(times, day + 99, day, False) == 3   # never the last one
    assert r.expired_by_time([0, 99, 0, 0], day + 50, day, False) == 1  # stops at a kept one
    assert r.expired_by_time(times, 0, day, True) == 3
    assert r.expired_by_time(list(range(30)), 0, day, True) == r.DELETE_FILES_BATCH_MAX
    assert r.expired_by_time([], 0, day, True) == 0


@given(st.lists(st.integers(0, 10 ** 6), max_size=30), st.integers(0, 2 * 10 ** 6),
       st.integers(0, 10 ** 6), st.booleans())
def test_expired_by_time_deletes_a_prefix_and_never_the_last(times, now, reserved, forced):
    count = r.expired_by_time(times, now, reserved, forced)
    assert 0 <= count <= min(max(len(times) - 1, 0), r.DELETE_FILES_BATCH_MAX)
    assert all(forced or now >= t + reserved for t in times[:count])


def test_expired_by_offset():
    assert r.expired_by_offset([100, 200, 300, 400], 250) == 2
    assert r.expired_by_offset([100, 200], 10 ** 9) == 1           # never the last one
    assert r.expired_by_offset([100, None, 150, 400], 250) == 1    # an unwritten unit stops
    assert r.expired_by_offset([], 5) == 0


class _Stat:
    def __init__(self, blocks, bfree, bavail, frsize=4096):
        self.f_blocks, self.f_bfree, self.f_bavail, self.f_frsize = blocks, bfree, bavail, frsize


def test_disk_partition_used_ratio_rounds_up_and_ignores_reserved_blocks(monkeypatch):
    # used 600 of 1000 blocks, 100 reserved for root: 600 / (600 + 300) = 66.7% -> 0.67
    monkeypatch.setattr(r.os, "statvfs", lambda path: _Stat(1000, 400, 300))
    assert r.disk_partition_used_ratio("/x") == 0.67
    monkeypatch.setattr(r.os, "statvfs", lambda path: _Stat(1000, 500, 500))
    assert r.disk_partition_used_ratio("/x") == 0.5
    monkeypatch.setattr(r.os, "statvfs", lambda path: _Stat(0, 0, 0))
    assert r.disk_partition_used_ratio("/x") == -1.0


def test_disk_partition_used_ratio_of_a_real_and_a_missing_path(tmp_path):
    assert 0 < r.disk_partition_used_ratio(str(tmp_path)) <= 1
    assert r.disk_partition_used_ratio(str(tmp_path / "missing")) == -1.0


# ------------------------------------------------------------------ the service on files

class Disk:
    """The injected disk: one used ratio per store directory (default for all)."""

    def __init__(self, ratio=0.30):
        self.ratio = ratio
        self.by_path = {}

    def __call__(self, path):
        return self.by_path.get(path, self.ratio)


def open_store(stores, disk=None, background=False, **config):
    """A started store on the injected disk; its periodic retention runs only with
    ``background`` (other tests call :func:`run_pass` themselves)."""
    settings = dict(QUIET)
    settings.update(config)
    store = stores.open(**settings)
    store.retention.disk_used_ratio = disk or Disk()
    store.retention.localtime = time.gmtime
    if not background:
        store.retention.stop()
    return store


def fill(store, count, queues=2, body=1000):
    """``count`` messages of ~1 KiB over ``queues`` queues of TopicA, 1 ms apart."""
    for i in range(count):
        result = put(store, record("TopicA", i % queues, bytes([i % 251]) * body,
                                   TAGS="T", KEYS="key-%d" % i))
        assert result.status is S.PUT_OK
        store.reactor.advance(0.001)


def run_pass(store):
    """One retention pass; returns (commit-log segments, consume-queue files) deleted."""
    before = (len(store.commit_log.queue.files), cq_files(store))
    done = []
    store.retention.run().addCallback(done.append)
    assert done, "the pass did not finish"
    return before[0] - len(store.commit_log.queue.files), before[1] - cq_files(store)


def cq_files(store):
    return sum(len(cq.queue.files) for cq in store._all_queues())


def records_by_offset(store):
    out = {}
    for f in store.commit_log.queue.files:
        for rec in msg.iter_records(memoryview(f.mm)[:f.wrote_position], 0, True):
            out[rec.commit_log_offset] = (rec.topic, rec.queue_id, rec.queue_offset, rec.body)
    return out


def assert_queues_match_commit_log(store):
    """Every unit from each queue's min offset points at the record it names, and the
    queue's min offset is its first unit at or after the commit log's min offset."""
    min_physic = store.commit_log.min_offset
    by_offset = records_by_offset(store)
    for cq in store._all_queues():
        first = cq.min_offset_in_queue
        for index in range(first, cq.max_offset_in_queue):
            offset, size, _ = cq.unit(index)
            assert offset >= min_physic
            assert by_offset[offset][:3] == (cq.topic, cq.queue_id, index)
        if first > cq.queue.first_file.file_from_offset // 20:
            assert cq.unit(first - 1) is None or cq.unit(first - 1)[0] < min_physic


def test_service_schedule_first_pass_after_60s_then_every_clean_resource_interval(stores):
    store = open_store(stores, cleanResourceInterval=5000)
    passes, checks = [], []
    store.retention.run = lambda: passes.append(store.reactor.seconds())
    store.retention.check_space_full = lambda: checks.append(store.reactor.seconds())
    store.retention.start()
    t0 = store.reactor.seconds()
    for _ in range(70):
        store.reactor.advance(1)
    assert [t - t0 for t in passes] == [60, 65, 70]
    assert [t - t0 for t in checks] == [1, 11, 21, 31, 41, 51, 61]
    store.shutdown()
    store.reactor.advance(100)
    assert len(passes) == 3 and len(checks) == 7


def test_expired_files_go_at_the_delete_when_hour(stores):
    store = open_store(stores, fileReservedTime=1, deleteWhen="%02d" % ((START_HOUR + 2) % 24))
    fill(store, 300)
    segments = len(store.commit_log.queue.files)
    assert segments >= 5
    assert run_pass(store) == (0, 0)              # nothing expired, not the hour
    store.reactor.advance(HOUR)                   # expired (1 h) but 23:13, not the hour
    assert run_pass(store) == (0, 0)
    store.reactor.advance(HOUR)                   # 00:13: the hour
    deleted, cq_deleted = run_pass(store)
    assert deleted == segments - 1 and len(store.commit_log.queue.files) == 1
    assert cq_deleted > 0
    assert store.get_min_phy_offset() == store.commit_log.queue.last_file.file_from_offset
    assert_queues_match_commit_log(store)


def test_only_segments_past_the_reserved_time_go(stores):
    store = open_store(stores, fileReservedTime=2, deleteWhen="00;01;02;03")
    fill(store, 130)                              # ~2 segments, written at 22:13
    store.reactor.advance(HOUR)
    fill(store, 200)                              # more segments at 23:13
    older = [f.file_name for f in store.commit_log.queue.files]
    store.reactor.advance(HOUR + 60)              # 00:14: the first ones are 2 h old
    deleted, _ = run_pass(store)
    assert 1 <= deleted < len(older) - 1
    store.reactor.advance(HOUR)                   # 01:14: everything but the last
    deleted2, _ = run_pass(store)
    assert [f.file_name for f in store.commit_log.queue.files] == older[-1:]
    assert deleted + deleted2 == len(older) - 1


def test_at_most_ten_segments_per_pass(stores):
    store = open_store(stores, fileReservedTime=1, deleteWhen="%02d" % START_HOUR)
    fill(store, 900)
    segments = len(store.commit_log.queue.files)
    assert segments > 12
    store.reactor.advance(0.5 * HOUR)             # 22:43, still the hour
    assert run_pass(store) == (0, 0)              # not expired yet
    store.reactor.advance(24 * HOUR)
    assert run_pass(store)[0] == r.DELETE_FILES_BATCH_MAX
    assert run_pass(store)[0] == segments - 1 - r.DELETE_FILES_BATCH_MAX


def test_early_deletion_over_disk_max_used_space_ratio(stores):
    disk = Disk(0.80)                             # > diskMaxUsedSpaceRatio 75, < forcibly 0.85
    store = open_store(stores, disk, fileReservedTime=1)
    fill(store, 200)
    segments = len(store.commit_log.queue.files)
    assert run_pass(store) == (0, 0)              # not the hour, not expired: kept
    store.reactor.advance(HOUR)
    assert run_pass(store)[0] == segments - 1     # expired: deleted outside deleteWhen
    assert store.running_flags.writeable


def test_the_consume_queue_disk_also_triggers_deletion(stores):
    disk = Disk(0.30)
    store = open_store(stores, disk, fileReservedTime=1)
    disk.by_path[store.paths["consumequeue"]] = 0.80
    fill(store, 200)
    store.reactor.advance(HOUR)
    assert run_pass(store)[0] > 0


def test_forced_deletion_over_the_clean_forcibly_ratio(stores):
    disk = Disk(0.87)
    store = open_store(stores, disk)              # 72 h reserved: nothing is expired
    fill(store, 200)
    segments = len(store.commit_log.queue.files)
    assert run_pass(store)[0] == segments - 1
    assert store.running_flags.writeable          # below the warning level
    assert put(store, record("TopicA", 0, b"after")).status is S.PUT_OK


def test_no_forced_deletion_without_clean_file_forcibly_enable(stores):
    store = open_store(stores, Disk(0.87), cleanFileForciblyEnable=False)
    fill(store, 200)
    assert run_pass(store) == (0, 0)


def test_manual_deletion_lasts_twenty_passes_and_deletes_only_expired_files(stores):
    store = open_store(stores, fileReservedTime=1)
    fill(store, 130)
    store.delete_files_manually()
    assert run_pass(store) == (0, 0)              # manual, but nothing expired
    assert store.retention.manual_delete_times == r.MAX_MANUAL_DELETE_FILE_TIMES - 1
    for _ in range(r.MAX_MANUAL_DELETE_FILE_TIMES - 1):
        run_pass(store)
    assert store.retention.manual_delete_times == 0
    store.reactor.advance(HOUR)
    assert run_pass(store) == (0, 0)              # the trigger is used up
    store.delete_files_manually()
    assert run_pass(store)[0] > 0


def test_deletions_are_paced_by_delete_commit_log_files_interval(stores):
    store = open_store(stores, Disk(0.87), deleteCommitLogFilesInterval=100,
                       deleteConsumeQueueFilesInterval=50)
    fill(store, 200)
    segments = len(store.commit_log.queue.files)
    done = []
    store.retention.run().addCallback(done.append)
    assert len(store.commit_log.queue.files) == segments - 1 and not done
    store.reactor.advance(0.1)
    assert len(store.commit_log.queue.files) == segments - 2
    for _ in range(40):
        store.reactor.advance(0.05)
    assert done and len(store.commit_log.queue.files) == 1


def test_a_bad_delete_when_stops_the_commit_log_pass_only(stores):
    store = open_store(stores, Disk(0.87), deleteWhen="4x")
    fill(store, 200)
    assert run_pass(store) == (0, 0)
    store.commit_log.queue.remove_files(store.commit_log.queue.files[:1])
    assert run_pass(store)[1] > 0                 # the consume-queue pass still runs


def test_consume_queue_min_offsets_move_and_pulls_below_get_offset_too_small(stores):
    store = open_store(stores, Disk(0.87))
    fill(store, 200, queues=2)
    run_pass(store)
    min_physic = store.get_min_phy_offset()
    for queue_id in (0, 1):
        cq = store.find_consume_queue("TopicA", queue_id)
        low = store.get_min_offset_in_queue("TopicA", queue_id)
        assert low > 0 and cq.unit(low)[0] >= min_physic
        assert cq.queue.first_file.file_from_offset <= low * 20
        got = store.get_message("g", "TopicA", queue_id, 0, 32)
        assert (got.status, got.next_begin_offset, got.min_offset) == (G.OFFSET_TOO_SMALL, low, low)
        got = store.get_message("g", "TopicA", queue_id, low, 32)
        assert got.status is G.FOUND
        assert msg.decode_record(got.messages[0]).queue_offset == low
        assert store.get_earliest_message_time("TopicA", queue_id) > 0
    assert_queues_match_commit_log(store)


def test_index_files_below_the_min_offset_go(stores):
    store = open_store(stores, Disk(0.87), maxIndexNum=40)
    fill(store, 200)                              # 2 keys a message: 10 index files
    files = len(store.index_service.files)
    assert files >= 5
    run_pass(store)
    kept = store.index_service.files
    assert 1 <= len(kept) < files
    assert all(f.header.end_phy_offset >= store.get_min_phy_offset() for f in kept[:-1])
    last_key = "key-199"
    found = store.query_message("TopicA", last_key, 32, 0, 2 ** 63 - 1)
    assert [msg.decode_record(m).body[:1] for m in found.messages] == [bytes([199])]


def test_a_full_disk_refuses_puts_and_keeps_serving_reads(stores):
    disk = Disk(0.30)
    store = open_store(stores, disk, background=True)
    fill(store, 100)
    before = records_by_offset(store)
    disk.ratio = 0.95
    store.reactor.advance(1)                      # the disk check runs 1 s after start
    assert store.running_flags.disk_full and not store.running_flags.writeable
    assert put(store, record("TopicA", 0, b"refused")).status is S.SERVICE_NOT_AVAILABLE
    results = []
    store.put_messages([record("TopicA", 0, b"a"), record("TopicA", 0, b"b")]).addCallback(
        results.append)
    assert results[0].status is S.SERVICE_NOT_AVAILABLE
    got = store.get_message("g", "TopicA", 0, 0, 32)
    assert got.status is G.FOUND and len(got.messages) == 10      # one consume-queue file
    assert store.query_message("TopicA", "key-4", 32, 0, 2 ** 63 - 1).messages
    assert records_by_offset(store) == before
    disk.ratio = 0.50
    store.reactor.advance(10)
    assert store.running_flags.writeable and not store.running_flags.disk_full
    result = put(store, record("TopicA", 0, b"again"))
    assert result.status is S.PUT_OK and result.append_result.logics_offset == 50
    assert {k: v for k, v in records_by_offset(store).items() if k in before} == before
    assert_queues_match_commit_log(store)


def test_a_full_disk_seen_by_the_clean_pass_also_deletes_at_once(stores):
    disk = Disk(0.95)
    store = open_store(stores, disk)
    fill(store, 200)
    assert run_pass(store)[0] > 0
    assert store.running_flags.disk_full
    assert put(store, record("TopicA", 0, b"x")).status is S.SERVICE_NOT_AVAILABLE
    disk.ratio = 0.40
    run_pass(store)
    assert store.running_flags.writeable


def test_the_not_writeable_bit_and_the_disk_full_bit_are_separate(stores):
    store = open_store(stores)
    flags = store.running_flags
    assert flags.get_and_make_disk_full() is True and flags.get_and_make_disk_full() is False
    flags.writeable = True                        # clears only the not-writeable bit
    assert not flags.writeable and flags.readable
    assert flags.get_and_make_disk_ok() is False and flags.writeable
    flags.writeable = False
    assert flags.get_and_make_disk_ok() is True and not flags.writeable
    flags.writeable = True
    assert flags.flag_bits == 0


@pytest.mark.parametrize("crash", [False, True])
def test_restart_after_deletion_recovers_min_offsets(stores, crash):
    store = open_store(stores, Disk(0.87))
    fill(store, 250, queues=3)
    run_pass(store)
    min_physic = store.get_min_phy_offset()
    mins = {q: store.get_min_offset_in_queue("TopicA", q) for q in range(3)}
    maxes = {q: store.get_max_offset_in_queue("TopicA", q) for q in range(3)}
    assert min_physic > 0 and all(mins.values())
    if crash:
        store.retention.stop()
        stores.crash(store)
    else:
        store.shutdown()
    again = open_store(stores)
    assert again.get_min_phy_offset() == min_physic
    for q in range(3):
        assert again.get_min_offset_in_queue("TopicA", q) == mins[q]
        assert again.get_max_offset_in_queue("TopicA", q) == maxes[q]
        got = again.get_message("g", "TopicA", q, 0, 32)
        assert got.status is G.OFFSET_TOO_SMALL and got.next_begin_offset == mins[q]
        assert again.get_message("g", "TopicA", q, mins[q], 32).status is G.FOUND
    result = put(again, record("TopicA", 1, b"next"))
    assert result.status is S.PUT_OK and result.append_result.logics_offset == maxes[1]
    assert_queues_match_commit_log(again)
    assert run_pass(again) == (0, 0)              # nothing more to delete


def test_restart_after_a_full_disk_recovers_from_the_abort_file(stores):
    disk = Disk(0.95)
    store = open_store(stores, disk, background=True)
    fill(store, 60)
    store.reactor.advance(1)
    assert not store.running_flags.writeable
    store.shutdown()                              # as Java: not writeable, so `abort` stays
    assert os.path.exists(store.paths["abort"])
    again = open_store(stores)
    assert not again.last_exit_ok
    assert again.get_max_offset_in_queue("TopicA", 0) == 30
    assert put(again, record("TopicA", 0, b"x")).status is S.PUT_OK


def test_runtime_info_reports_the_injected_disk_ratio(stores):
    disk = Disk(0.42)
    store = open_store(stores, disk)
    disk.by_path[store.paths["consumequeue"]] = 0.5
    info = store.runtime_info()
    assert (info["commitLogDiskRatio"], info["consumeQueueDiskRatio"]) == ("0.42", "0.5")


def test_the_broker_answers_service_not_available_on_a_full_disk(tmp_path, stores):
    from broker.brokerkit import broker_config, call

    from rmqproto.broker.controller import BrokerController
    from rmqproto.codec import headers as h
    from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R

    disk = Disk(0.95)
    store = open_store(stores, disk, background=True)
    broker = BrokerController(broker_config(tmp_path), store.reactor, store=store)
    header = h.SendMessageRequestHeaderV2(
        producer_group="PG", topic="TopicA", default_topic="TBW102", default_topic_queue_nums=4,
        queue_id=0, sys_flag=0, born_timestamp=0, flag=0, properties="", reconsume_times=0,
        unit_mode=False)
    store.reactor.advance(1)
    answer = call(broker, RC.SEND_MESSAGE_V2, header.to_ext_fields(), b"body")
    assert answer.code == R.SERVICE_NOT_AVAILABLE
    assert answer.remark.startswith("service not available now. It may be caused by one of the "
                                    "following reasons: the broker's disk is full [")
    disk.ratio = 0.2
    store.reactor.advance(10)
    assert call(broker, RC.SEND_MESSAGE_V2, header.to_ext_fields(), b"body").code == R.SUCCESS
    assert store.get_max_offset_in_queue("TopicA", 0) == 1


def test_shutdown_during_a_paced_pass_stops_it(stores):
    store = open_store(stores, Disk(0.87), deleteCommitLogFilesInterval=100)
    fill(store, 200)
    done = []
    store.retention.run().addCallback(done.append)
    store.shutdown()
    store.reactor.advance(1)
    assert done



def test_delete_expired_commitlog_request_triggers_manual_deletion(tmp_path, stores):
    from broker.brokerkit import broker_config, call

    from rmqproto.broker.controller import BrokerController
    from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R

    store = open_store(stores, fileReservedTime=1)
    broker = BrokerController(broker_config(tmp_path), store.reactor, store=store)
    fill(store, 130)
    store.reactor.advance(HOUR)
    assert run_pass(store) == (0, 0)
    answer = call(broker, RC.DELETE_EXPIRED_COMMITLOG)
    assert (answer.code, answer.remark) == (R.SUCCESS, None)
    assert store.retention.manual_delete_times == r.MAX_MANUAL_DELETE_FILE_TIMES
    assert run_pass(store)[0] > 0
    # Java 4.9.x has no handler for TRIGGER_DELETE_FILES
    assert call(broker, RC.TRIGGER_DELETE_FILES).code == R.REQUEST_CODE_NOT_SUPPORTED


def test_a_crashed_store_is_left_alone_by_its_timers(stores):
    disk = Disk(0.95)
    store = open_store(stores, disk, background=True)
    fill(store, 200)
    names = sorted(os.listdir(store.paths["commitlog"]))
    stores.crash(store)                           # the timers are still on the clock
    store.reactor.advance(120)
    assert sorted(os.listdir(store.paths["commitlog"])) == names
