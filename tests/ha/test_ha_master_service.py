"""The master's HA adapter (``docs/ha.md``): connections on ``StringTransport``, the
service on ``MemoryReactorClock``, a fake store with small segments. No sockets."""

import pytest
from twisted.internet.testing import StringTransport
from twisted.logger import capturedLogs

from rmqproto.codec.ha import encode_slave_report
from rmqproto.store.results import PutMessageStatus

from support.fakehamaster import Slave, data, make_service, results


# ---------------------------------------------------------------- lifecycle


def test_start_listens_on_the_ha_port_and_installs_the_hooks():
    ha, reactor, store = make_service()
    port, factory, _, interface = reactor.tcpServers[0]
    assert (port, factory, interface) == (10912, ha.factory, "127.0.0.1")
    assert store.replica_waiter == ha.wait_for_replica
    assert store.runtime_info_providers == [ha.runtime_info]
    assert ha.controller.ha_runtime_info == ha.ha_runtime_info
    ha.stopService()
    assert store.replica_waiter is None and store.runtime_info_providers == []
    assert ha.controller.ha_runtime_info is None
    assert store.append_listeners == []


def test_a_connection_is_registered_before_any_io_and_a_probe_leaks_nothing():
    ha, _, _ = make_service()
    slave = Slave(ha)
    assert list(ha.table.replicas) == [slave.conn]
    assert slave.transport.producer is slave.conn and slave.transport.streaming
    slave.conn.connectionLost(None)
    assert len(ha.table) == 0
    assert slave.transport.value() == b""


# ---------------------------------------------------------------- read side


def test_nothing_is_sent_before_the_first_report():
    ha, reactor, store = make_service()
    store.append(data(100))
    slave = Slave(ha)
    reactor.advance(30)   # heartbeats wait for the first report too (housekeeping closes at 20 s)
    assert slave.transport.value() == b""


def test_reports_in_any_chunking_the_newest_complete_one_wins():
    ha, reactor, store = make_service()
    store.append(data(500))
    slave = Slave(ha)
    report = encode_slave_report(300) + encode_slave_report(200) + encode_slave_report(400)
    slave.conn.dataReceived(report[:3])
    assert slave.conn.replica.slave_request_offset == -1
    slave.conn.dataReceived(report[3:8])
    assert slave.conn.replica.slave_request_offset == 300
    slave.conn.dataReceived(report[8:21])
    assert slave.conn.replica.slave_ack_offset == 200     # 200 complete, 400 not yet
    slave.conn.dataReceived(report[21:])
    assert slave.conn.replica.slave_ack_offset == 400
    slave2 = Slave(ha, port=40001)
    slave2.conn.dataReceived(report)                        # three at once: the last one
    assert slave2.conn.replica.slave_request_offset == 400


@pytest.mark.parametrize("first", [True, False])
def test_a_report_beyond_the_max_offset_closes_the_connection(first):
    ha, _, store = make_service()
    store.append(data(100))
    slave = Slave(ha)
    if not first:
        slave.report(50)
    slave.report(101)
    assert slave.closed and slave.transport.disconnecting and len(ha.table) == 0


# ---------------------------------------------------------------- write side


def test_transfer_starts_at_the_reported_offset_in_batches_within_a_segment():
    ha, _, store = make_service()
    store.append(data(1100))
    slave = Slave(ha)
    slave.report(900)
    got = slave.received()
    assert [(o, len(b)) for o, b in got] == [(900, 64), (964, 36), (1000, 64), (1064, 36)]
    assert b"".join(b for _, b in got) == bytes(store.log[900:])
    assert slave.conn.replica.transfer_from_where == 1100


def test_a_slave_reporting_zero_starts_at_the_last_segment():
    ha, _, store = make_service(haTransferBatchSize=1 << 20)
    store.append(data(2500))
    slave = Slave(ha)
    slave.report(0)
    assert slave.received() == [(2000, bytes(store.log[2000:]))]


def test_a_slave_below_the_oldest_kept_file_is_sent_the_oldest_file():
    ha, _, store = make_service(haTransferBatchSize=1 << 20)
    store.append(data(3500))
    store.min_offset = 2000
    slave = Slave(ha)
    slave.report(1500)
    got = slave.received()
    assert [(o, len(b)) for o, b in got] == [(2000, 1000), (3000, 500)]


def test_a_lagging_slave_whose_next_data_was_removed_moves_to_the_oldest_kept_file():
    ha, reactor, store = make_service(haTransferBatchSize=1 << 20)
    store.append(data(100))
    slave = Slave(ha)
    slave.conn.pauseProducing()
    slave.report(50)
    store.append(data(2400, 100))
    store.min_offset = 2000              # retention removed the first two segments
    slave.conn.resumeProducing()
    assert slave.received() == [(2000, bytes(store.log[2000:]))]


def test_new_data_is_pushed_when_messages_arrive():
    ha, reactor, store = make_service()
    slave = Slave(ha)
    slave.report(0)
    assert slave.received() == []
    store.append(data(10))
    store.append(data(20, 10))
    assert slave.received() == []          # the store tells once, at the turn's end
    reactor.advance(0)
    assert slave.received() == [(0, data(30))]


def test_a_waiting_put_is_sent_at_once_to_a_slave_with_nothing_in_flight():
    """Java's transfer thread wakes on each put; an unacked transfer makes the turn's later
    puts wait for its end and go together."""
    ha, reactor, store = make_service()
    slave = Slave(ha)
    slave.report(0)
    first = results(ha, store.append(data(10)))
    assert slave.received() == [(0, data(10))]        # during the put, before the turn's end
    second = results(ha, store.append(data(20, 10)))
    third = results(ha, store.append(data(30, 30)))
    assert slave.received() == []                     # the first transfer is not acked yet
    reactor.advance(0)
    assert slave.received() == [(10, data(50, 10))]   # the turn's puts, in one transfer
    slave.report(60)
    assert first == second == third == [PutMessageStatus.PUT_OK]
    results(ha, store.append(data(5, 60)))            # all acked: at once again
    assert slave.received() == [(60, data(5, 60))]


def test_the_write_side_follows_the_transport_buffer():
    ha, reactor, store = make_service()
    store.append(data(500))
    slave = Slave(ha)
    slave.conn.pauseProducing()
    slave.report(0)
    assert slave.received() == []
    reads = store.reads
    reactor.advance(5)                     # paused: no reads, no busy loop, no heartbeat
    assert slave.received() == [] and store.reads == reads
    slave.conn.resumeProducing()
    assert b"".join(b for _, b in slave.received()) == bytes(store.log)


def test_a_heartbeat_follows_haSendHeartbeatInterval_of_silence():
    ha, reactor, store = make_service()
    store.append(data(100))
    slave = Slave(ha)
    slave.report(100)
    assert slave.received() == []
    reactor.advance(5)                     # 5 s: not more than the interval yet
    assert slave.received() == []
    slave.report(100)                      # the slave's own report keeps the connection alive
    reactor.advance(1)
    assert slave.received() == [(100, b"")]
    reactor.advance(1)
    assert slave.received() == []


def test_housekeeping_closes_a_silent_connection():
    ha, reactor, store = make_service()
    slave = Slave(ha)
    slave.report(0)
    reactor.advance(20)
    assert not slave.closed
    reactor.advance(1)
    assert slave.closed and len(ha.table) == 0


def test_flow_control_caps_bytes_per_second_and_resumes_next_second():
    ha, reactor, store = make_service(haFlowControlEnable=True, maxHaTransferByteInSecond=200)
    store.append(data(900))
    slave = Slave(ha)
    slave.report(0)
    first = slave.received()
    sent = sum(len(b) + 12 for _, b in first)
    assert sent <= 200 and first[0][0] == 0
    reactor.advance(1)
    second = slave.received()
    assert second[0][0] == sum(len(b) for _, b in first)
    assert slave.conn.replica.flow.speed(ha.now()) == sent


def test_a_reconnected_slave_retires_the_stale_connection():
    ha, reactor, store = make_service()
    store.append(data(100))
    old = Slave(ha, port=40000)
    old.report(100)
    reactor.advance(11)          # the slave vanished without a FIN
    new = Slave(ha, port=40001)
    new.report(100)
    assert old.closed and list(ha.table.replicas) == [new.conn]


# ---------------------------------------------------------------- SYNC_MASTER waits


def test_no_slave_means_slave_not_available_at_once():
    ha, _, store = make_service()
    assert results(ha, 100) == [PutMessageStatus.SLAVE_NOT_AVAILABLE]
    Slave(ha)                    # connected but never reported
    assert results(ha, 100) == [PutMessageStatus.SLAVE_NOT_AVAILABLE]


def test_a_slave_too_far_behind_means_slave_not_available():
    ha, _, store = make_service(haSlaveFallbehindMax=500)
    store.append(data(1000))
    Slave(ha).report(400)
    assert results(ha, 899) == []
    assert results(ha, 900) == [PutMessageStatus.SLAVE_NOT_AVAILABLE]


def test_an_ack_reaching_the_offset_answers_put_ok():
    ha, _, store = make_service()
    slave = Slave(ha)
    slave.report(0)
    store.append(data(300))
    first, second = results(ha, 100), results(ha, 300)
    slave.report(200)
    assert (first, second) == ([PutMessageStatus.PUT_OK], [])
    slave.report(300)
    assert second == [PutMessageStatus.PUT_OK]


def test_the_answers_one_ack_releases_leave_their_connection_in_one_send():
    """Together (``gathered_writes``): they are ready at the same moment."""
    from rmqproto.codec.frame import FrameDecoder, RemotingCommand, decode_frame, encode_frame
    from rmqproto.remoting import RequestDispatcher
    from rmqproto.remoting.protocol import RemotingProtocol

    class Recording(StringTransport):
        def write(self, data):
            self.writes.append(data)
            super().write(data)

    ha, reactor, store = make_service()
    slave = Slave(ha)
    slave.report(0)
    store.append(data(400))
    dispatcher = RequestDispatcher()

    def process(request, context):
        def answer(status, _):
            dispatcher.write_answer(request, context.write,
                                    lambda: request.response(0, remark=status.name))
        ha.wait_for_replica(int(request.body), answer, None)

    dispatcher.register(10, process)
    client, transport = RemotingProtocol(dispatcher, reactor), Recording()
    transport.writes = []
    client.makeConnection(transport)
    client.dataReceived(b"".join(encode_frame(RemotingCommand(10, opaque=n, body=b"%d" % (n * 100)))
                                 for n in (1, 2, 3, 4)))
    slave.report(300)
    assert len(transport.writes) == 1
    answers = [decode_frame(f) for f in FrameDecoder().feed(transport.value())]
    assert [(a.opaque, a.remark) for a in answers] == [(n, "PUT_OK") for n in (1, 2, 3)]


def test_a_wait_whose_answer_raises_leaves_the_others_answered():
    ha, _, store = make_service()
    slave = Slave(ha)
    slave.report(0)
    store.append(data(300))

    def broken(status, token):
        raise RuntimeError("a broken answer")

    assert ha.wait_for_replica(100, broken, None) is None
    second = results(ha, 200)
    with capturedLogs() as events:
        slave.report(300)
    assert second == [PutMessageStatus.PUT_OK] and len(ha.waits) == 0
    assert [e["log_failure"].type for e in events if "log_failure" in e] == [RuntimeError]


def test_the_deadline_answers_flush_slave_timeout_after_slaveTimeout():
    ha, reactor, store = make_service(slaveTimeout=3000)
    slave = Slave(ha)
    slave.report(0)
    store.append(data(300))
    first = results(ha, 100)
    reactor.advance(1.5)
    slave.report(0)              # acks that do not reach the offset do not decide anything
    second = results(ha, 300)
    reactor.advance(1.499)
    assert first == [] and second == []
    reactor.advance(0.001)
    assert first == [PutMessageStatus.FLUSH_SLAVE_TIMEOUT] and second == []
    reactor.advance(1.5)
    assert second == [PutMessageStatus.FLUSH_SLAVE_TIMEOUT]
    assert len(ha.waits) == 0


def test_thousands_of_waits_one_timer_one_ack():
    ha, reactor, store = make_service()
    slave = Slave(ha)
    slave.report(0)
    store.append(data(5000))
    answers = [results(ha, offset) for offset in range(1, 5001)]
    assert len([c for c in reactor.getDelayedCalls() if c.func == ha._expire]) == 1
    slave.report(2500)
    assert all(a == [PutMessageStatus.PUT_OK] for a in answers[:2500])
    assert all(a == [] for a in answers[2500:])
    reactor.advance(3)
    assert all(a == [PutMessageStatus.FLUSH_SLAVE_TIMEOUT] for a in answers[2500:])


def test_stopping_answers_the_waits_and_closes_the_connections():
    ha, _, store = make_service()
    slave = Slave(ha)
    slave.report(0)
    store.append(data(10))
    waiting = results(ha, 10)
    ha.stopService()
    assert waiting == [PutMessageStatus.FLUSH_SLAVE_TIMEOUT]
    assert slave.closed and len(ha.table) == 0


# ---------------------------------------------------------------- observability


def test_runtime_info_shows_each_slave_ack_and_lag():
    ha, _, store = make_service()
    store.append(data(1000))
    Slave(ha, host="10.0.0.7", port=5000).report(600)
    info = ha.runtime_info()
    assert info["slaveAckOffset_10.0.0.7:5000"] == "600"
    assert info["diff_10.0.0.7:5000"] == "400"
    assert info["inSyncSlaveNums"] == "1"


def test_ha_runtime_info_is_the_tables_at_the_commit_logs_end():
    ha, _, store = make_service()
    store.append(data(1000))
    Slave(ha, host="10.0.0.7", port=5000).report(600)
    info = ha.ha_runtime_info()
    assert (info.master_commit_log_max_offset, info.in_sync_slave_nums) == (1000, 1)
    [connection] = info.ha_connection_info
    assert (connection.addr, connection.slave_ack_offset, connection.diff) == ("10.0.0.7:5000", 600, 400)


def test_the_diff_is_logged_every_minute(capsys):
    from twisted.logger import globalLogPublisher

    events = []
    globalLogPublisher.addObserver(events.append)
    try:
        ha, reactor, store = make_service()
        store.append(data(1000))
        slave = Slave(ha)
        slave.report(100)  # sent 100..1000
        slave.report(600)  # acks 600
        reactor.advance(10)
        reactor.advance(60)
    finally:
        globalLogPublisher.removeObserver(events.append)
    diffs = [e for e in events if e.get("log_format", "").startswith("Slave fall behind")]
    assert [e["diff"] for e in diffs] == [400, 400]
