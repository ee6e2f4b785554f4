"""The slave's HA client state machine (``HAService.HAClient``; RMQ5 ``DefaultHAClient``), driven
by hand with ``now`` values and an in-memory commit log: states, reports, appends at
exactly the advertised offset for any split of the stream, offset mismatches, the
re-seed recovery, reconnect backoff and housekeeping. The bytes are arbitrary, so the
record checks are off here (they are tested on real stores in tests/hostile)."""

from collections import namedtuple

import pytest
from twisted.logger import capturedLogs

from rmqproto.codec.ha import HAConnectionState as S, encode_slave_report, encode_transfer
from rmqproto.ha.client import (RECONNECT_FIRST_DELAY, RECONNECT_MAX_DELAY, Close, Connect,
                                HAClient, Send)

FILE_SIZE = 1024
CONFIG = dict(mappedFileSizeCommitLog=FILE_SIZE, haSendHeartbeatInterval=5000,
              haHousekeepingInterval=20_000)
MASTER = "10.0.0.2:10912"
Segment = namedtuple("Segment", "file_from_offset wrote_position file_size")


class MemoryLog:
    """The three store calls the client makes, on one growing commit log (``base`` = the
    offset of its first byte). Appends are accepted as the real store's are."""

    def __init__(self, base=0, data=b""):
        self.base = base
        self.data = bytearray(data)
        self.resets = []

    def get_max_phy_offset(self):
        return self.base + len(self.data) if self.data or self.base else 0

    def append_to_commit_log(self, offset, data):
        if self.data or self.base:
            if offset != self.get_max_phy_offset():
                return False
        elif offset % FILE_SIZE:
            return False
        else:
            self.base = offset
        self.data += data
        return True

    def reset_commit_log(self, offset):
        self.resets.append(offset)
        self.base, self.data = offset, bytearray()
        return ["commitlog.aside", "consumequeue.aside"]

    def replication_segment(self):
        """The open segment (None when the log is empty)."""
        end = self.get_max_phy_offset()
        if not end:
            return None
        return Segment(end - end % FILE_SIZE, end % FILE_SIZE, FILE_SIZE)

    def appended_in_place(self, end):
        """A receive thread wrote up to ``end``: the bytes are taken as ``w``s."""
        if end < self.get_max_phy_offset():
            return False
        self.data += b"w" * (end - self.get_max_phy_offset())
        return True


def report(offset):
    return Send(encode_slave_report(offset))


def connected(store=None, now=100.0, **config):
    client = HAClient(store or MemoryLog(), dict(CONFIG, **config), check_records=False)
    assert client.start(now) == []
    assert client.update_master_address(MASTER, now) == [Connect(MASTER)]
    assert client.state is S.READY
    return client


def transferring(store=None, now=100.0, **config):
    client = connected(store, now, **config)
    client.connection_made(now)
    return client


def test_connects_once_the_address_is_known_and_reports_at_once():
    store = MemoryLog(base=2048, data=b"x" * 10)
    client = HAClient(store, CONFIG, check_records=False)
    assert client.start(0.0) == [] and client.get_timer() is None
    assert client.update_master_address(MASTER, 1.0) == [Connect(MASTER)]
    assert client.update_master_address(MASTER, 1.0) == []  # already connecting
    assert client.connection_made(1.5) == [report(2058)]
    assert client.state is S.TRANSFER
    assert client.last_read_timestamp == client.last_write_timestamp == 1.5


def test_the_address_is_only_used_after_start():
    client = HAClient(MemoryLog(), CONFIG, check_records=False)
    assert client.update_master_address(MASTER, 0.0) == []
    assert client.start(0.0) == [Connect(MASTER)]


def test_an_empty_slave_takes_the_first_offset_the_master_names():
    store = MemoryLog()
    client = transferring(store)
    body = b"a" * 100
    assert client.data_received(encode_transfer(3 * FILE_SIZE, body), 101.0) == [
        report(3 * FILE_SIZE + 100)]
    assert store.base == 3 * FILE_SIZE and bytes(store.data) == body


@pytest.mark.parametrize("split", range(0, 12 + 40 + 12 + 0 + 12 + 30 + 1, 1))
def test_any_split_of_headers_and_bodies_gives_the_same_log(split):
    stream = (encode_transfer(0, b"A" * 40) + encode_transfer(40, b"")
              + encode_transfer(40, b"B" * 30))
    store = MemoryLog()
    client = transferring(store)
    actions = client.data_received(stream[:split], 101.0) + client.data_received(stream[split:], 102.0)
    assert bytes(store.data) == b"A" * 40 + b"B" * 30
    assert all(isinstance(a, Send) for a in actions)
    assert actions[-1] == report(70)
    assert client.state is S.TRANSFER


def test_byte_by_byte():
    stream = encode_transfer(FILE_SIZE, b"xyz" * 50) + encode_transfer(FILE_SIZE + 150, b"q")
    store = MemoryLog()
    client = transferring(store)
    for i in range(len(stream)):
        client.data_received(stream[i:i + 1], 101.0)
    assert store.get_max_phy_offset() == FILE_SIZE + 151
    assert client.current_reported_offset == FILE_SIZE + 151


def test_one_report_per_read_and_none_when_nothing_grew():
    store = MemoryLog(data=b"z" * 10)
    client = transferring(store)
    stream = encode_transfer(10, b"1" * 5) + encode_transfer(15, b"2" * 5)
    assert client.data_received(stream, 101.0) == [report(20)]
    assert client.data_received(encode_transfer(20), 102.0) == []  # a heartbeat


def test_offset_mismatch_closes_and_goes_back_to_ready():
    store = MemoryLog(data=b"z" * 100)
    client = transferring(store)
    actions = client.data_received(encode_transfer(90, b"late"), 101.0)
    assert actions == [Close("master pushed offset not equal the max phy offset in slave, "
                             "SLAVE: 100 MASTER: 90")]
    assert client.state is S.READY and bytes(store.data) == b"z" * 100
    assert client.data_received(encode_transfer(100, b"more"), 101.0) == []  # closed: ignored
    assert client.connection_lost("aborted", 101.0) == []
    assert client.get_timer() == 101.0 + RECONNECT_FIRST_DELAY


def test_a_heartbeat_at_another_offset_is_a_mismatch_too():
    client = transferring(MemoryLog(data=b"z" * 100))
    assert isinstance(client.data_received(encode_transfer(120), 101.0)[0], Close)


def test_a_master_behind_a_segment_start_is_a_mismatch():
    store = MemoryLog(base=2 * FILE_SIZE, data=b"z" * 100)
    client = transferring(store)
    assert isinstance(client.data_received(encode_transfer(FILE_SIZE, b"old"), 101.0)[0], Close)
    assert store.resets == []


def test_a_segment_start_ahead_reseeds_the_store_from_the_configured_master_only():
    store = MemoryLog(data=b"z" * 100)
    client = transferring(store, haMasterAddress=MASTER)
    with capturedLogs() as events:
        actions = client.data_received(encode_transfer(4 * FILE_SIZE, b"new"), 101.0)
    assert actions == [report(4 * FILE_SIZE + 3)]
    assert store.resets == [4 * FILE_SIZE] and bytes(store.data) == b"new"
    assert client.state is S.TRANSFER
    [line] = [e for e in events if "moved aside" in e["log_format"]]
    assert line["moved"] == "commitlog.aside, consumequeue.aside"
    for config in ({}, {"haMasterAddress": "10.0.0.3:10912"}):  # a NameServer's, another
        store = MemoryLog(data=b"z" * 100)
        client = transferring(store, **config)
        [close] = client.data_received(encode_transfer(4 * FILE_SIZE, b"new"), 101.0)
        assert "only the master named by haMasterAddress" in close.reason
        assert store.resets == [] and bytes(store.data) == b"z" * 100


def test_a_refused_reseed_closes():
    store = MemoryLog(data=b"z" * 100)
    store.reset_commit_log = lambda offset: []
    client = transferring(store, haMasterAddress=MASTER)
    assert client.data_received(encode_transfer(4 * FILE_SIZE, b"new"), 101.0) == [
        Close("cannot restart the commit log at %d" % (4 * FILE_SIZE))]


def test_a_refused_append_closes():
    client = transferring(MemoryLog())
    actions = client.data_received(encode_transfer(10, b"not a segment start"), 101.0)
    assert isinstance(actions[0], Close) and "cannot append" in actions[0].reason


def test_a_negative_body_size_closes():
    client = transferring(MemoryLog())
    bad = (0).to_bytes(8, "big") + (-5).to_bytes(4, "big", signed=True)
    actions = client.data_received(bad, 101.0)
    assert isinstance(actions[0], Close) and "bad transfer header" in actions[0].reason
    assert client.state is S.READY


def test_heartbeat_report_every_interval():
    store = MemoryLog(data=b"z" * 7)
    client = transferring(store, now=100.0)
    assert client.get_timer() == 105.0
    assert client.handle_timer(104.9) == []
    client.data_received(encode_transfer(7), 104.0)  # a master heartbeat
    assert client.handle_timer(105.0) == [report(7)]
    assert client.get_timer() == 110.0


def test_housekeeping_closes_after_silence_by_last_read_time():
    client = transferring(MemoryLog(), now=100.0)
    for t in (105.0, 110.0, 115.0):
        assert client.handle_timer(t) == [report(0)]  # our reports do not count as life
    assert client.get_timer() == 120.0
    actions = client.handle_timer(120.0)
    assert len(actions) == 1 and isinstance(actions[0], Close)
    assert "housekeeping" in actions[0].reason and client.state is S.READY


def test_data_keeps_the_connection_alive():
    client = transferring(MemoryLog(), now=100.0)
    client.data_received(encode_transfer(0), 119.0)
    assert client.handle_timer(120.0) == [report(0)]
    assert client.state is S.TRANSFER
    assert client.get_timer() == 125.0


def test_reconnect_backoff_doubles_up_to_the_cap_and_resets_after_a_transfer():
    client = connected(MemoryLog(), now=0.0)
    now, delays = 0.0, []
    for _ in range(6):
        client.connect_failed("refused", now)
        delays.append(client.get_timer() - now)
        assert client.handle_timer(client.get_timer() - 0.01) == []
        now = client.get_timer()
        assert client.handle_timer(now) == [Connect(MASTER)]
        assert client.get_timer() is None  # connecting
    assert delays == [1.0, 2.0, 4.0, 5.0, 5.0, 5.0]
    assert RECONNECT_MAX_DELAY == 5.0
    client.connection_made(now)
    client.data_received(encode_transfer(0, b"x"), now)
    client.connection_lost("reset by peer", now)
    assert client.state is S.READY and client.get_timer() == now + RECONNECT_FIRST_DELAY


def test_connection_lost_goes_ready_and_retries():
    client = transferring(MemoryLog(), now=100.0)
    assert client.connection_lost("closed", 101.0) == []
    assert client.state is S.READY
    assert client.handle_timer(client.get_timer()) == [Connect(MASTER)]


def test_a_new_address_is_used_for_the_next_connection():
    client = transferring(MemoryLog(), now=100.0)
    assert client.update_master_address("10.0.0.3:10912", 101.0) == []
    assert client.state is S.TRANSFER
    client.connection_lost("closed", 102.0)
    assert client.handle_timer(client.get_timer()) == [Connect("10.0.0.3:10912")]


def test_shutdown():
    client = transferring(MemoryLog(), now=100.0)
    assert client.shutdown() == [Close("shutdown")]
    assert client.state is S.SHUTDOWN and client.get_timer() is None
    assert client.connection_lost("closed", 101.0) == []
    assert client.update_master_address("10.0.0.9:1", 101.0) == []
    assert client.handle_timer(200.0) == []


def test_shutdown_while_connecting():
    client = connected(MemoryLog(), now=100.0)
    assert client.shutdown() == []
    assert client.connection_made(100.5) == [Close("shutting down")]
    assert client.connect_failed("cancelled", 101.0) == [] and client.get_timer() is None


def test_state_changes_are_logged():
    from twisted.logger import globalLogPublisher
    events = []
    globalLogPublisher.addObserver(events.append)
    try:
        client = transferring(MemoryLog())
        client.connection_lost("closed", 101.0)
    finally:
        globalLogPublisher.removeObserver(events.append)
    states = [e["state"] for e in events if "state" in e]
    assert states == ["TRANSFER", "READY"]


def test_runtime_info():
    store = MemoryLog(data=b"z" * 42)
    client = transferring(store, now=100.0)
    client.data_received(encode_transfer(42), 101.5)
    info = client.runtime_info()
    assert info["haClientState"] == "TRANSFER"
    assert info["haClientMasterAddr"] == MASTER
    assert info["haClientMaxOffset"] == "42"
    assert info["haClientLastReadTimestamp"] == "101500"
    assert info["haClientLastWriteTimestamp"] == "100000"


def test_ha_client_runtime_info_counts_the_bytes_of_the_last_whole_second():
    store = MemoryLog(data=b"z" * 42)
    client = transferring(store, now=100.0)
    client.data_received(encode_transfer(42, b"abc"), 100.5)
    client.receiver_started()
    client.receiver_progress(45, 20, 45, 1, 100.7)
    during = client.ha_client_runtime_info(100.9)
    assert (during.master_addr, during.max_offset, during.transferred_byte_in_second) == (
        MASTER, 45, 0)  # the second is not over
    info = client.ha_client_runtime_info(101.2)
    assert info.transferred_byte_in_second == 15 + 20  # a transfer header is 12 bytes
    assert (info.last_read_timestamp, info.last_write_timestamp) == (100700, 100700)
    assert info.master_flush_offset == 0
    assert client.ha_client_runtime_info(102.5).transferred_byte_in_second == 0


# ---------------------------------------------------------------- a receive thread


def test_a_receive_thread_takes_the_stream_where_it_stands():
    assert transferring(MemoryLog()).receive_point() is None  # no segment yet
    store = MemoryLog(data=b"z" * 10)
    assert connected(store).receive_point() is None  # not connected
    client = transferring(store)
    segment = Segment(0, 10, FILE_SIZE)
    assert client.receive_point() == (segment, b"", 0)
    stream = encode_transfer(10, b"abc") + encode_transfer(13, b"d" * (FILE_SIZE - 13))
    client.data_received(stream[:5], 101.0)
    assert client.receive_point() == (segment, stream[:5], 0)  # half a header
    client.data_received(stream[5:13], 101.0)
    assert client.receive_point() == (Segment(0, 11, FILE_SIZE), b"", 2)  # half a body
    client.data_received(stream[13:15 + 12], 101.0)
    assert client.receive_point() == (Segment(0, 13, FILE_SIZE), b"", FILE_SIZE - 13)
    store.data += b"!"  # the store is not where the body goes on
    assert client.receive_point() is None
    client.receiver_started()
    assert client.receive_point() == (Segment(0, 14, FILE_SIZE), b"", 0)  # the thread's now


def test_a_body_beyond_the_segment_stays_here():
    store = MemoryLog(data=b"z" * 10)
    client = transferring(store)
    client.data_received(encode_transfer(10, b"e" * FILE_SIZE)[:20], 101.0)
    assert client.receive_point() is None


def test_the_threads_progress_moves_the_log_the_counters_and_the_reports():
    store = MemoryLog(data=b"z" * 10)
    client = transferring(store, now=100.0)
    client.receiver_started()
    assert client.receiver_progress(30, 44, 30, 2, 101.0) == []
    assert store.get_max_phy_offset() == 30
    assert (client.transferred_bytes, client.last_read_timestamp) == (44, 101.0)
    assert (client.current_reported_offset, client.last_write_timestamp) == (30, 101.0)
    assert client.receiver_progress(30, 0, 30, 1, 106.0) == []  # its heartbeat
    assert client.last_write_timestamp == 106.0 and client.last_read_timestamp == 101.0
    assert client.receiver_progress(29, 0, 30, 0, 107.0) == []  # nothing new
    assert store.get_max_phy_offset() == 30


def test_the_thread_sends_the_heartbeats_and_housekeeping_stays_here():
    client = transferring(MemoryLog(data=b"z" * 10), now=100.0)
    client.receiver_started()
    assert client.get_timer() == 120.0  # no heartbeat due from here
    assert client.handle_timer(105.0) == []
    client.receiver_progress(10, 12, 10, 0, 110.0)  # an empty transfer read
    assert client.get_timer() == 130.0
    assert isinstance(client.handle_timer(130.0)[0], Close)
    assert client.state is S.READY
    client.connection_made(131.0)
    assert client.get_timer() == 136.0  # reports are the client's own again


def test_bytes_handed_back_are_taken_as_read_here():
    store = MemoryLog(data=b"z" * 10)
    client = transferring(store)
    client.receiver_started()
    client.receiver_progress(12, 24, 12, 1, 101.0)
    handed = encode_transfer(12, b"xy")
    assert client.receiver_ended(handed, 102.0) == [report(14)]
    assert client.transferred_bytes == 24  # counted once, by the thread
    assert client.get_timer() == min(102.0 + 5, 102.0 + 20)
    assert client.receiver_ended(b"", 103.0) == []


def test_a_mismatch_handed_back_closes():
    client = transferring(MemoryLog(data=b"z" * 10))
    client.receiver_started()
    actions = client.receiver_ended(encode_transfer(11, b"x"), 101.0)
    assert isinstance(actions[0], Close) and client.state is S.READY


def test_progress_the_store_refuses_closes():
    store = MemoryLog(data=b"z" * 10)
    client = transferring(store)
    client.receiver_started()
    store.appended_in_place = lambda end: False
    assert isinstance(client.receiver_progress(20, 10, 10, 0, 101.0)[0], Close)
