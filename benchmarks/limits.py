"""What this machine allows replication at most, for reference beside the HA benchmark:

- **loopback**: one TCP connection on 127.0.0.1 between two processes, a sender writing the
  same buffer over and over (``sendall``) and a receiver reading into one buffer
  (``recv_into``) and dropping it: no parsing, no copies beyond the kernel's. Sender and
  receiver are pinned to CPUs 0 and 1 when ``pinned`` (where master and slave go);
- **file**: sequential writes of ``total`` bytes into a new file in ``directory``, once with
  ``write`` and once through ``mmap`` (what a commit log does), each timed into the page
  cache and then until ``fsync`` / ``msync`` returns (on the disk).

    python benchmarks/limits.py [--megabytes 512] [--directory /tmp]
"""

import argparse
import mmap
import multiprocessing
import os
import socket
import tempfile
import time

__all__ = ["loopback_mb_s", "file_write_mb_s", "MB"]

MB = 1024 * 1024
FILE_CHUNK = MB


def _pin(cpu):
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})


def _receive(listener, total, cpu, results):
    _pin(cpu)
    connection, _ = listener.accept()
    view = memoryview(bytearray(MB))
    received, started = 0, None
    while received < total:
        n = connection.recv_into(view)
        if not n:
            break
        if started is None:
            started = time.perf_counter()
        received += n
    results.send((received, time.perf_counter() - started))
    connection.close()


def _send(port, total, chunk, cpu):
    _pin(cpu)
    data = memoryview(b"x" * chunk)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        for _ in range(-(-total // chunk)):
            sock.sendall(data)


def loopback_mb_s(total, chunk, pinned=True):
    """MB/s of ``total`` bytes sent in ``chunk``-byte writes over loopback TCP."""
    context = multiprocessing.get_context("fork")
    ours, theirs = context.Pipe(duplex=False)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        receiver = context.Process(target=_receive,
                                   args=(listener, total, 1 if pinned else None, theirs))
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


def _timed_mmap(path, total):
    data = b"x" * FILE_CHUNK
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.ftruncate(fd, total)
        with mmap.mmap(fd, total) as mm:
            started = time.perf_counter()
            for position in range(0, total - FILE_CHUNK + 1, FILE_CHUNK):
                mm[position:position + FILE_CHUNK] = data
            cached = time.perf_counter()
            mm.flush()
            synced = time.perf_counter()
    finally:
        os.close(fd)
    return cached - started, synced - started


def file_write_mb_s(directory, total):
    """``{"write": (cached, on disk), "mmap": (cached, on disk)}`` in MB/s: ``total`` bytes
    written into a new file under ``directory`` (removed afterwards)."""
    figures = {}
    for name, timed in (("write", _timed_write), ("mmap", _timed_mmap)):
        fd, path = tempfile.mkstemp(prefix="limits-", dir=directory)
        os.close(fd)
        try:
            cached, synced = timed(path, total)
        finally:
            os.unlink(path)
        figures[name] = (total / MB / cached, total / MB / synced)
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--megabytes", type=int, default=512)
    parser.add_argument("--directory", default=tempfile.gettempdir())
    parser.add_argument("--no-pin", action="store_true")
    args = parser.parse_args(argv)
    pinned = not args.no_pin and len(os.sched_getaffinity(0)) >= 2
    total = args.megabytes * MB
    for chunk in (32 * 1024, MB):
        print("loopback TCP, %d KiB writes: %.0f MB/s" % (chunk // 1024,
                                                          loopback_mb_s(total, chunk, pinned)))
    for name, (cached, synced) in file_write_mb_s(args.directory, total).items():
        print("file %s: %.0f MB/s into the page cache, %.0f MB/s until on disk"
              % (name, cached, synced))


if __name__ == "__main__":
    main()
