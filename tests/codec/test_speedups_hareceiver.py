"""``HAReceiver``, the C receive loop of an HA slave (``rmqproto/codec/speedups/hareceiver.c``),
on a socket pair with this test as the master: bodies land in the segment at exactly the
offsets named, reports follow every read that grew the end, and every case that is not the
plain one hands the bytes back from its header on, however the stream is split."""

import os
import select
import socket
import struct
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from rmqproto.codec.ha import TransferReader, encode_transfer

from support.recordstream import records
from support.speedups import require_speedups

speedups = require_speedups()

SEGMENT_FROM = 4096
SEGMENT_SIZE = 4096


class Loop:
    """A receiver on one end of a socket pair, run in a thread; ``master`` is the other end."""

    def __init__(self, end=SEGMENT_FROM, reported=None, heartbeat_ms=60_000, segment=None,
                 **stands):
        self.master, slave = socket.socketpair()
        slave.setblocking(False)  # as the reactor leaves it
        self.segment = bytearray(SEGMENT_SIZE) if segment is None else segment
        self.receiver = speedups.HAReceiver(
            fd=slave.fileno(), segment=self.segment, segment_from=SEGMENT_FROM, end=end,
            reported=end if reported is None else reported, heartbeat_ms=heartbeat_ms,
            **stands)
        slave.close()  # the receiver holds a duplicate
        self.answer = None
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def _run(self):
        self.answer = self.receiver.run()

    def send_read_by_read(self, pieces):
        """Send each piece once the loop has read the one before: one piece a read."""
        for piece in pieces:
            before = self.receiver.progress()[1]
            self.master.sendall(piece)
            wait_for(lambda: self.receiver.progress()[1] >= before + len(piece)
                     or not self.thread.is_alive())

    def reports(self):
        """The offsets reported so far (8 bytes each)."""
        self.master.setblocking(False)
        data = b""
        try:
            while True:
                chunk = self.master.recv(65536)
                if not chunk:
                    break
                data += chunk
        except BlockingIOError:
            pass
        self.master.setblocking(True)
        assert len(data) % 8 == 0
        return [struct.unpack(">q", data[i:i + 8])[0] for i in range(0, len(data), 8)]

    def halt(self):
        """Stop the loop (if it still runs) and wait for its thread: every figure
        ``progress`` gives is final then."""
        self.receiver.stop()
        self.thread.join(10)
        assert not self.thread.is_alive()

    def finish(self):
        """Stop the loop (if it still runs); its answer."""
        self.halt()
        self.receiver.close()
        self.master.close()
        return self.answer


def wait_for(condition, timeout=10):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.0005)


def split(data, cuts):
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:]) if b > a]


def transfers(start, bodies):
    out, offset = b"", start
    for body in bodies:
        out += encode_transfer(offset, body)
        offset += len(body)
    return out, offset


bodies_strategy = st.lists(st.binary(min_size=0, max_size=300), min_size=1, max_size=8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies=bodies_strategy, cuts=st.lists(st.integers(0, 3000), max_size=12))
def test_bodies_land_at_their_offsets_however_split(bodies, cuts):
    stream, end = transfers(SEGMENT_FROM, bodies)
    loop = Loop()
    loop.send_read_by_read(split(stream, cuts))
    # the loop publishes the end before it reports it, and the reported offset before the
    # report count: wait for the report, then let the loop end before reading the figures
    wait_for(lambda: loop.receiver.progress()[0] == end
             and (end == SEGMENT_FROM or loop.receiver.progress()[2] == end))
    loop.halt()
    progress = loop.receiver.progress()
    reports = loop.reports()
    assert loop.finish() == ("stopped", b"", 0)
    assert bytes(loop.segment[:end - SEGMENT_FROM]) == b"".join(bodies)
    assert not any(loop.segment[end - SEGMENT_FROM:])
    assert progress[1] == len(stream)
    if end > SEGMENT_FROM:
        assert reports[-1] == end and progress[2:] == (end, len(reports))
        assert reports == sorted(set(reports))  # one report per read that grew the end
    else:
        assert reports == [] and progress[2:] == (SEGMENT_FROM, 0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies=bodies_strategy, cuts=st.lists(st.integers(0, 3000), max_size=12),
       bad=st.sampled_from(["offset behind", "offset ahead", "too large", "negative size"]),
       tail=st.binary(max_size=40))
def test_a_transfer_that_is_not_the_plain_case_is_handed_back_from_its_header(
        bodies, cuts, bad, tail):
    good, end = transfers(SEGMENT_FROM, bodies)
    header = {
        "offset behind": struct.pack(">qi", end - 1, 1),
        "offset ahead": struct.pack(">qi", end + 1, 1),
        "too large": struct.pack(">qi", end, SEGMENT_FROM + SEGMENT_SIZE - end + 1),
        "negative size": struct.pack(">qi", end, -1),
    }[bad]
    stream = good + header + tail
    loop = Loop()
    loop.send_read_by_read(split(stream, cuts))
    loop.thread.join(10)
    outcome, leftover, error = loop.answer
    assert (outcome, error) == ("handed back", 0)
    # the bytes from the header on that reached the loop by its last read
    assert stream[len(good):].startswith(leftover) and leftover.startswith(header)
    assert loop.receiver.progress()[0] == end
    assert bytes(loop.segment[:end - SEGMENT_FROM]) == b"".join(bodies)
    loop.finish()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies=bodies_strategy, at=st.integers(0, 3000), cuts=st.lists(st.integers(0, 3000),
                                                                     max_size=6))
def test_the_loop_takes_the_stream_over_where_python_left_it(bodies, at, cuts):
    stream, end = transfers(SEGMENT_FROM, bodies)
    at %= len(stream) + 1
    segment, reader = bytearray(SEGMENT_SIZE), TransferReader()
    written = SEGMENT_FROM
    for piece in reader.feed(stream[:at]):
        segment[piece.offset - SEGMENT_FROM:piece.offset - SEGMENT_FROM + len(piece.data)] = \
            piece.data
        written = piece.offset + len(piece.data)
    header, _, remaining = reader.pending()
    loop = Loop(end=written, segment=segment, header=header, body_remaining=remaining)
    loop.send_read_by_read(split(stream[at:], cuts))
    wait_for(lambda: loop.receiver.progress()[0] == end)
    assert loop.finish() == ("stopped", b"", 0)
    assert bytes(loop.segment[:end - SEGMENT_FROM]) == b"".join(bodies)


def test_a_header_begun_before_the_loop_is_handed_back_whole():
    header = encode_transfer(SEGMENT_FROM + 1, b"x")[:12]  # not at the end
    loop = Loop(header=header[:5])
    loop.send_read_by_read([header[5:] + b"x" + b"more"])
    loop.thread.join(10)
    assert loop.answer == ("handed back", header + b"x" + b"more", 0)
    loop.finish()


def test_a_body_that_fills_the_segment_exactly_is_taken():
    body = b"x" * (SEGMENT_SIZE - 100)
    loop = Loop(end=SEGMENT_FROM + 100)
    loop.master.sendall(encode_transfer(SEGMENT_FROM + 100, body))
    wait_for(lambda: loop.receiver.progress()[0] == SEGMENT_FROM + SEGMENT_SIZE)
    assert loop.finish()[0] == "stopped"
    assert loop.segment[100:] == body


def test_heartbeat_reports_when_nothing_grows():
    loop = Loop(end=SEGMENT_FROM + 10, reported=SEGMENT_FROM, heartbeat_ms=20)
    wait_for(lambda: loop.receiver.progress()[3] >= 3)
    assert set(loop.reports()) == {SEGMENT_FROM + 10}
    loop.finish()


def test_a_master_closing_ends_the_loop():
    loop = Loop()
    loop.master.sendall(encode_transfer(SEGMENT_FROM, b"abc"))
    loop.master.shutdown(socket.SHUT_WR)
    loop.thread.join(10)
    assert loop.answer == ("closed", b"", 0)
    assert loop.receiver.progress()[0] == SEGMENT_FROM + 3
    loop.finish()


def test_wake_fd_gets_a_byte_after_a_read_once_armed():
    loop = Loop()
    wake = loop.receiver.wake_fd
    loop.send_read_by_read([encode_transfer(SEGMENT_FROM, b"a")])
    with pytest.raises(BlockingIOError):
        os.read(wake, 1)  # not armed: no byte
    loop.receiver.arm()
    loop.send_read_by_read([encode_transfer(SEGMENT_FROM + 1, b"b")])
    wait_for(lambda: _readable(wake))
    loop.receiver.drain()
    assert not _readable(wake)
    loop.send_read_by_read([encode_transfer(SEGMENT_FROM + 2, b"c")])
    assert not _readable(wake)  # once per arm
    loop.finish()


def _readable(fd):
    return bool(select.select([fd], [], [], 0)[0])


def test_close_waits_for_run_and_stop_before_run_returns_at_once():
    loop = Loop()
    with pytest.raises(RuntimeError):
        loop.receiver.close()
    assert loop.finish() == ("stopped", b"", 0)
    with pytest.raises(RuntimeError):
        loop.receiver.run()  # once only
    assert loop.receiver.wake_fd == -1


def test_arguments_are_checked():
    a, b = socket.socketpair()
    with a, b:
        with pytest.raises(ValueError):
            speedups.HAReceiver(fd=a.fileno(), segment=bytearray(10), segment_from=0, end=11,
                                reported=0, heartbeat_ms=10)
        for wrong in [dict(heartbeat_ms=0), dict(header=b"h" * 12),
                      dict(header=b"h", body_remaining=1), dict(body_remaining=11),
                      dict(body_remaining=-1)]:
            with pytest.raises(ValueError):
                speedups.HAReceiver(**dict(dict(fd=a.fileno(), segment=bytearray(10),
                                                segment_from=0, end=0, reported=0,
                                                heartbeat_ms=10), **wrong))
        with pytest.raises(BufferError):
            speedups.HAReceiver(fd=a.fileno(), segment=b"read only", segment_from=0, end=0,
                                reported=0, heartbeat_ms=10)
        with pytest.raises(OSError):
            speedups.HAReceiver(fd=-1, segment=bytearray(10), segment_from=0, end=0,
                                reported=0, heartbeat_ms=10)
        receiver = speedups.HAReceiver(fd=a.fileno(), segment=bytearray(10), segment_from=0,
                                       end=0, reported=0, heartbeat_ms=10)
        with pytest.raises(RuntimeError):
            receiver.__init__(fd=a.fileno(), segment=bytearray(10), segment_from=0, end=0,
                              reported=0, heartbeat_ms=10)
        receiver.stop()
        assert receiver.run() == ("stopped", b"", 0)
        receiver.close()


# ---------------------------------------------------------------- records checked first

def test_with_checked_only_whole_good_records_are_reported_and_published():
    good = records(5, 100, offset=SEGMENT_FROM)
    size = len(good) // 5
    stream = encode_transfer(SEGMENT_FROM, good)
    loop = Loop(checked=SEGMENT_FROM, check_crc=True)
    loop.send_read_by_read(split(stream, [12 + size + 7, 12 + 3 * size + 1]))
    end = SEGMENT_FROM + len(good)
    wait_for(lambda: loop.receiver.progress()[2] == end)
    reports = loop.reports()
    assert loop.finish() == ("stopped", b"", 0)
    assert all((r - SEGMENT_FROM) % size == 0 for r in reports) and reports[-1] == end


def test_a_bad_record_ends_the_loop_zeroed_and_unpublished():
    good = records(3, 100, offset=SEGMENT_FROM)
    bad = bytearray(records(1, 100, offset=SEGMENT_FROM + len(good)))
    bad[100] ^= 1  # a body byte: BODYCRC no longer matches
    stream = encode_transfer(SEGMENT_FROM, good + bytes(bad))
    loop = Loop(checked=SEGMENT_FROM, check_crc=True)
    loop.master.sendall(stream)
    loop.thread.join(10)
    end = SEGMENT_FROM + len(good)
    assert loop.answer == ("bad record", b"", 0)
    assert loop.receiver.refusal == (end, "BODYCRC does not match the body")
    assert loop.receiver.progress()[0] == end
    assert bytes(loop.segment[:len(good)]) == good and not any(loop.segment[len(good):])
    assert all(r <= end for r in loop.reports())
    loop.receiver.close()
    loop.master.close()


def test_checked_must_lie_in_the_segment_up_to_end():
    import socket as socket_module
    a, b = socket_module.socketpair()
    try:
        with pytest.raises(ValueError):
            speedups.HAReceiver(fd=a.fileno(), segment=bytearray(10), segment_from=0, end=5,
                                reported=0, heartbeat_ms=10, checked=6)
    finally:
        a.close()
        b.close()
