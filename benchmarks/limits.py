"""What this machine allows at most, for reference beside the HA and broker benchmarks:

- **loopback**: one TCP connection on 127.0.0.1 between two processes, a sender writing the
  same buffer over and over (``sendall``) and a receiver reading into one buffer
  (``recv_into``) and dropping it: no parsing, no copies beyond the kernel's. Sender and
  receiver are pinned to CPUs 0 and 1 when ``pinned`` (where master and slave go);
- **file**: sequential writes of ``total`` bytes into a new file in ``directory``, once with
  ``write`` and once through ``mmap`` (what a commit log does), each timed into the page
  cache and then until ``fsync`` / ``msync`` returns (on the disk);
- **page reuse**: ``total`` bytes through ``mmap`` into a new file twice, first with the
  pages the kernel hands out (on a virtual machine often guest memory not touched since
  boot, whose first touch faults in the host too), then into another new file right after
  the first is deleted (the pages it freed come back); into the page cache, no sync;
- **cold first touch**: ``total`` bytes through ``mmap`` into a new file after
  ``COLD_IDLE_SECONDS`` of nothing, into the page cache: on a virtual machine whose balloon
  reports free pages to the host, memory freed and left idle that long faults in the host
  again on its first touch, and that is the memory a slave's new segment usually gets;
- **slave floor**: the loopback test in the HA transfer size with the receiver copying what
  it reads into a new file through ``mmap``, after the same idle: what a catch-up slave on
  one core cannot do faster, before it parses or dispatches a record (reading straight into
  the mapping was slower on this guest);
- **remoting floor**: what a request costs a Twisted server before any broker work. A
  server process (pinned to CPU 0, where the brokers go) runs either Twisted with our
  ``FrameDecoder`` only (``twisted``: frames split, each answered with one fixed frame) or
  our remoting layer (``remoting``: ``RemotingFactory``, ``decode_frame``, the dispatcher and
  an answer shaped as the send processor's, from a ``JsonResponseTemplate``; no store). A
  blocking socket client (CPU 1; ``rawclient.Pipeline``, as ``broker_bench.py``'s raw
  generator) keeps 1, 8 or 32 SEND_MESSAGE_V2 requests of 128 B, built as ``loadclient.py``
  builds them, in flight over one connection; the figures are the server's CPU per request
  (``/proc``, kernel included), the rate and both sides' cores.

    python benchmarks/limits.py [--megabytes 512] [--directory /tmp] [--seconds 3] [--idle 10]
"""

import argparse
import contextlib
import mmap
import multiprocessing
import os
import socket
import tempfile
import time

from harness import process_cpu_seconds

__all__ = ["loopback_mb_s", "file_write_mb_s", "mmap_reuse_mb_s", "mmap_cold_mb_s",
           "slave_floor_mb_s", "remoting_floor", "COLD_IDLE_SECONDS", "MB"]

MB = 1024 * 1024
FILE_CHUNK = MB


def _pin(cpu):
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})


@contextlib.contextmanager
def _segment_writer(directory, total):
    """``keep(position, data)``: what the receiver does with the bytes it read. Without
    ``directory`` nothing; with it they are copied into a new sparse file of ``total`` bytes
    under ``directory`` through ``mmap``, front to back, as a slave's receive thread copies
    transfers into its segment (reading straight into the mapping was slower: the first
    touch of each page then faults inside the socket's copy)."""
    if directory is None:
        yield lambda position, data: None
        return
    with _new_file(directory) as path, _mapped(path, total) as mm:
        def keep(position, data):
            mm[position:position + len(data)] = data

        yield keep


def _receive(listener, total, cpu, results, directory):
    _pin(cpu)
    connection, _ = listener.accept()
    received, started = 0, None
    buffer = memoryview(bytearray(MB))
    with _segment_writer(directory, total) as keep:
        while received < total:
            n = connection.recv_into(buffer)
            if not n:
                break
            if started is None:
                started = time.perf_counter()
            keep(received, buffer[:min(n, total - received)])
            received += n
    results.send((received, time.perf_counter() - started))
    connection.close()


def _send(port, total, chunk, cpu):
    _pin(cpu)
    data = memoryview(b"x" * chunk)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        for _ in range(-(-total // chunk)):
            sock.sendall(data)


def loopback_mb_s(total, chunk, pinned=True, directory=None):
    """MB/s of ``total`` bytes sent in ``chunk``-byte writes over loopback TCP; with
    ``directory`` copied into a new file there through ``mmap`` as they are read (removed
    afterwards)."""
    context = multiprocessing.get_context("fork")
    ours, theirs = context.Pipe(duplex=False)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        receiver = context.Process(target=_receive,
                                   args=(listener, total, 1 if pinned else None, theirs,
                                         directory))
        sender = context.Process(target=_send, args=(listener.getsockname()[1], total, chunk,
                                                     0 if pinned else None))
        receiver.start()
        sender.start()
        try:
            if not ours.poll(120):
                raise TimeoutError("loopback copy of %d bytes took over 120 s" % total)
            received, seconds = ours.recv()
        finally:
            for process in (sender, receiver):
                process.join(10)
                if process.is_alive():
                    process.kill()
                    process.join()
    if received < total:
        raise RuntimeError("loopback copy ended after %d of %d bytes" % (received, total))
    return received / MB / seconds


def _timed_write(path, total):
    data = b"x" * FILE_CHUNK
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        started = time.perf_counter()
        for _ in range(total // FILE_CHUNK):
            os.write(fd, data)
        cached = time.perf_counter()
        os.fsync(fd)
        synced = time.perf_counter()
    finally:
        os.close(fd)
    return cached - started, synced - started


@contextlib.contextmanager
def _mapped(path, total):
    """``path`` emptied and made a sparse file of ``total`` bytes, mapped (as a segment)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.ftruncate(fd, total)
        with mmap.mmap(fd, total) as mm:
            yield mm
    finally:
        os.close(fd)


def _timed_mmap(path, total):
    data = b"x" * FILE_CHUNK
    with _mapped(path, total) as mm:
        started = time.perf_counter()
        for position in range(0, total - FILE_CHUNK + 1, FILE_CHUNK):
            mm[position:position + FILE_CHUNK] = data
        cached = time.perf_counter()
        mm.flush()
        synced = time.perf_counter()
    return cached - started, synced - started


@contextlib.contextmanager
def _new_file(directory):
    """The path of a new empty file under ``directory``, removed afterwards."""
    fd, path = tempfile.mkstemp(prefix="limits-", dir=directory)
    os.close(fd)
    try:
        yield path
    finally:
        os.unlink(path)


def _in_new_file(directory, timed, total):
    """``timed(path, total)`` on a new file under ``directory``, removed afterwards."""
    with _new_file(directory) as path:
        return timed(path, total)


def file_write_mb_s(directory, total):
    """``{"write": (cached, on disk), "mmap": (cached, on disk)}`` in MB/s: ``total`` bytes
    written into a new file under ``directory`` (removed afterwards)."""
    figures = {}
    for name, timed in (("write", _timed_write), ("mmap", _timed_mmap)):
        cached, synced = _in_new_file(directory, timed, total)
        figures[name] = (total / MB / cached, total / MB / synced)
    return figures


def mmap_reuse_mb_s(directory, total):
    """``(as given, reused)`` in MB/s: ``total`` bytes through ``mmap`` into a new file under
    ``directory``, then into another right after the first is deleted."""
    given = _in_new_file(directory, _timed_mmap, total)[0]
    reused = _in_new_file(directory, _timed_mmap, total)[0]
    return total / MB / given, total / MB / reused


#: Seconds of nothing before the cold first touch: freed guest memory had gone back to the
#: host after 10 s in every try on the benchmark machine (docs/performance.md).
COLD_IDLE_SECONDS = 10


def mmap_cold_mb_s(directory, total, idle=COLD_IDLE_SECONDS):
    """MB/s of ``total`` bytes through ``mmap`` into a new file under ``directory``, into the
    page cache, after ``idle`` seconds of nothing (see the module's docstring)."""
    time.sleep(idle)
    return total / MB / _in_new_file(directory, _timed_mmap, total)[0]


#: What a slave's receive does at least: the HA transfer size over loopback.
SLAVE_CHUNK = 32 * 1024


def slave_floor_mb_s(directory, total, pinned=True, idle=COLD_IDLE_SECONDS):
    """MB/s of ``total`` bytes over loopback TCP in ``SLAVE_CHUNK`` writes, copied into a new
    file under ``directory`` through ``mmap`` as they are read, after ``idle`` seconds of
    nothing: the least a catch-up slave on one core does (no parsing, no dispatch)."""
    time.sleep(idle)
    return loopback_mb_s(total, SLAVE_CHUNK, pinned, directory)


#: What the remoting floor's server answers (``RemotingFactory`` or frame splitting only).
FLOOR_SERVERS = ("twisted", "remoting")


def _floor_answer():
    """A ``frame(code, opaque)`` writing an answer shaped as the send processor's (a message
    id, queue and offset, the region and trace fields), through a ``JsonResponseTemplate``
    as the broker writes it."""
    from rmqproto.codec.codes import CURRENT_VERSION
    from rmqproto.codec.frame import JsonResponseTemplate

    template = JsonResponseTemplate(
        {"msgId": "", "queueId": "", "queueOffset": "", "MSG_REGION": "DefaultRegion",
         "TRACE_ON": "true"}, ("msgId", "queueId", "queueOffset"), CURRENT_VERSION)
    msg_id = "7F00000100002A9F0000000000001234"
    return lambda code, opaque: template.frame(code, opaque, msg_id, 3, 1234)


def _floor_server(kind, listener, cpu, ready):
    """Serve ``listener``'s connections until killed (runs in its own process)."""
    _pin(cpu)
    from twisted.internet import reactor
    from twisted.internet.protocol import Factory, Protocol

    from rmqproto.codec.codes import RequestCode
    from rmqproto.codec.frame import FrameDecoder
    from rmqproto.remoting import RemotingFactory

    answer = _floor_answer()
    if kind == "twisted":
        class Splitter(Protocol):
            def connectionMade(self):
                self.decoder = FrameDecoder()

            def dataReceived(self, data):
                for _ in self.decoder.feed(data):
                    self.transport.write(answer(0, 0))

        factory = Factory.forProtocol(Splitter)
    else:
        factory = RemotingFactory(reactor=reactor)
        factory.dispatcher.register(RequestCode.SEND_MESSAGE_V2,
                                    lambda request, context: answer(0, request.opaque))
    reactor.adoptStreamPort(listener.fileno(), socket.AF_INET, factory)
    listener.close()
    ready.send(os.getpid())
    reactor.run()


def _drive(port, inflight, warmup, seconds, server_pid):
    """Keep ``inflight`` requests in flight; ``(requests/s, server CPU s, client CPU s,
    window s)``. Answers are only counted (the ``twisted`` server's carry no opaque)."""
    from loadclient import SendRequests
    from rawclient import Pipeline, connect, encoded_requests

    frames = encoded_requests(SendRequests("BenchFloor", 8, 128, 1))
    with connect("127.0.0.1:%d" % port, timeout=None) as sock:
        pipeline = Pipeline(sock, frames, inflight)
        pipeline.start()
        answered = 0
        started = time.perf_counter()
        window = None
        while True:
            done = len(pipeline.receive())
            if not done:
                continue
            pipeline.send(done)
            answered += done
            now = time.perf_counter()
            if window is None and now - started >= warmup:
                window = (now, answered, process_cpu_seconds(server_pid), time.process_time())
            elif window is not None and now - window[0] >= seconds:
                elapsed = now - window[0]
                return ((answered - window[1]) / elapsed,
                        process_cpu_seconds(server_pid) - window[2],
                        time.process_time() - window[3], elapsed)


def remoting_floor(kind, inflight, pinned=True, warmup=1.0, seconds=3.0):
    """``(requests/s, server µs of CPU per request, server cores, client cores)`` of the
    ``kind`` server (one of :data:`FLOOR_SERVERS`) under ``inflight`` requests in flight."""
    context = multiprocessing.get_context("fork")
    ours, theirs = context.Pipe(duplex=False)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        server = context.Process(target=_floor_server,
                                 args=(kind, listener, 0 if pinned else None, theirs))
        server.start()
    affinity = os.sched_getaffinity(0)
    try:
        if not ours.poll(30):
            raise TimeoutError("the remoting floor's server did not start in 30 s")
        pid = ours.recv()
        _pin(1 if pinned else None)
        rps, server_cpu, client_cpu, window = _drive(port, inflight, warmup, seconds, pid)
    finally:
        os.sched_setaffinity(0, affinity)
        server.kill()
        server.join()
    return rps, server_cpu / (rps * window) * 1e6, server_cpu / window, client_cpu / window


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--megabytes", type=int, default=512)
    parser.add_argument("--directory", default=tempfile.gettempdir())
    parser.add_argument("--no-pin", action="store_true")
    parser.add_argument("--seconds", type=float, default=3.0,
                        help="measured window of each remoting floor run")
    parser.add_argument("--idle", type=float, default=COLD_IDLE_SECONDS,
                        help="seconds of nothing before the cold first touch and the slave's "
                             "floor (default %(default)s)")
    args = parser.parse_args(argv)
    pinned = not args.no_pin and len(os.sched_getaffinity(0)) >= 2
    total = args.megabytes * MB
    for chunk in (32 * 1024, MB):
        print("loopback TCP, %d KiB writes: %.0f MB/s" % (chunk // 1024,
                                                          loopback_mb_s(total, chunk, pinned)))
    for name, (cached, synced) in file_write_mb_s(args.directory, total).items():
        print("file %s: %.0f MB/s into the page cache, %.0f MB/s until on disk"
              % (name, cached, synced))
    given, reused = mmap_reuse_mb_s(args.directory, total)
    print("file mmap into the page cache: %.0f MB/s with the pages handed out, %.0f MB/s with "
          "the pages an earlier file just freed" % (given, reused))
    print("file mmap into the page cache after %g s idle: %.0f MB/s"
          % (args.idle, mmap_cold_mb_s(args.directory, total, args.idle)))
    print("loopback TCP, %d KiB writes, copied into a new file through mmap after %g s "
          "idle: %.0f MB/s" % (SLAVE_CHUNK // 1024, args.idle,
                               slave_floor_mb_s(args.directory, total, pinned, args.idle)))
    for kind in FLOOR_SERVERS:
        for inflight in (1, 8, 32):
            rps, cpu_us, server, client = remoting_floor(kind, inflight, pinned,
                                                         seconds=args.seconds)
            print("remoting floor, %s, %d in flight: %.0f requests/s, %.1f µs of server CPU "
                  "a request (server %.2f cores, client %.2f)"
                  % (kind, inflight, rps, cpu_us, server, client))


if __name__ == "__main__":
    main()
