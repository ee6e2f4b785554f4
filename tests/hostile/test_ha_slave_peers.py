"""Hostile masters against our slave (issue 43, failures 4 and 5): bytes that are not records,
records whose lengths or BODYCRC do not hold, pushed at exactly the slave's offset. The
slave checks before it acknowledges, cuts the commit log back to the last good record
(zeroing what it wrote after it), logs why, reconnects, and its consume queues keep
up with the good records; and a header ahead that would have re-seeded (erased) the
store. Real TCP on a real reactor, with and without the receive thread."""

import os
import random

import pytest
from twisted.logger import LogLevel, capturedLogs

from rmqproto.codec.ha import encode_transfer

from support.recordstream import record, records
from support.scriptedmaster import MODES, SEGMENT, until, with_slave

GOOD = records(20)
TOPIC = "TopicTest"


def crc_broken():
    one = bytearray(record(b"0123456789" * 10, queue_offset=20))
    one[100] ^= 0xFF  # a body byte: lengths hold, BODYCRC does not
    return bytes(one)


def framing_broken():
    one = bytearray(record(b"0123456789" * 10, queue_offset=20))
    one[87] += 1  # the body length: TOTALSIZE no longer matches the fields
    return bytes(one)


GARBAGE = {
    "random bytes": random.Random(43).randbytes(3000),
    "BODYCRC": crc_broken(),
    "framing": framing_broken(),
}


def errors(events):
    return [e for e in events if e["log_level"] >= LogLevel.error
            and "refused the record" in e.get("reason", "")]


@pytest.mark.parametrize("receive_thread", MODES)
@pytest.mark.parametrize("kind", sorted(GARBAGE))
def test_garbage_at_the_right_offset_is_cut_not_acknowledged(tmp_path, receive_thread, kind):
    bad = GARBAGE[kind]
    good_end = len(GOOD)

    def steps(reactor, slave):
        master = yield slave.connect()
        master.transport.write(encode_transfer(0, GOOD))
        yield until(reactor, lambda: master.reports[-1] == good_end)
        with capturedLogs() as events:
            # the bad record's first bytes in one read, the rest in another
            master.transport.write(encode_transfer(good_end, bad[:50]))
            yield until(reactor, lambda: slave.store.get_max_phy_offset() > good_end
                        or master.closed)
            master.transport.write(encode_transfer(good_end + 50, bad[50:]))
            yield until(reactor, lambda: master.closed)
        assert max(master.reports) == good_end  # never acknowledged
        [line] = errors(events)
        assert "refused the record at %d" % good_end in line["reason"]
        assert slave.store.get_max_phy_offset() == good_end
        segment = slave.store.commit_log.queue.files[0]
        assert bytes(segment.mm[good_end:good_end + len(bad)]) == bytes(len(bad))  # zeroed
        # it comes back at the last good record, and takes the true record from there
        yield until(reactor, lambda: len(slave.factory.connections) == 2
                    and slave.factory.connections[1].reports)
        again = slave.factory.connections[1]
        assert again.reports == [good_end]
        true_record = record(b"the real one", queue_offset=20, commit_log_offset=good_end)
        again.transport.write(encode_transfer(good_end, true_record))
        yield until(reactor, lambda: again.reports[-1] == good_end + len(true_record))
        yield until(reactor, lambda: slave.store.get_max_offset_in_queue(TOPIC, 0) == 21)

    with_slave(tmp_path, receive_thread, steps)


@pytest.mark.parametrize("receive_thread", MODES)
def test_records_split_anywhere_are_acknowledged_once_whole(tmp_path, receive_thread):
    rng = random.Random(4)
    size = len(record(b"\0" * 100))

    def steps(reactor, slave):
        master = yield slave.connect()
        at = 0
        while at < len(GOOD):
            n = min(rng.choice([1, 13, 90, 250, 700]), len(GOOD) - at)
            master.transport.write(encode_transfer(at, GOOD[at:at + n]))
            at += n
            yield until(reactor, lambda: slave.store.get_max_phy_offset() == at)
        yield until(reactor, lambda: master.reports[-1] == len(GOOD))
        assert all(r % size == 0 for r in master.reports)  # only ever whole records
        assert not master.closed

    with_slave(tmp_path, receive_thread, steps)


# ---------------------------------------------------------------- failure 5


def test_one_header_ahead_does_not_erase_the_store(tmp_path):
    """A transfer header at a segment start far ahead, from a master this slave found
    through its NameServer (not ``haMasterAddress``): the store stays as it is."""
    def steps(reactor, slave):
        master = yield slave.connect()
        master.transport.write(encode_transfer(0, GOOD))
        yield until(reactor, lambda: master.reports[-1] == len(GOOD))
        root = slave.store.paths["root"]
        before = sorted(os.listdir(root)), sorted(os.listdir(slave.store.paths["commitlog"]))
        with capturedLogs() as events:
            master.transport.write(encode_transfer(10 * SEGMENT, record()))
            yield until(reactor, lambda: master.closed)
        assert (sorted(os.listdir(root)), sorted(os.listdir(slave.store.paths["commitlog"]))) \
            == before
        assert slave.store.get_max_phy_offset() == len(GOOD)
        assert slave.store.get_min_phy_offset() == 0
        [line] = [e for e in events if "only the master named by haMasterAddress"
                  in e.get("reason", "")]
        assert line["log_level"] == LogLevel.error
        yield until(reactor, lambda: len(slave.factory.connections) == 2
                    and slave.factory.connections[1].reports)
        assert slave.factory.connections[1].reports == [len(GOOD)]

    with_slave(tmp_path, True, steps)
