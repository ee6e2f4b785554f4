"""The slave's HA connection on a real reactor and real TCP, with and without the receive
thread (``rmqproto/ha/receiver.py``): a scripted master on the same reactor sends
transfers split anywhere across segments; the slave's log, its reports, the hand-back to
the Python client at segment starts and mismatches, reconnection, heartbeats and shutdown
are the same either way (the record checks are tested in tests/hostile)."""

import functools
import random

import pytest
from twisted.internet import defer, task

from rmqproto.codec.ha import encode_transfer

from support import scriptedmaster
from support.scriptedmaster import MODES, SEGMENT, until

#: The transfers here are zeros, not records: the slave's record checks are off.
with_slave = functools.partial(scriptedmaster.with_slave, check_records=False)


@defer.inlineCallbacks
def send_split(reactor, master, stream, rng):
    """Write ``stream`` in random pieces, a reactor turn or a millisecond apart."""
    at = 0
    while at < len(stream):
        size = rng.choice([1, 7, 12, 13, 500, 4000, 40_000])
        master.transport.write(stream[at:at + size])
        at += size
        yield task.deferLater(reactor, rng.choice([0, 0.001]), lambda: None)


def transfers(start, end, rng):
    """Transfers of zeros from ``start`` to ``end`` of random sizes, none across a segment
    end (as a master's never are)."""
    out, offset = [], start
    while offset < end:
        size = min(rng.randint(0, 6000), end - offset, SEGMENT - offset % SEGMENT)
        out.append(encode_transfer(offset, b"\0" * size))
        offset += size
    return b"".join(out)


@pytest.mark.parametrize("receive_thread", MODES)
def test_any_split_across_segments_gives_the_same_log_and_reports(tmp_path, receive_thread):
    rng = random.Random(7)
    end = 2 * SEGMENT + 12_345

    def steps(reactor, slave):
        master = yield slave.connect()
        assert master.reports == [0]
        yield send_split(reactor, master, transfers(0, end, rng), rng)
        yield until(reactor, lambda: master.reports[-1] == end)
        assert slave.store.get_max_phy_offset() == end
        assert master.reports == sorted(master.reports)
        assert [m.file_from_offset for m in slave.store.commit_log.queue.files] == [
            0, SEGMENT, 2 * SEGMENT]
        if receive_thread:  # one after the first append, one a segment start at least
            assert slave.threads >= 3
        info = slave.client.runtime_info()
        assert info["haClientMaxOffset"] == info["haClientReportedOffset"] == str(end)
        assert int(info["haClientTransferredBytes"]) > end

    with_slave(tmp_path, receive_thread, steps)


@pytest.mark.parametrize("receive_thread", MODES)
def test_a_mismatch_closes_and_the_slave_comes_back_at_its_end(tmp_path, receive_thread):
    def steps(reactor, slave):
        master = yield slave.replicating(1000)
        master.transport.write(encode_transfer(1000, b"\0" * 10)
                               + encode_transfer(999, b"\0" * 10))
        yield until(reactor, lambda: master.closed)
        assert slave.store.get_max_phy_offset() == 1010
        yield until(reactor, lambda: len(slave.factory.connections) == 2
                    and slave.factory.connections[1].reports)
        assert slave.factory.connections[1].reports == [1010]

    with_slave(tmp_path, receive_thread, steps)


@pytest.mark.parametrize("receive_thread", MODES)
def test_heartbeats_while_the_master_sends_nothing(tmp_path, receive_thread):
    def steps(reactor, slave):
        master = yield slave.replicating(100)
        yield until(reactor, lambda: len(master.reports) >= 5)
        assert set(master.reports[1:]) == {100}
        assert not master.closed

    with_slave(tmp_path, receive_thread, steps, heartbeat_ms=50)


def test_the_master_closing_is_seen_and_retried(tmp_path):
    def steps(reactor, slave):
        master = yield slave.replicating(100)
        master.transport.loseConnection()
        yield until(reactor, lambda: len(slave.factory.connections) == 2
                    and slave.factory.connections[1].reports)
        assert slave.factory.connections[1].reports == [100]
        assert slave.threads == 2

    with_slave(tmp_path, True, steps)
