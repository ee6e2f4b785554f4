"""The HA client against real stores: a slave ``DefaultMessageStore``
fed the bytes a master store holds, in transfers the size Java's master sends, ends with
a byte-identical commit log, consume queues a consumer can read, and survives a re-seed."""

import filecmp
import os

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.logger import capturedLogs

from rmqproto.codec.ha import encode_transfer
from rmqproto.codec.message import MessageRecord, decode_record
from rmqproto.ha.client import Close, HAClient, Send
from rmqproto.store import defaultstore
from rmqproto.store.defaultstore import DefaultMessageStore
from rmqproto.store.results import GetMessageStatus

SEGMENT = 64 * 1024
SETTINGS = dict(mappedFileSizeCommitLog=SEGMENT, mappedFileSizeConsumeQueue=50 * 20,
                maxHashSlotNum=64, maxIndexNum=200, haSendHeartbeatInterval=5000,
                haHousekeepingInterval=20_000)
BATCH = 32 * 1024  # haTransferBatchSize


@pytest.fixture
def pair(tmp_path):
    clock = Clock()
    clock.advance(1_700_000_000)
    opened = []

    def open_store(name, **config):
        store = DefaultMessageStore(dict(SETTINGS, storePathRootDir=str(tmp_path / name), **config),
                                    clock)
        store.load()
        store.start()
        opened.append(store)
        return store

    master = open_store("master")
    slave = open_store("slave", brokerRole="SLAVE")
    yield master, slave
    for store in opened:
        store.shutdown()


def fill(master, count, topic="HATopic"):
    for i in range(count):
        record = MessageRecord(topic, b"body-%d-" % i + b"x" * (i % 300), {"KEYS": "k%d" % i},
                               queue_id=i % 3, born_host=("10.1.2.3", 5000),
                               store_host=("10.9.8.7", 10911), born_timestamp=1_700_000_000_000)
        master.put_message(record)


def master_stream(master, start):
    """What a Java master sends from ``start``: chunks of at most 32 KiB within one segment."""
    out, offset = [], start
    while offset < master.get_max_phy_offset():
        data = master.get_commit_log_data(offset, BATCH)
        out.append(encode_transfer(offset, data))
        offset += len(data)
    return b"".join(out)


def replicate(client, stream, read_size):
    """Feed ``stream`` in reads of ``read_size``, one reactor turn each (the slave dispatches
    what it appended in the turns after the append)."""
    actions = []
    for i in range(0, len(stream), read_size):
        actions += client.data_received(stream[i:i + read_size], 1.0)
        client.store.reactor.advance(0)
    return actions


def connected_client(slave, configured=False):
    """An HA client of ``slave`` connected to a master at time 0 (its first report sent);
    ``configured``: the master is the slave's ``haMasterAddress``."""
    address = "127.0.0.1:10912"
    client = HAClient(slave, dict(slave.config, haMasterAddress=address if configured else ""))
    client.start(0.0)
    client.update_master_address(address, 0.0)
    client.connection_made(0.0)
    return client


def same_files(a, b):
    names = sorted(os.listdir(a))
    assert names == sorted(os.listdir(b))
    return all(filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False) for n in names)


@pytest.mark.parametrize("read_size", [1000, 4093, 65536])
def test_replicated_log_is_byte_identical_and_consumable(pair, read_size):
    master, slave = pair
    fill(master, 700)  # several segments, with blanks at their ends
    assert master.get_max_phy_offset() > 2 * SEGMENT
    client = HAClient(slave, slave.config)
    client.start(0.0)
    client.update_master_address("127.0.0.1:1", 0.0)
    assert client.connection_made(0.0) == [Send((0).to_bytes(8, "big"))]
    actions = replicate(client, master_stream(master, 0), read_size)
    assert not [a for a in actions if isinstance(a, Close)]
    assert slave.get_max_phy_offset() == master.get_max_phy_offset()
    assert client.current_reported_offset == master.get_max_phy_offset()
    assert same_files(master.paths["commitlog"], slave.paths["commitlog"])
    for queue_id in range(3):
        assert slave.get_max_offset_in_queue("HATopic", queue_id) == \
            master.get_max_offset_in_queue("HATopic", queue_id)
    result = slave.get_message("g", "HATopic", 1, 0, 32)
    assert result.status is GetMessageStatus.FOUND
    assert [decode_record(m).body[:7] for m in result.messages[:2]] == [b"body-1-", b"body-4-"]


def test_an_empty_slave_starts_at_the_masters_last_segment(pair):
    master, slave = pair
    fill(master, 500)
    start = master.get_max_phy_offset() - master.get_max_phy_offset() % SEGMENT
    client = connected_client(slave)
    replicate(client, master_stream(master, start), 8192)
    assert slave.get_min_phy_offset() == start
    assert slave.get_max_phy_offset() == master.get_max_phy_offset()


def test_reseed_moves_the_log_and_queues_aside_and_continues(pair):
    master, slave = pair
    fill(master, 700)
    client = connected_client(slave, configured=True)
    first = master_stream(master, 0)
    replicate(client, first[:12 + BATCH], 5000)  # the slave holds the first transfer only
    slave.reactor.advance(1)  # dispatched
    assert slave.get_max_phy_offset() == BATCH
    kept = {name: open(os.path.join(slave.paths["commitlog"], name), "rb").read()
            for name in os.listdir(slave.paths["commitlog"])}
    queues = sorted(os.listdir(os.path.join(slave.paths["consumequeue"], "HATopic")))
    restart = 2 * SEGMENT
    with capturedLogs() as events:
        actions = replicate(client, master_stream(master, restart), 4096)
    assert not [a for a in actions if isinstance(a, Close)]
    # the old files are where the log line says, unchanged
    [line] = [e for e in events if "moved aside" in e.get("log_format", "")]
    log_aside, queues_aside = line["moved"].split(", ")
    assert log_aside.startswith(slave.paths["commitlog"] + ".ha-reseed-")
    assert queues_aside.startswith(slave.paths["consumequeue"] + ".ha-reseed-")
    assert {name: open(os.path.join(log_aside, name), "rb").read()
            for name in os.listdir(log_aside)} == kept
    assert sorted(os.listdir(os.path.join(queues_aside, "HATopic"))) == queues
    assert slave.get_min_phy_offset() == restart
    assert slave.get_max_phy_offset() == master.get_max_phy_offset()
    names = sorted(os.listdir(slave.paths["commitlog"]))
    assert names[0] == "%020d" % restart
    for name in names:
        assert filecmp.cmp(os.path.join(master.paths["commitlog"], name),
                           os.path.join(slave.paths["commitlog"], name), shallow=False)
    # the queues were rebuilt from the new records only; their offsets are the master's
    for queue_id in range(3):
        assert slave.get_max_offset_in_queue("HATopic", queue_id) == \
            master.get_max_offset_in_queue("HATopic", queue_id)
        low = slave.get_min_offset_in_queue("HATopic", queue_id)
        result = slave.get_message("g", "HATopic", queue_id, low, 1)
        assert result.status is GetMessageStatus.FOUND
        assert decode_record(result.messages[0]).commit_log_offset >= restart


def test_a_reseed_from_a_master_not_configured_leaves_the_store_alone(pair):
    master, slave = pair
    fill(master, 700)
    client = connected_client(slave)  # the master's address came from a NameServer
    replicate(client, master_stream(master, 0)[:12 + BATCH], 5000)
    before = sorted(os.listdir(slave.paths["root"]))
    actions = replicate(client, master_stream(master, 2 * SEGMENT), 4096)
    [close] = [a for a in actions if isinstance(a, Close)]
    assert "only the master named by haMasterAddress may re-seed" in close.reason
    assert slave.get_max_phy_offset() == BATCH and slave.get_min_phy_offset() == 0
    assert sorted(os.listdir(slave.paths["root"])) == before


def test_reset_commit_log_refuses_an_offset_inside_a_segment(pair):
    _, slave = pair
    assert not slave.reset_commit_log(SEGMENT + 1)
    assert slave.reset_commit_log(SEGMENT)
    assert slave.get_max_phy_offset() == slave.get_min_phy_offset() == SEGMENT


def test_the_slave_reports_before_it_dispatches_in_bounded_turns(pair, monkeypatch):
    master, slave = pair
    fill(master, 700)
    monkeypatch.setattr(defaultstore, "REPUT_SLICE_BYTES", 10_000)
    client = connected_client(slave)
    end = master.get_max_phy_offset()
    actions = client.data_received(master_stream(master, 0), 1.0)
    assert actions == [Send(end.to_bytes(8, "big"))]  # reported, nothing dispatched yet
    assert slave.dispatch_behind_bytes() == end
    slices = []
    do_reput = slave.reput.do_reput

    def one_slice(max_bytes=None):
        behind = slave.dispatch_behind_bytes()
        done = do_reput(max_bytes)
        slices.append(behind - slave.dispatch_behind_bytes())
        return done

    slave.reput.do_reput = one_slice
    slave.reactor.advance(0)  # each slice schedules the next (a fake clock runs them all)
    assert slave.dispatch_behind_bytes() == 0
    assert len(slices) >= end // 10_000
    # whole records: a slice ends after the record that crosses 10 000 bytes (< 400 bytes),
    # and may cross a segment's end blank (< 400 bytes) on the way
    assert all(0 < size <= 10_000 + 800 for size in slices)
    for queue_id in range(3):
        assert slave.get_max_offset_in_queue("HATopic", queue_id) == \
            master.get_max_offset_in_queue("HATopic", queue_id)


def test_a_clean_stop_dispatches_what_replication_appended(pair, tmp_path):
    master, slave = pair
    fill(master, 300)
    client = connected_client(slave)
    client.data_received(master_stream(master, 0), 1.0)
    assert slave.dispatch_behind_bytes() > 0
    slave.shutdown()
    assert not os.path.exists(slave.paths["abort"])
    again = DefaultMessageStore(dict(slave.config), slave.reactor)
    again.load()
    assert again.last_exit_ok
    again.start()
    assert again.dispatch_behind_bytes() == 0
    for queue_id in range(3):
        assert again.get_max_offset_in_queue("HATopic", queue_id) == \
            master.get_max_offset_in_queue("HATopic", queue_id)
    again.shutdown()


def test_replicated_bytes_are_flushed_by_the_periodic_rounds_only(pair):
    """As Java's ``appendToCommitLog``, an append wakes the reput, not the flusher: the bytes
    are flushed by the ``flushIntervalCommitLog`` rounds (``CommitLog.FlushRealTimeService``)."""
    master, slave = pair
    fill(master, 300)
    jobs = []
    slave.flusher.run_blocking = lambda f, *args: jobs.append(f) or defer.maybeDeferred(f, *args)
    client = connected_client(slave)
    replicate(client, master_stream(master, 0), 4096)
    end = slave.get_max_phy_offset()
    assert end == master.get_max_phy_offset() and end % SEGMENT < 4 * 4096
    assert jobs == [] and slave.commit_log.queue.flushed_where == 0
    slave.reactor.advance(slave.config["flushIntervalCommitLog"] / 1000)
    # the full segment; the last one's fewer than flushCommitLogLeastPages dirty pages wait
    assert len(jobs) == 1 and slave.commit_log.queue.flushed_where == SEGMENT
    slave.reactor.advance(slave.config["flushCommitLogThoroughInterval"] / 1000)
    assert slave.commit_log.queue.flushed_where == end


def test_bytes_written_in_place_by_a_receive_thread_are_taken_and_dispatched(pair):
    master, slave = pair
    fill(master, 40)
    first = master.get_commit_log_data(0, 1000)
    assert slave.replication_segment() is None  # no segment yet
    assert slave.append_to_commit_log(0, first)
    segment = slave.replication_segment()
    assert (segment.file_from_offset, segment.wrote_position) == (0, len(first))
    end = master.get_max_phy_offset()
    segment.mm[len(first):end] = master.get_commit_log_data(len(first), end)  # as the thread
    assert slave.get_max_phy_offset() == len(first)  # not taken yet
    assert slave.appended_in_place(end)
    slave.reactor.advance(0)
    assert slave.get_max_phy_offset() == end and slave.dispatch_behind_bytes() == 0
    assert slave.get_max_offset_in_queue("HATopic", 0) == master.get_max_offset_in_queue("HATopic", 0)
    assert not slave.appended_in_place(end - 1)  # behind
    assert not slave.appended_in_place(SEGMENT + 1)  # beyond the segment
    assert slave.get_max_phy_offset() == end
    assert slave.appended_in_place(SEGMENT)  # full
    assert slave.replication_segment() is None
    slave.shutdown()
    assert slave.replication_segment() is None and not slave.appended_in_place(SEGMENT)
