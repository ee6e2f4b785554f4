"""The store on a full disk and in read-only directories (docs/store.md, "Disk full and
read-only directories"): real file systems (a small tmpfs, a read-only bind mount), the
store driven in-process on a fake clock.

A put is refused only when nothing of it was stored; a consume queue or the index that
cannot be written costs its own units or entries, never another queue's, and the queue is
written up to date once it can be; every stored message stays readable; the store takes
puts again once there is room.
"""

import pytest

from rmqproto.codec import message as msg
from rmqproto.store.defaultstore import QUEUE_REPAIR_INTERVAL
from rmqproto.store.faults import ReportThrottle, is_disk_full
from rmqproto.store.mappedfile import DiskFullError, MappedFile, reserve_blocks
from rmqproto.store.results import GetMessageStatus, PutMessageStatus
from rmqproto.store.retention import DISK_CHECK_INTERVAL
from store_support import StoreFactory, put, record
from support.mounts import fill, read_only, tmpfs

PUT_OK = PutMessageStatus.PUT_OK
SEGMENT = 256 * 1024


@pytest.fixture
def small_disk(tmp_path):
    """``(factory, disk)``: stores on a 4 MiB tmpfs, shut down before it is unmounted."""
    with tmpfs(tmp_path / "disk", 4 << 20) as disk:
        factory = StoreFactory(disk / "store")
        try:
            yield factory, disk
        finally:
            factory.close_all()


@pytest.fixture
def disk_store(tmp_path):
    """``(factory, root)``: stores on the usual disk under ``root``, shut down at the end."""
    factory = StoreFactory(tmp_path / "store")
    yield factory, tmp_path / "store"
    factory.close_all()


def units(store, topic, queue_id=0):
    """The commit-log offsets the consume queue lists, in order."""
    offsets, next_offset = [], 0
    while True:
        result = store.get_message("G", topic, queue_id, next_offset, 32)
        if result.status is not GetMessageStatus.FOUND:
            return offsets
        offsets += [msg.decode_record(data).commit_log_offset for data in result.messages]
        next_offset = result.next_begin_offset


def test_a_failure_is_reported_once_per_interval_and_key():
    reports = ReportThrottle(10.0)
    assert [reports.due("a", t) for t in (0, 1, 9.9, 10, 15, 20)] == [
        True, False, False, True, False, True]
    assert reports.due("b", 15)


def test_a_full_disk_is_told_from_other_errors():
    assert is_disk_full(DiskFullError("no room"))
    assert is_disk_full(OSError(28, "No space left on device"))
    assert not is_disk_full(OSError(30, "Read-only file system"))


def test_a_new_segment_is_reserved_and_a_full_disk_is_an_error_not_a_fault(tmp_path):
    with tmpfs(tmp_path / "disk", 1 << 20) as disk:
        reserved = MappedFile(str(disk / ("%020d" % 0)), 512 * 1024)
        assert (disk / ("%020d" % 0)).stat().st_blocks * 512 >= 512 * 1024
        with pytest.raises(DiskFullError):
            MappedFile(str(disk / ("%020d" % (1 << 20))), 1 << 20)
        assert sorted(p.name for p in disk.iterdir()) == ["%020d" % 0]  # none left behind
        reserved.mm[-1:] = b"x"  # the last page of the reserved file is there
        reserved.close()


def test_reserving_blocks_a_file_has_costs_nothing(tmp_path):
    with tmpfs(tmp_path / "disk", 1 << 20) as disk:
        path = disk / "written"
        path.write_bytes(b"y" * 512 * 1024)
        fill(disk / "ballast")
        with open(path, "r+b") as fh:
            reserve_blocks(fh.fileno(), 512 * 1024)
            with pytest.raises(DiskFullError):
                reserve_blocks(fh.fileno(), 1 << 20)


def test_a_full_disk_refuses_puts_that_store_nothing_keeps_reads_and_recovers(small_disk):
    factory, disk = small_disk
    store = factory.open(mappedFileSizeCommitLog=SEGMENT, mappedFileSizeConsumeQueue=6000)
    fill(disk / "ballast", leave=3 * SEGMENT)  # room for two segments and the small files
    stored, refused = [], 0
    while refused < 3:
        result = put(store, record(body=b"m" * 2000, KEYS="k%d" % len(stored)))
        if result.status is PUT_OK:
            stored.append(result.append_result.wrote_offset)
            continue
        assert result.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert store.running_flags.disk_full
        refused += 1
        max_offset = store.get_max_phy_offset()
    assert store.get_max_phy_offset() == max_offset  # the refused puts wrote nothing
    assert len(stored) > SEGMENT // 2100
    assert units(store, "TopicA") == stored  # reads go on
    assert store.query_message("TopicA", "k1", 10, 0, 1 << 62).messages
    # the disk check clears the flag; a put that still finds no room sets it again
    factory.clock.advance(DISK_CHECK_INTERVAL)
    assert put(store, record()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    (disk / "ballast").unlink()
    factory.clock.advance(DISK_CHECK_INTERVAL)
    result = put(store, record(body=b"after"))
    assert result.status is PUT_OK
    assert units(store, "TopicA") == stored + [result.append_result.wrote_offset]


def test_a_queue_without_room_leaves_the_others_and_is_written_once_there_is(small_disk):
    factory, disk = small_disk
    store = factory.open(mappedFileSizeCommitLog=SEGMENT, mappedFileSizeConsumeQueue=6000)
    first = put(store, record("TopicA")).append_result.wrote_offset
    assert units(store, "TopicA") == [first]  # its file is there
    fill(disk / "ballast")
    a, b = [first], []
    for i in range(20):
        for topic, offsets in (("TopicA", a), ("TopicB", b)):
            result = put(store, record(topic, body=b"%d" % i))
            assert result.status is PUT_OK  # stored: answered so, whatever the queue
            offsets.append(result.append_result.wrote_offset)
    assert units(store, "TopicA") == a
    assert units(store, "TopicB") == []
    assert ("TopicB", 0) in store.broken_queues
    factory.clock.advance(QUEUE_REPAIR_INTERVAL)  # still no room: still waiting
    assert units(store, "TopicB") == []
    (disk / "ballast").unlink()
    factory.clock.advance(DISK_CHECK_INTERVAL)  # the repair, and the disk check's all clear
    assert store.broken_queues == {}
    assert units(store, "TopicB") == b
    result = put(store, record("TopicB", body=b"after"))
    assert units(store, "TopicB") == b + [result.append_result.wrote_offset]


def test_an_index_file_without_room_drops_entries_not_puts(small_disk):
    factory, disk = small_disk
    store = factory.open(mappedFileSizeCommitLog=SEGMENT, mappedFileSizeConsumeQueue=6000,
                         maxHashSlotNum=64, maxIndexNum=50)
    assert put(store, record(KEYS="first")).status is PUT_OK
    assert units(store, "TopicA")  # the queue's and the index's files are there
    fill(disk / "ballast")
    offsets = [put(store, record(KEYS="key%d" % i)).append_result for i in range(80)]
    assert all(result is not None for result in offsets)
    assert len(units(store, "TopicA")) == 81
    assert store.query_message("TopicA", "key3", 10, 0, 1 << 62).messages
    assert not store.query_message("TopicA", "key79", 10, 0, 1 << 62).messages
    (disk / "ballast").unlink()
    assert put(store, record(KEYS="later")).status is PUT_OK
    assert store.query_message("TopicA", "later", 10, 0, 1 << 62).messages


def test_a_read_only_queue_directory_fails_no_put_and_no_other_queue(disk_store):
    factory, root = disk_store
    store = factory.open(mappedFileSizeCommitLog=SEGMENT)
    a = [put(store, record("TopicA")).append_result.wrote_offset]
    assert units(store, "TopicA") == a
    with read_only(root / "consumequeue"):
        b = []
        for i in range(5):
            for topic, offsets in (("TopicA", a), ("TopicB", b)):
                result = put(store, record(topic, body=b"%d" % i))
                assert result.status is PUT_OK
                offsets.append(result.append_result.wrote_offset)
        assert units(store, "TopicA") == a
        assert units(store, "TopicB") == []
    factory.clock.advance(QUEUE_REPAIR_INTERVAL)
    assert units(store, "TopicB") == b


def test_queues_the_recovery_cannot_write_are_written_once_started(disk_store):
    factory, root = disk_store
    store = factory.open()
    a = put(store, record("TopicA")).append_result.wrote_offset
    b = put(store, record("TopicB")).append_result.wrote_offset
    factory.crash(store)  # before the turn's end: neither queue has a file yet
    with read_only(root / "consumequeue"):
        store = factory.open()
        assert set(store.broken_queues) == {("TopicA", 0), ("TopicB", 0)}
    factory.clock.advance(0)
    assert store.broken_queues == {}
    assert (units(store, "TopicA"), units(store, "TopicB")) == ([a], [b])


def test_a_read_only_commit_log_refuses_the_put_that_needs_a_segment(disk_store):
    factory, root = disk_store
    store = factory.open(mappedFileSizeCommitLog=64 * 1024)
    stored = [put(store, record(body=b"r" * 3000)).append_result.wrote_offset]
    with read_only(root / "commitlog"):
        while True:
            result = put(store, record(body=b"r" * 3000))
            if result.status is not PUT_OK:
                break
            stored.append(result.append_result.wrote_offset)
        assert result.status is PutMessageStatus.CREATE_MAPEDFILE_FAILED
        assert store.get_max_phy_offset() == 64 * 1024  # the first segment, closed by its blank
        assert not store.running_flags.disk_full
        assert units(store, "TopicA") == stored
    result = put(store, record(body=b"after"))
    assert result.status is PUT_OK and result.append_result.wrote_offset == 64 * 1024


def test_a_dispatch_that_raises_does_not_turn_a_stored_put_into_an_error(disk_store, monkeypatch):
    factory, _ = disk_store
    store = factory.open()
    store.reput.reput_from_offset = -1  # the put's dispatch reads back (not deferred)

    def broken(*_):
        raise RuntimeError("a bug")

    monkeypatch.setattr(store.reput, "do_reput", broken)
    assert put(store, record()).status is PUT_OK


def test_a_replicated_append_without_room_is_refused_and_keeps_what_fitted(small_disk):
    factory, disk = small_disk
    store = factory.open(brokerRole="SLAVE", mappedFileSizeCommitLog=SEGMENT)
    fill(disk / "ballast", leave=SEGMENT + 64 * 1024)
    data = bytes(SEGMENT + 100)
    assert not store.append_to_commit_log(0, data)  # the second segment has no room
    assert store.get_max_phy_offset() == SEGMENT
    (disk / "ballast").unlink()
    assert store.append_to_commit_log(SEGMENT, data[SEGMENT:])
    assert store.get_max_phy_offset() == SEGMENT + 100



def test_a_store_read_only_at_shutdown_stops_all_the_same(disk_store):
    factory, root = disk_store
    store = factory.open()
    assert put(store, record()).status is PUT_OK
    with read_only(root):
        factory.close_all()
    assert store.commit_log.last_segment().closed
    assert (root / "abort").exists()  # the next start recovers
    store = factory.open()
    assert len(units(store, "TopicA")) == 1
