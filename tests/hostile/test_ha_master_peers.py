"""Hostile peers on the master's HA port (issue 43, failures 1 and 3): forged
acknowledgements, negative and regressing reports, a client spamming reports. The
master's adapter on ``MemoryReactorClock`` and ``StringTransport`` connections; no sockets."""

from twisted.logger import LogLevel, capturedLogs

from rmqproto.store.results import PutMessageStatus

from support.fakehamaster import Slave, data, make_service, results


def warnings(events):
    return [e for e in events if e["log_level"] >= LogLevel.warn]


def test_a_first_report_is_no_acknowledgement():
    """A client claiming the master's max offset in its first report (nothing was sent to
    it) answers no SYNC_MASTER send."""
    ha, reactor, store = make_service(slaveTimeout=3000)
    store.append(data(900))
    forger = Slave(ha)
    forger.report(900)
    waiting = results(ha, 900)
    forger.report(900)  # again: still nothing was sent on this connection
    assert waiting == [] and ha.table.push2slave_max_offset == 0
    reactor.advance(3)
    assert waiting == [PutMessageStatus.FLUSH_SLAVE_TIMEOUT]


def test_an_ack_beyond_what_the_connection_was_sent_is_refused_and_closes_it():
    ha, reactor, store = make_service()
    store.append(data(500))
    forger = Slave(ha)
    forger.report(100)          # sent 100..500
    forger.conn.pauseProducing()
    store.append(data(500))     # 500..1000, not sent: the transport is paused
    reactor.advance(0)
    waiting = results(ha, 1000)
    with capturedLogs() as events:
        forger.report(800)
    assert forger.closed and forger.transport.disconnecting
    assert len(ha.table) == 0
    assert waiting == [] and ha.table.push2slave_max_offset == 0
    [line] = warnings(events)
    assert "forged" in line["why"] and "800" in line["why"] and "500" in line["why"]


def test_acks_of_bytes_sent_still_count():
    ha, _, store = make_service()
    store.append(data(500))
    slave = Slave(ha)
    slave.report(100)
    waiting = results(ha, 500)
    slave.report(500)
    assert waiting == [PutMessageStatus.PUT_OK] and not slave.closed


def test_a_negative_report_is_refused_and_closes_the_connection():
    ha, reactor, store = make_service()
    store.append(data(900))
    for before in ([], [100]):
        slave = Slave(ha)
        for offset in before:
            slave.report(offset)
        slave.transport.clear()
        with capturedLogs() as events:
            slave.report(-1)
            slave.report(-1)  # after the close: ignored
        reactor.advance(1)
        assert slave.closed and slave.transport.value() == b""
        [line] = warnings(events)
        assert "negative slave offset -1" in line["why"]


def test_a_regressing_report_is_taken_as_java_takes_it_and_warned_once_per_interval():
    ha, reactor, store = make_service()
    store.append(data(900))
    slave = Slave(ha)
    slave.report(100)   # sent 100..900
    slave.report(800)
    with capturedLogs() as events:
        for _ in range(1000):
            slave.report(300)
            slave.report(400)
    replica = slave.conn.replica
    # Java's HAConnection.ReadSocketService: the newest report is the ack offset, the
    # stream goes on where it is, push2SlaveMaxOffset keeps the largest ack
    assert (replica.slave_ack_offset, replica.transfer_from_where) == (400, 900)
    assert ha.table.push2slave_max_offset == 800 and not slave.closed
    [line] = warnings(events)
    assert (line["offset"], line["previous"], line["held_back"]) == (300, 800, 0)
    reactor.advance(10)
    with capturedLogs() as events:
        slave.report(200)
        slave.report(100)
    [line] = warnings(events)
    assert (line["offset"], line["previous"], line["held_back"]) == (200, 400, 999)


# ---------------------------------------------------------------- haSlaveAllowList


def test_peers_outside_the_allow_list_are_refused_with_one_line():
    ha, _, store = make_service(haSlaveAllowList="10.0.0.5, 192.168.0.0/16")
    store.append(data(900))
    with capturedLogs() as events:
        intruder = Slave(ha, host="10.0.0.6")
    assert intruder.conn is None and intruder.transport.disconnecting
    assert len(ha.table) == 0
    [line] = warnings(events)
    assert line["addr"] == "10.0.0.6:40000" and "haSlaveAllowList" in line["why"]
    for host in ("10.0.0.5", "192.168.7.9"):
        slave = Slave(ha, host=host)
        slave.report(100)
        assert slave.transport.value() and not slave.closed


def test_without_an_allow_list_anyone_may_connect_as_in_java():
    ha, _, store = make_service()
    store.append(data(900))
    slave = Slave(ha, host="203.0.113.9")
    slave.report(100)
    assert slave.transport.value()
