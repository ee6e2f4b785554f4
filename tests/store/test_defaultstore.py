"""DefaultMessageStore on files with small segments and a fake clock."""

import os

import pytest
from twisted.internet import defer

from rmqproto.codec import consumequeue, indexfile, message as msg
from rmqproto.codec.javalang import masked_crc32
from rmqproto.config import ConfigError
from rmqproto.errors import CodecError
from rmqproto.codec.storefile import offset_to_file_name
from rmqproto.store.dispatch import SCHEDULE_TOPIC, arrivals
from rmqproto.store.interfaces import IMessageStore
from rmqproto.store.results import GetMessageStatus as G, PutMessageStatus as S
from store_support import STORE_HOST, ManualRunner, put, record

from zope.interface.verify import verifyObject


def fill(store, count, topic="TopicA", queues=2, body=300):
    results = []
    for i in range(count):
        results.append(put(store, record(topic, i % queues, bytes([i % 256]) * (body + i % 50),
                                         TAGS="Tag%d" % (i % 3), KEYS="key-%d order-%d" % (i % 7, i),
                                         UNIQ_KEY="UNIQ%08d" % i)))
        store.reactor.advance(0.001)
    return results


def read_queue(store, topic, queue_id):
    """Every record of a queue via get_message, following nextBeginOffset."""
    out, offset = [], 0
    while offset < store.get_max_offset_in_queue(topic, queue_id):
        got = store.get_message("g", topic, queue_id, offset, 32)
        assert got.status in (G.FOUND, G.MESSAGE_WAS_REMOVING), got
        out += [msg.decode_record(m) for m in got.messages]
        assert got.next_begin_offset > offset
        offset = got.next_begin_offset
    return out


def check_consistent(store):
    """Consume queues = commit log: every consumable record has its unit and nothing else."""
    expected = {}
    for f in store.commit_log.queue.files:
        for r in msg.iter_records(memoryview(f.mm)[:f.wrote_position], 0, True):
            if msg.transaction_type(r.sys_flag) in (0, msg.TRANSACTION_COMMIT_TYPE):
                expected.setdefault((r.topic, r.queue_id), []).append(
                    (r.commit_log_offset, r.store_size, r.queue_offset))
    for (topic, queue_id), units in expected.items():
        cq = store.find_consume_queue(topic, queue_id, create=False)
        got = [cq.unit(i)[:2] + (i,) for i in range(cq.min_offset_in_queue, cq.max_offset_in_queue)]
        assert got == units[len(units) - len(got):]
        assert [u[2] for u in units] == list(range(len(units)))
    for cq in store._all_queues():
        if cq.max_offset_in_queue:
            assert (cq.topic, cq.queue_id) in expected


def check_serves(store, results):
    """Both queues ``fill`` wrote read back in put order, consistent with the commit log."""
    for q in (0, 1):
        assert [r.commit_log_offset for r in read_queue(store, "TopicA", q)] == [
            r.append_result.wrote_offset for r in results[q::2]]
    check_consistent(store)


def test_implements_the_interface(stores):
    assert verifyObject(IMessageStore, stores.open())


@pytest.mark.parametrize("setting", [
    dict(maxIndexNum=1),  # the first slot is unused: no entry fits, files were made forever
    dict(maxHashSlotNum=0),  # a division by zero after the append
    dict(mappedFileSizeConsumeQueue=0), dict(mappedFileSizeCommitLog=0),
    dict(flushIntervalCommitLog=0), dict(flushIntervalConsumeQueue=-1),
    dict(cleanResourceInterval=0), dict(haTransferBatchSize=0),
    dict(messageDelayLevel=""), dict(messageDelayLevel="1s 2weeks"),
])
def test_settings_that_cannot_work_are_refused_before_anything_is_written(stores, setting):
    with pytest.raises(ConfigError, match=next(iter(setting))):
        stores.open(**setting)
    assert not stores.root.exists()


def test_put_assigns_offsets_timestamps_crc_and_msgid(stores):
    store = stores.open()
    first = put(store, record(body=b"abc", TAGS="TagA"))
    stores.clock.advance(1)
    second = put(store, record(body=b"defg"))
    a = first.append_result
    assert first.status is S.PUT_OK and a.wrote_offset == 0 and a.logics_offset == 0
    assert a.msg_id == msg.create_message_id(STORE_HOST, 0)
    assert second.append_result.wrote_offset == a.wrote_bytes
    assert second.append_result.logics_offset == 1
    stored = store.look_message_by_offset(a.wrote_offset)
    assert stored.store_timestamp == 1700000000000 and stored.body == b"abc"
    assert stored.body_crc == masked_crc32(b"abc")
    assert store.look_message_by_offset(second.append_result.wrote_offset).store_timestamp == 1700000001000
    assert store.get_commit_log_offset_in_queue("TopicA", 0, 1) == a.wrote_bytes
    cq = store.find_consume_queue("TopicA", 0, create=False)
    assert cq.unit(0)[2] == msg.tags_code("TagA")


def test_segments_roll_with_blank_and_queue_files_roll(stores):
    store = stores.open()
    results = fill(store, 400)
    files = sorted(os.listdir(store.paths["commitlog"]))
    assert files[:2] == [offset_to_file_name(0), offset_to_file_name(64 * 1024)]
    first = store.commit_log.queue.files[0]
    scan = msg.iter_records(first.mm, 0, True)
    list(scan)
    assert scan.stop == "blank" and scan.blank_size == 64 * 1024 - scan.position
    cq_dir = os.path.join(store.paths["consumequeue"], "TopicA", "0")
    assert offset_to_file_name(200) in os.listdir(cq_dir)
    for q in (0, 1):
        got = read_queue(store, "TopicA", q)
        want = [r.append_result.wrote_offset for r in results[q::2]]
        assert [r.commit_log_offset for r in got] == want
        assert [r.queue_offset for r in got] == list(range(200))
    check_consistent(store)


def test_one_pull_stops_at_a_consume_queue_file_end_and_respects_caps(stores):
    store = stores.open(maxTransferCountOnMessageInMemory=4)
    fill(store, 40, queues=1)
    got = store.get_message("g", "TopicA", 0, 8, 32)
    assert got.status is G.FOUND and len(got.messages) == 2 and got.next_begin_offset == 10
    got = store.get_message("g", "TopicA", 0, 0, 32)
    assert len(got.messages) == 4 and got.next_begin_offset == 4
    assert got.message_queue_offsets == [0, 1, 2, 3]
    assert not got.suggest_pulling_from_slave
    store.total_physical_memory = 100  # everything counts as "on disk" now
    got = store.get_message("g", "TopicA", 0, 0, 32)
    assert got.suggest_pulling_from_slave


def test_pull_statuses(stores):
    store = stores.open()
    fill(store, 12, queues=1)
    cases = [
        (("Nope", 0, 5), G.NO_MESSAGE_IN_QUEUE, 0),
        (("TopicA", 0, 12), G.OFFSET_OVERFLOW_ONE, 12),
        (("TopicA", 0, 50), G.OFFSET_OVERFLOW_BADLY, 12),
        (("TopicA", 0, 3), G.FOUND, 10),
    ]
    for (topic, q, offset), status, next_begin in cases:
        got = store.get_message("g", topic, q, offset, 32)
        assert (got.status, got.next_begin_offset) == (status, next_begin), (topic, offset)
    nothing = store.get_message("g", "TopicA", 0, 0, 32, lambda tags: False)
    assert nothing.status is G.NO_MATCHED_MESSAGE and nothing.next_begin_offset == 10
    tag_b = msg.tags_code("Tag1")
    some = store.get_message("g", "TopicA", 0, 0, 32, lambda tags: tags == tag_b)
    assert [msg.decode_record(m).tags for m in some.messages] == ["Tag1"] * 3
    cq = store.find_consume_queue("TopicA", 0, create=False)
    cq.min_logic_offset = 10 * 20  # as if the first CQ file had expired
    got = store.get_message("g", "TopicA", 0, 3, 32)
    assert (got.status, got.next_begin_offset, got.min_offset) == (G.OFFSET_TOO_SMALL, 10, 10)
    cq.min_logic_offset = 0
    store.find_consume_queue("TopicA", 0, create=False).queue.files[0].wrote_position = 0
    got = store.get_message("g", "TopicA", 0, 3, 32)
    assert (got.status, got.next_begin_offset) == (G.OFFSET_FOUND_NULL, 10)


def test_message_was_removing_when_the_commit_log_file_is_gone(stores):
    store = stores.open()
    fill(store, 300, queues=1)
    first = store.commit_log.queue.files[0]
    store.commit_log.queue.remove_files([first])
    got = store.get_message("g", "TopicA", 0, 0, 32)
    assert got.status is G.MESSAGE_WAS_REMOVING and got.next_begin_offset == 10
    check_min = store.get_min_phy_offset()
    assert check_min == 64 * 1024


def test_slave_does_not_correct_offsets(stores):
    store = stores.open(brokerRole="SLAVE")
    got = store.get_message("g", "T", 0, 7, 32)
    assert got.status is G.NO_MESSAGE_IN_QUEUE and got.next_begin_offset == 7


def test_refusals(stores):
    store = stores.open(start=False)
    assert put(store, record()).status is S.SERVICE_NOT_AVAILABLE  # not started
    store.start()
    assert put(store, record(topic="x" * 128)).status is S.MESSAGE_ILLEGAL
    assert put(store, record(body=bytes(4 * 1024 * 1024 + 1))).status is S.MESSAGE_ILLEGAL
    assert put(store, record(body=bytes(64 * 1024))).status is S.MESSAGE_ILLEGAL  # > a segment
    assert put(store, record(P="é" * 20000)).status is S.PROPERTIES_SIZE_EXCEEDED
    store.running_flags.writeable = False
    assert put(store, record()).status is S.SERVICE_NOT_AVAILABLE
    store.running_flags.writeable = True
    assert put(store, record()).status is S.PUT_OK
    store.shutdown()
    assert put(store, record()).status is S.SERVICE_NOT_AVAILABLE
    assert store.get_message("g", "TopicA", 0, 0, 32) is None
    slave = stores.open(brokerRole="SLAVE")
    assert put(slave, record()).status is S.SERVICE_NOT_AVAILABLE


def test_batch_is_contiguous_with_consecutive_queue_offsets(stores):
    store = stores.open()
    put(store, record(queue_id=1))
    results = []
    batch = [record(queue_id=1, body=b"m%d" % i, UNIQ_KEY="B%d" % i) for i in range(5)]
    store.put_messages(batch).addCallback(results.append)
    (result,) = results
    a = result.append_result
    assert result.status is S.PUT_OK and a.msg_num == 5 and a.logics_offset == 1
    ids = a.msg_id.split(",")
    assert len(ids) == 5
    got = store.get_message("g", "TopicA", 1, 1, 32)
    decoded = [msg.decode_record(m) for m in got.messages]
    assert [r.queue_offset for r in decoded] == [1, 2, 3, 4, 5]
    assert [msg.create_message_id(STORE_HOST, r.commit_log_offset) for r in decoded] == ids
    offsets = [r.commit_log_offset for r in decoded]
    assert offsets[0] == a.wrote_offset
    assert all(offsets[i] + decoded[i].store_size == offsets[i + 1] for i in range(4))
    assert sum(r.store_size for r in decoded) == a.wrote_bytes
    bad = []
    store.put_messages([record(), record(queue_id=1)]).addCallback(bad.append)
    assert bad[0].status is S.MESSAGE_ILLEGAL


def test_batch_records_get_the_host_bits_of_their_own_hosts(stores):
    store = stores.open()
    batch = [record(body=b"m%d" % i) for i in range(3)]
    batch[1].born_host = ("::1", 5)  # changed after the record was made: its bits are stale
    results = []
    store.put_messages(batch).addCallback(results.append)
    assert results[0].status is S.PUT_OK
    got = store.get_message("g", "TopicA", 0, 0, 32)
    decoded = [msg.decode_record(m) for m in got.messages]
    assert [r.sys_flag & msg.BORNHOST_V6_FLAG for r in decoded] == [0, msg.BORNHOST_V6_FLAG, 0]
    assert [r.born_host for r in decoded] == [r.born_host for r in batch]


def test_a_message_gets_the_host_bits_of_its_own_hosts(stores):
    """Bits gone stale after the record was made are set again from its hosts, both ways."""
    store = stores.open()
    v6, v4 = record(body=b"v6"), record(body=b"v4")
    v6.store_host = ("::1", 5)
    v4.sys_flag |= msg.BORNHOST_V6_FLAG | msg.STOREHOSTADDRESS_V6_FLAG
    results = []
    for message in (v6, v4):
        store.put_message(message).addCallback(results.append)
    assert [r.status for r in results] == [S.PUT_OK, S.PUT_OK]
    got = store.get_message("g", "TopicA", 0, 0, 32)
    decoded = [msg.decode_record(m) for m in got.messages]
    assert [r.sys_flag & 0x30 for r in decoded] == [msg.STOREHOSTADDRESS_V6_FLAG, 0]
    assert [r.store_host for r in decoded] == [("::1", 5), STORE_HOST]


def test_batch_crossing_a_segment_goes_whole_to_the_next(stores):
    store = stores.open()
    starts = []
    while not starts or starts[-1] < 64 * 1024:
        results = []
        store.put_messages([record(body=bytes(1000)) for _ in range(5)]).addCallback(results.append)
        starts.append(results[0].append_result.wrote_offset)
    assert starts[-1] == 64 * 1024  # the batch did not fit: blank, then all of it in the next
    check_consistent(store)


def test_delay_message_goes_to_schedule_topic_with_delivery_time_tags(stores):
    store = stores.open()
    result = put(store, record(topic="Real", queue_id=2, DELAY="3", TAGS="x"))
    got = store.get_message("g", SCHEDULE_TOPIC, 2, 0, 32)
    (stored,) = [msg.decode_record(m) for m in got.messages]
    assert stored.properties["REAL_TOPIC"] == "Real" and stored.properties["REAL_QID"] == "2"
    unit = store.find_consume_queue(SCHEDULE_TOPIC, 2, create=False).unit(0)
    assert unit[2] == stored.store_timestamp + 10_000
    assert result.append_result.logics_offset == 0
    assert store.get_max_offset_in_queue("Real", 2) == 0


def test_prepared_transaction_is_stored_indexed_but_not_queued(stores):
    store = stores.open()
    prepared = record(UNIQ_KEY="TX1")
    prepared.sys_flag |= msg.TRANSACTION_PREPARED_TYPE
    result = put(store, prepared)
    assert result.status is S.PUT_OK and result.append_result.logics_offset == 0
    assert store.get_max_offset_in_queue("TopicA", 0) == 0
    assert len(store.query_message("TopicA", "TX1", 32, 0, 2 ** 62).messages) == 1


def test_query_by_keys_and_unique_key_across_index_files(stores):
    store = stores.open()
    results = fill(store, 150)  # 3 keys per message: the 200-entry index file fills up
    assert len(os.listdir(store.paths["index"])) >= 2
    found = store.query_message("TopicA", "order-42", 32, 0, 2 ** 62)
    assert [msg.decode_record(m).commit_log_offset for m in found.messages] == [
        results[42].append_result.wrote_offset]
    assert found.index_last_update_phyoffset == results[-1].append_result.wrote_offset
    by_key = store.query_message("TopicA", "key-3", 64, 0, 2 ** 62)
    want = sorted(r.append_result.wrote_offset for r in results[3::7])
    got = [msg.decode_record(m).commit_log_offset for m in by_key.messages]
    assert got == want[-len(got):] and len(got) >= 10
    uniq = store.query_message("TopicA", "UNIQ00000007", 32, 0, 2 ** 62)
    assert len(uniq.messages) == 1
    assert store.query_message("Other", "order-42", 32, 0, 2 ** 62).messages == []


def test_time_queries(stores):
    store = stores.open()
    times = []
    for i in range(25):
        put(store, record(body=b"%d" % i))
        times.append(stores.clock.seconds() * 1000)
        stores.clock.advance(1)
    assert store.get_earliest_message_time("TopicA", 0) == times[0]
    assert store.get_message_store_timestamp("TopicA", 0, 7) == times[7]
    assert store.get_message_store_timestamp("TopicA", 0, 99) == -1
    assert store.get_offset_in_queue_by_time("TopicA", 0, times[22]) == 22
    assert store.get_offset_in_queue_by_time("TopicA", 0, times[3] + 300) == 3
    assert store.get_offset_in_queue_by_time("TopicA", 0, times[3] + 700) == 4
    assert store.get_earliest_message_time("Nope", 0) == -1


def test_ha_data_and_append_at_exact_offsets(stores, tmp_path):
    master = stores.open()
    fill(master, 300)
    slave_stores = type(stores)(tmp_path / "slave")
    slave = slave_stores.open(brokerRole="SLAVE")
    assert not slave.append_to_commit_log(100, b"x")  # not a segment start
    offset = 0
    while offset < master.get_max_phy_offset():
        data = master.get_commit_log_data(offset, 5000)
        assert 0 < len(data) <= 5000
        assert (offset % (64 * 1024)) + len(data) <= 64 * 1024  # never across a segment end
        assert slave.append_to_commit_log(offset, data)
        offset += len(data)
    assert master.get_commit_log_data(offset, 5000) == b""
    assert not slave.append_to_commit_log(offset + 1, b"x")
    assert slave.dispatch_behind_bytes() > 0  # dispatched in the next reactor turns
    while slave.dispatch_behind_bytes():
        slave_stores.clock.advance(0)
    for q in (0, 1):
        assert [r.commit_log_offset for r in read_queue(slave, "TopicA", q)] == [
            r.commit_log_offset for r in read_queue(master, "TopicA", q)]
    assert len(slave.query_message("TopicA", "order-17", 32, 0, 2 ** 62).messages) == 1
    check_consistent(slave)
    slave_stores.close_all()


def test_a_log_holding_a_topic_that_cannot_name_a_directory(stores, tmp_path, monkeypatch):
    """Puts refuse such a topic; a log written elsewhere (here: with the check off) may
    hold one. Its records stay in the commit log without a consume queue; the dispatch,
    a slave's replication and a restart go on with every other topic."""
    master = stores.open()
    assert put(master, record("%RETRY%a\0b")).status is S.MESSAGE_ILLEGAL
    assert put(master, record("%RETRY%a/b", DELAY="3")).status is S.MESSAGE_ILLEGAL  # not delayed
    assert master.get_max_phy_offset() == 0
    monkeypatch.setattr("rmqproto.store.commitlog.legal_topic_length",
                        lambda topic: len(topic.encode()))
    monkeypatch.setattr("rmqproto.store.defaultstore.topic_illegal", lambda topic: False)
    for topic in ("TopicA", "%RETRY%a\0b", "%RETRY%a/b", "TopicA"):
        assert put(master, record(topic)).status is S.PUT_OK
    monkeypatch.undo()
    slave_stores = type(stores)(tmp_path / "slave")
    slave = slave_stores.open(brokerRole="SLAVE")
    assert slave.append_to_commit_log(0, master.get_commit_log_data(0, 1 << 20))
    while slave.dispatch_behind_bytes():
        slave_stores.clock.advance(0)
    for store in (master, slave):
        assert [r.queue_offset for r in read_queue(store, "TopicA", 0)] == [0, 1]
        assert store.find_consume_queue("%RETRY%a\0b", 0, create=False) is None
        assert store.find_consume_queue("%RETRY%a/b", 0, create=False) is None
        assert not os.path.exists(os.path.join(store.paths["consumequeue"], "%RETRY%a"))
    slave.shutdown()
    again = slave_stores.open(brokerRole="SLAVE")
    assert [r.queue_offset for r in read_queue(again, "TopicA", 0)] == [0, 1]
    slave_stores.close_all()


def test_clean_restart_keeps_everything_and_counters(stores):
    store = stores.open()
    fill(store, 250)
    store.shutdown()
    assert not os.path.exists(store.paths["abort"])
    again = stores.open()
    assert again.last_exit_ok
    assert again.get_max_offset_in_queue("TopicA", 1) == 125
    result = put(again, record(queue_id=1))
    assert result.append_result.logics_offset == 125
    assert len(read_queue(again, "TopicA", 1)) == 126
    check_consistent(again)


def test_crash_recovery_truncates_a_torn_tail_and_drops_dangling_units(stores):
    store = stores.open()
    results = fill(store, 250)
    end = store.get_max_phy_offset()
    last = store.commit_log.queue.last_file
    torn = msg.encode_record(msg.decode_record(store.select_one_message_by_offset(
        results[-1].append_result.wrote_offset)))[:70]
    last.mm[last.wrote_position:last.wrote_position + 70] = torn
    # a consume-queue unit pointing past the commit log, as if the CQ were ahead
    cq = store.find_consume_queue("TopicA", 0, create=False)
    cq.put_position(end + 10, 100, 0, cq.max_offset_in_queue)
    stores.crash(store)
    assert os.path.exists(store.paths["abort"])
    again = stores.open()
    assert not again.last_exit_ok
    assert again.get_max_phy_offset() == end
    pos = end - again.commit_log.queue.last_file.file_from_offset
    assert not any(again.commit_log.queue.last_file.mm[pos:pos + 200])
    assert again.get_max_offset_in_queue("TopicA", 0) == 125
    check_serves(again, results)


def test_missing_consume_queues_are_rebuilt(stores):
    import shutil
    store = stores.open()
    results = fill(store, 120)
    store.shutdown()
    shutil.rmtree(store.paths["consumequeue"])
    again = stores.open()
    check_serves(again, results)


def test_consume_queue_behind_after_a_crash_is_completed(stores):
    store = stores.open()
    results = fill(store, 120)
    cq = store.find_consume_queue("TopicA", 1, create=False)
    last = cq.queue.last_file
    last.mm[last.wrote_position - 60:last.wrote_position] = bytes(60)  # 3 units never written
    stores.crash(store)
    again = stores.open()
    assert [r.commit_log_offset for r in read_queue(again, "TopicA", 1)] == [
        r.append_result.wrote_offset for r in results[1::2]]
    check_consistent(again)


def test_sync_flush_answers_after_fsync_group_commits_and_times_out(stores):
    store = stores.open(start=False, flushDiskType="SYNC_FLUSH", syncFlushTimeout=2000)
    runner = store.flusher.run_blocking = ManualRunner()
    store.start()
    answers = []
    store.put_message(record(body=b"a")).addCallback(answers.append)
    store.put_message(record(body=b"b")).addCallback(answers.append)
    store.put_message(record(body=b"c")).addCallback(answers.append)
    assert answers == [] and len(runner.jobs) == 1
    runner.run_next()  # covers "a" only: it started before "b" and "c" were written
    assert [a.status for a in answers] == [S.PUT_OK] and len(runner.jobs) == 1
    runner.run_next()  # one fsync for both waiting puts
    assert [a.status for a in answers] == [S.PUT_OK] * 3 and not runner.jobs
    assert store.commit_log.queue.flushed_where == store.get_max_phy_offset()
    late = []
    store.put_message(record()).addCallback(late.append)
    stores.clock.advance(2.1)
    assert [a.status for a in late] == [S.FLUSH_DISK_TIMEOUT]
    assert late[0].append_result.wrote_offset > 0  # stored all the same
    runner.run_next()


@pytest.mark.parametrize("batch", [False, True])
def test_sync_flush_does_not_wait_when_told_so(stores, batch):
    """``wait_store_msg_ok=False`` (Java's WAIT=false) answers PUT_OK at once, whatever the
    stored properties say (the send path drops WAIT from them)."""
    store = stores.open(start=False, flushDiskType="SYNC_FLUSH", syncFlushTimeout=2000)
    runner = store.flusher.run_blocking = ManualRunner()
    store.start()
    answers = []
    if batch:
        put = store.put_messages([record(), record(WAIT="true")], wait_store_msg_ok=False)
    else:
        put = store.put_message(record(WAIT="true"), wait_store_msg_ok=False)
    put.addCallback(answers.append)
    assert [a.status for a in answers] == [S.PUT_OK]
    assert store.get_max_offset_in_queue("TopicA", 0) == (2 if batch else 1)
    waiting = []
    store.put_message(record(WAIT="false")).addCallback(waiting.append)  # the argument decides
    assert waiting == []
    while runner.jobs:
        runner.run_next()
    assert [a.status for a in waiting] == [S.PUT_OK]


def test_put_message_at_once_gives_a_final_result_as_it_is(stores):
    """No wait to wait for (ASYNC_FLUSH, WAIT=false, a refusal): the PutMessageResult itself;
    a flush wait: a Deferred of it, as put_message gives."""
    store = stores.open(start=False, flushDiskType="SYNC_FLUSH", syncFlushTimeout=2000)
    runner = store.flusher.run_blocking = ManualRunner()
    store.start()
    stored = store.put_message_at_once(record(), wait_store_msg_ok=False)
    assert stored.status is S.PUT_OK and stored.append_result.logics_offset == 0
    waiting = store.put_message_at_once(record())
    assert isinstance(waiting, defer.Deferred) and not waiting.called
    runner.run_next()
    assert waiting.result.status is S.PUT_OK and waiting.result.append_result.logics_offset == 1
    refused = store.put_message_at_once(record(topic="T" * 128))
    assert refused.status is S.MESSAGE_ILLEGAL and refused.append_result is None
    store.running_flags.writeable = False
    assert store.put_message_at_once(record()).status is S.SERVICE_NOT_AVAILABLE


def test_put_messages_at_once_gives_a_batchs_final_result_as_it_is(stores):
    """As put_message_at_once: the result itself, or ``then``'s for a replica wait; and
    CodecError raised where put_messages' Deferred fails."""
    store = stores.open(brokerRole="SYNC_MASTER")
    waits, answers = [], []
    store.replica_waiter = lambda next_offset, then, token: waits.append((then, token))
    batch = [record(body=b"m%d" % i) for i in range(3)]
    stored = store.put_messages_at_once(batch, wait_store_msg_ok=False)
    assert stored.status is S.PUT_OK and stored.append_result.msg_num == 3
    assert store.put_messages_at_once(batch, True, lambda *a: answers.append(a), "t") is None
    then, token = waits[0]
    then(S.PUT_OK, token)
    [(result, token)] = answers
    assert token == "t" and result.append_result.logics_offset == 3
    refused = store.put_messages_at_once([record(), record(queue_id=1)])
    assert refused.status is S.MESSAGE_ILLEGAL
    bad_delay = msg.decode_batch_records(msg.encode_batch([msg.Message(b"a")]),
                                         {"DELAY": "x"}, record())
    with pytest.raises(CodecError, match="DELAY"):
        store.put_messages_at_once(bad_delay)
    failed = store.put_messages(bad_delay)
    assert failed.called and isinstance(failed.result.value, CodecError)
    failed.addErrback(lambda _: None)


def test_sync_master_waits_for_the_replica_unless_told_not_to(stores):
    store = stores.open(brokerRole="SYNC_MASTER")
    replicas = []

    def replica_waiter(next_offset, then, token):
        replicas.append((next_offset, then, token))

    store.replica_waiter = replica_waiter
    at_once, waiting = [], []
    store.put_message(record(), wait_store_msg_ok=False).addCallback(at_once.append)
    assert [a.status for a in at_once] == [S.PUT_OK] and replicas == []
    store.put_message(record()).addCallback(waiting.append)
    assert waiting == [] and replicas[0][0] == store.get_max_phy_offset()
    _, then, token = replicas[0]
    then(S.FLUSH_SLAVE_TIMEOUT, token)
    assert [a.status for a in waiting] == [S.FLUSH_SLAVE_TIMEOUT]


def test_a_replica_wait_answers_then_without_a_deferred(stores):
    """``put_message_at_once(…, then, token)``: the replica's status decided at once comes as
    the result; a later one as ``then(result, token)``, and the put returns None."""
    store = stores.open(brokerRole="SYNC_MASTER")
    replicas, answers = [], []
    store.replica_waiter = lambda next_offset, then, token: (
        S.SLAVE_NOT_AVAILABLE if not replicas else replicas.append((then, token)))
    refused = store.put_message_at_once(record(), True, lambda *a: answers.append(a), "t1")
    assert refused.status is S.SLAVE_NOT_AVAILABLE and refused.append_result.logics_offset == 0
    replicas.append(None)  # a slave is OK from now on
    assert store.put_message_at_once(record(), True, lambda *a: answers.append(a), "t2") is None
    assert answers == []
    then, token = replicas[1]
    then(S.PUT_OK, token)
    [(result, token)] = answers
    assert token == "t2" and result.status is S.PUT_OK
    assert result.append_result.logics_offset == 1


@pytest.mark.parametrize("flush, replica, answer", [
    (S.PUT_OK, S.PUT_OK, S.PUT_OK),
    (S.FLUSH_DISK_TIMEOUT, S.PUT_OK, S.FLUSH_DISK_TIMEOUT),
    (S.PUT_OK, S.FLUSH_SLAVE_TIMEOUT, S.FLUSH_SLAVE_TIMEOUT),
    (S.FLUSH_DISK_TIMEOUT, S.SLAVE_NOT_AVAILABLE, S.SLAVE_NOT_AVAILABLE),
])
def test_sync_flush_and_sync_master_answer_once_both_waits_end(stores, flush, replica, answer):
    """Both waits: the answer comes when both ended; a non-OK replica status wins."""
    store = stores.open(start=False, brokerRole="SYNC_MASTER", flushDiskType="SYNC_FLUSH")
    flushed, replicated = defer.Deferred(), defer.Deferred()
    store.flusher.wait_for = lambda next_offset: flushed

    def replica_waiter(next_offset, then, token):
        replicated.addCallback(then, token)  # and None: the status comes later

    store.replica_waiter = replica_waiter
    store.start()
    answers = []
    store.put_message(record()).addCallback(answers.append)
    replicated.callback(replica)
    assert answers == []
    flushed.callback(flush)
    assert [a.status for a in answers] == [answer]
    assert answers[0].append_result.wrote_offset == 0


def test_async_flush_writes_in_the_background_and_checkpoints(stores):
    store = stores.open()
    fill(store, 60)
    assert store.commit_log.queue.flushed_where == 0  # flushCommitLogTimed: puts wake nothing
    stores.clock.advance(0.1)  # flushIntervalCommitLog: 4 pages dirty, flushed
    assert 0 < store.commit_log.queue.flushed_where
    stores.clock.advance(11)
    assert store.commit_log.queue.flushed_where == store.get_max_phy_offset()
    assert store.checkpoint.physic_msg_timestamp > 0
    stores.clock.advance(61)
    cq = store.find_consume_queue("TopicA", 0, create=False)
    assert cq.queue.flushed_where == cq.queue.max_offset


def test_async_flush_untimed_wakes_on_the_puts(stores):
    store = stores.open(flushCommitLogTimed=False)
    fill(store, 60)
    assert 0 < store.commit_log.queue.flushed_where  # 4 pages dirty woke the flusher
    assert store.commit_log.queue.flushed_where < store.get_max_phy_offset()


def test_runtime_info_has_java_keys(stores):
    store = stores.open()
    fill(store, 5)
    stores.clock.advance(12)
    info = store.runtime_info()
    for key in ("commitLogMinOffset", "commitLogMaxOffset", "dispatchBehindBytes", "putTps",
                "getTotalTps", "bootTimestamp", "runtime", "commitLogDiskRatio",
                "consumeQueueDiskRatio", "putMessageTimesTotal", "remainHowManyDataToFlush"):
        assert isinstance(info[key], str), key
    assert info["commitLogMaxOffset"] == str(store.get_max_phy_offset())
    assert info["dispatchBehindBytes"] == "0"


def test_dispatch_listeners_get_each_dispatched_batch(stores):
    store = stores.open()
    seen = []
    store.dispatch_listeners.append(
        lambda requests: seen.append([arrival[:3] for arrival in arrivals(requests)]))
    fill(store, 3, queues=1)
    assert [a for batch in seen for a in batch] == [("TopicA", 0, 1), ("TopicA", 0, 2),
                                                    ("TopicA", 0, 3)]


def test_a_batch_put_reaches_the_dispatch_listeners_in_one_call(stores):
    store = stores.open()
    seen = []
    store.dispatch_listeners.append(lambda requests: seen.append(list(arrivals(requests))))
    batch = [record(queue_id=1, TAGS="t%d" % i, UNIQ_KEY="B%d" % i) for i in range(5)]
    store.put_messages(batch)
    stores.clock.advance(0)  # the end of the reactor turn
    (arrived,) = seen
    assert [a[:4] for a in arrived] == [("TopicA", 1, i + 1, msg.tags_code("t%d" % i))
                                        for i in range(5)]
    assert [a[5]["UNIQ_KEY"] for a in arrived] == ["B%d" % i for i in range(5)]
    assert len({a[4] for a in arrived}) == 1  # one store timestamp


def test_the_puts_of_a_reactor_turn_are_dispatched_together_at_its_end(stores):
    store = stores.open()
    seen, appended = [], []
    store.dispatch_listeners.append(lambda requests: seen.append([a[:3] for a in arrivals(requests)]))
    store.append_listeners.append(lambda: appended.append((store.get_max_phy_offset(), len(seen))))
    first = store.put_message(record(queue_id=0, UNIQ_KEY="A"))
    store.put_message(record(queue_id=1, UNIQ_KEY="B"))
    assert first.result.status is S.PUT_OK  # answered before the dispatch
    assert seen == [] and appended == []
    stores.clock.advance(0)
    assert seen == [[("TopicA", 0, 1), ("TopicA", 1, 1)]]
    # the HA hears of the turn's appends once, before their dispatch
    assert appended == [(store.get_max_phy_offset(), 0)]
    stores.clock.advance(0)
    assert len(seen) == 1 and len(appended) == 1  # nothing dispatched or told twice


def test_after_the_append_listeners_the_dispatch_waits_one_more_poll(stores):
    # what the reactor reads after a transfer (a slave's ack) is modelled by a call the
    # listener queues: it runs before the turn's dispatch
    store = stores.open()
    seen, events = [], []
    store.dispatch_listeners.append(lambda requests: seen.append([a[:3] for a in arrivals(requests)]))
    store.append_listeners.append(
        lambda: stores.clock.callLater(0, lambda: events.append(("ack", len(seen)))))
    store.put_message(record(queue_id=0, UNIQ_KEY="A"))
    stores.clock.advance(0)
    assert events == [("ack", 0)]
    assert seen == [[("TopicA", 0, 1)]]


def test_the_dispatch_waits_once_and_takes_the_puts_of_the_poll_it_waited_for(stores):
    store = stores.open()
    seen, appended = [], []
    store.dispatch_listeners.append(lambda requests: seen.append([a[:3] for a in arrivals(requests)]))

    def on_appended():  # a request that came during the transfer, read in the next poll
        appended.append(len(seen))
        if len(appended) == 1:
            stores.clock.callLater(0, store.put_message, record(queue_id=1, UNIQ_KEY="B"))

    store.append_listeners.append(on_appended)
    store.put_message(record(queue_id=0, UNIQ_KEY="A"))
    stores.clock.advance(0)
    assert appended == [0, 0]  # the second put's turn did not wait again
    assert seen == [[("TopicA", 0, 1), ("TopicA", 1, 1)]]


def test_the_puts_of_a_reactor_turn_wake_the_async_flusher_once_at_its_end(stores):
    store = stores.open(flushCommitLogTimed=False)
    wakeups = []
    wakeup = store.flusher.wakeup
    store.flusher.wakeup = lambda: wakeups.append(store.get_max_phy_offset()) or wakeup()
    for i in range(3):
        store.put_message(record(queue_id=i, UNIQ_KEY="W%d" % i))
    assert wakeups == []
    stores.clock.advance(0)
    assert wakeups == [store.get_max_phy_offset()]
    stores.clock.advance(0)
    assert len(wakeups) == 1  # a turn without puts does not wake it


def test_the_puts_do_not_wake_a_timed_async_flusher(stores):
    store = stores.open(start=False)
    wakeups = []
    store.flusher.wakeup = lambda: wakeups.append(store.get_max_phy_offset())
    store.start()
    store.put_message(record(UNIQ_KEY="T1"))
    stores.clock.advance(0)
    assert wakeups == []
    stores.clock.advance(0.1)  # flushIntervalCommitLog
    assert wakeups == [store.get_max_phy_offset()]


def test_a_read_in_the_turn_of_a_put_sees_it(stores):
    store = stores.open()
    seen = []
    store.dispatch_listeners.append(seen.append)
    store.put_message(record(queue_id=2, UNIQ_KEY="U1"))
    assert store.get_max_offset_in_queue("TopicA", 2) == 1  # dispatched first
    assert len(seen) == 1
    store.put_message(record(queue_id=2, KEYS="k2", UNIQ_KEY="U2"))
    assert len(store.query_message("TopicA", "k2", 10, 0, 1 << 62).messages) == 1
    store.put_message(record(queue_id=2, UNIQ_KEY="U3"))
    got = store.get_message("g", "TopicA", 2, 0, 32)
    assert got.status is G.FOUND and len(got.messages) == 3
    stores.clock.advance(0)
    assert len(seen) == 3  # each put once, none again at the end of the turn


def test_a_failed_deferred_dispatch_is_done_again_from_the_commit_log(stores):
    store = stores.open()
    store.put_message(record(queue_id=4, UNIQ_KEY="F1"))
    store.put_message(record(queue_id=5, UNIQ_KEY="F2"))
    dispatch = store.reput.dispatch

    def fail_once(requests):
        store.reput.dispatch = dispatch
        dispatch(requests[:1])  # the first unit is written, then the disk fails
        raise OSError("no space left on device")

    store.reput.dispatch = fail_once
    with pytest.raises(OSError):
        store.get_max_offset_in_queue("TopicA", 4)
    store.put_message(record(queue_id=5, UNIQ_KEY="F3"))  # not at the head: the reput re-reads
    assert [store.get_max_offset_in_queue("TopicA", q) for q in (4, 5)] == [1, 2]
    found = store.get_message("g", "TopicA", 5, 0, 32)
    assert [m.properties["UNIQ_KEY"] for m in map(msg.decode_record, found.messages)] == [
        "F2", "F3"]
    assert store.dispatch_behind_bytes() == 0


def test_shutdown_dispatches_the_last_puts(stores):
    store = stores.open()
    store.put_message(record(queue_id=3, UNIQ_KEY="Z"))
    store.shutdown()
    reopened = stores.open()
    assert reopened.get_max_offset_in_queue("TopicA", 3) == 1
    assert reopened.dispatch_behind_bytes() == 0


def test_a_second_process_cannot_open_a_running_store(stores):
    from rmqproto.store.defaultstore import DefaultMessageStore
    from rmqproto.store.mappedfile import StoreError
    running = stores.open()
    fill(running, 3)
    other = DefaultMessageStore(running.config, stores.clock)
    # the lock comes before recovery: the live files (abort present) are not even opened
    with pytest.raises(StoreError, match="locked by another process"):
        other.load()
    assert other.commit_log.queue.files == [] and other.consume_queue_table == {}
    other.shutdown()
    assert running.get_max_phy_offset() > 0 and not running.is_shutdown


def test_an_index_file_of_another_size_is_refused(stores):
    from rmqproto.store.mappedfile import StoreError

    store = stores.open()
    fill(store, 5)
    store.shutdown()
    with pytest.raises(StoreError, match="configured size"):
        stores.open(maxIndexNum=100)


def test_a_full_index_file_deleted_during_its_fsync_keeps_its_descriptor(stores):
    store = stores.open(start=False)
    runner = store.run_blocking = ManualRunner()
    store.start()
    fill(store, 80)  # 3 keys a message: the first 200-entry file is full
    full = store.index_service.files[0]
    assert runner.jobs and full._flushes_in_flight == 1
    store.index_service.delete_expired_files(2 ** 62)  # retention deletes it meanwhile
    assert full.closed and not os.path.exists(full.path)
    runner.run_next()  # the fsync still has its descriptor
    assert full._flushes_in_flight == 0
    assert store.checkpoint.index_msg_timestamp == full.index.end_timestamp


def test_written_files_parse_with_the_codecs(stores):
    store = stores.open()
    fill(store, 100)
    store.shutdown()
    index_dir = store.paths["index"]
    name = sorted(os.listdir(index_dir))[0]
    data = bytearray(open(os.path.join(index_dir, name), "rb").read())
    index = indexfile.IndexFile(data, 64, 200)
    assert index.header.index_count > 1
    cq_file = os.path.join(store.paths["consumequeue"], "TopicA", "0", offset_to_file_name(0))
    units = consumequeue.valid_units(open(cq_file, "rb").read())
    assert len(units) == 10


def test_clean_unused_topic_deletes_the_queues_of_unconfigured_topics(stores):
    store = stores.open()
    fill(store, 6, "Gone")
    fill(store, 4, "Kept")
    put(store, record("Kept", 0, b"later", DELAY="3"))
    root = store.paths["consumequeue"]
    assert store.clean_unused_topic({"Kept"}) == 1
    assert store.get_topics() == sorted(["Kept", SCHEDULE_TOPIC])
    assert not os.path.exists(os.path.join(root, "Gone"))
    assert store.get_max_offset_in_queue("Gone", 0) == 0
    assert put(store, record("Gone", 0, b"again")).append_result.logics_offset == 0
    assert len(read_queue(store, "Kept", 0)) == 2


def test_the_lock_is_taken_before_loading_and_released_by_shutdown(tmp_path):
    """A broker locks its store before the reactor runs (``lock``), and loads it later."""
    from twisted.internet.task import Clock

    from rmqproto.broker.config import SETTINGS
    from rmqproto.store.defaultstore import DefaultMessageStore
    from rmqproto.store.mappedfile import StoreError

    config, _ = SETTINGS.resolve({"storePathRootDir": str(tmp_path / "store")})
    first, second = DefaultMessageStore(config, Clock()), DefaultMessageStore(config, Clock())
    first.lock()
    with pytest.raises(StoreError, match="store in .* is locked by another process"):
        second.lock()
    first.shutdown()  # locked, never loaded: nothing to flush, the lock released
    second.lock()
    second.shutdown()
    assert not (tmp_path / "store" / "abort").exists()


def test_clean_expired_consumer_queue_destroys_queues_below_the_commit_log(stores):
    store = stores.open()
    fill(store, 4, "Old", queues=1)
    put(store, record("Old", 1, b"x"))
    fill(store, 300, queues=1)  # rolls past the first 64 KiB segment
    put(store, record("Later", 0, b"later", DELAY="3"))  # into the schedule topic
    store.find_consume_queue("Fresh", 0)  # created, never written: kept, as Java's
    root = store.paths["consumequeue"]
    assert store.clean_expired_consumer_queue() == 0  # nothing expired yet
    store.commit_log.queue.remove_files([store.commit_log.queue.files[0]])
    assert store.clean_expired_consumer_queue() == 2
    assert "Old" not in store.get_topics() and not os.path.exists(os.path.join(root, "Old"))
    assert {"TopicA", "Fresh", SCHEDULE_TOPIC} <= set(store.get_topics())
    # the queue offsets are forgotten with the queues
    assert put(store, record("Old", 0, b"again")).append_result.logics_offset == 0


def test_query_consume_queue_reads_units_from_an_index(stores):
    store = stores.open()
    fill(store, 5, queues=1)
    low, high, units = store.query_consume_queue("TopicA", 0, 3, 10)
    assert (low, high) == (0, 5)
    cq = store.find_consume_queue("TopicA", 0, create=False)
    assert units == [cq.unit(3), cq.unit(4)]
    assert store.query_consume_queue("TopicA", 0, 1, 1)[2] == [cq.unit(1)]
    assert store.query_consume_queue("TopicA", 0, 5, 10)[2] is None
    assert store.query_consume_queue("TopicA", 0, -1, 10)[2] is None
    assert store.query_consume_queue("TopicA", 0, 0, -2)[2] == []
    assert store.query_consume_queue("TopicA", 1, 0, 10) is None
