"""One HA slave driven by a scripted master (``docs/ha-slave.md``): what a replicated record costs
the slave, our ``twistd rmq-slave`` against an Apache RocketMQ 4.9.7 Java slave in the same
run, beside a floor.

``ha_bench.py`` measures whole pairs under a load generator, where the slave shares its CPU
with the generator and every figure moves with the master and the generator too. Here the
master is this script: a blocking socket (CPU 0) that accepts the slave's HA connection
(``haMasterAddress``), waits for its first report (offset 0) and then sends a prepared
commit log (``--records`` single 1 KiB sends, as ``loadclient.py`` makes them, stored by our
broker in one process) one record per transfer, keeping ``inflight`` records sent but not
yet acknowledged by a report. With one in flight this is the slave's part of a SYNC_MASTER
send from one thread (a record, then its ack); with 8, of several threads. The slave
(CPU 1, alone) appends, reports, and dispatches into consume queues and the index.

After a warm-up (the first fifth of the records), the rest is cut into ``--windows`` equal
windows; each gives the rate and the slave's CPU per record (``/proc``, user and kernel),
and the table shows the medians (and every window's CPU, to show the scatter).
The **floor** is a slave that does nothing but Twisted's part: a bare Twisted protocol that
answers every read with an 8-byte report of where the transfers it received end (their
headers read by our ``TransferReader``; no store).
The distance from the floor to our slave is our own Python work; the floor itself is what
any Twisted slave pays per read.

    python benchmarks/slave_bench.py [--records 200000] [--windows 8] [--inflight 1 8]
"""

import argparse
import bisect
import multiprocessing
import os
import shutil
import socket
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from broker_bench import BROKER_SETTINGS, start_twistd  # noqa: E402
from harness import exit_on_sigterm, format_table, log, machine, process_cpu_times  # noqa: E402
from namesrv_bench import pin  # noqa: E402
from sendpath import check, request_frames, run as run_sends, temporary_broker  # noqa: E402
from rmqproto.codec.ha import decode_slave_report, encode_transfer  # noqa: E402
from support.javapeers import JavaPeers, broker_port  # noqa: E402

__all__ = ["commit_log", "ScriptedMaster", "measure", "SLAVES"]

MASTER_CPU, SLAVE_CPU = 0, 1
BODY_SIZE = 1024
#: Share of the records sent before the windows start.
WARMUP_SHARE = 0.2
#: The slaves measured, in table order.
SLAVES = ("ours", "java", "floor")
_RECORD_SIZE = struct.Struct(">i")


def commit_log(records, body_size=BODY_SIZE):
    """The commit log of ``records`` single sends stored by our broker (from offset 0)."""
    with temporary_broker("slave-bench-log-") as controller:
        frames = request_frames(records, body_size, 1)
        check(frames, run_sends(frames, controller)[1])
        store = controller.store
        end = store.get_max_phy_offset()
        chunks, offset = [], 0
        while offset < end:
            chunk = store.get_commit_log_data(offset, end - offset)
            chunks.append(chunk)
            offset += len(chunk)
    return b"".join(chunks)


def one_record_transfers(data):
    """``(end offsets, transfers)``: ``data`` cut into one transfer per record."""
    ends, transfers = [], []
    offset = 0
    while offset < len(data):
        (size,) = _RECORD_SIZE.unpack_from(data, offset)
        transfers.append(encode_transfer(offset, data[offset:offset + size]))
        offset += size
        ends.append(offset)
    return ends, transfers


class ScriptedMaster:
    """The master's end of one HA connection: accepts the slave, then :meth:`drive` sends
    one transfer per record while reading the slave's reports."""

    def __init__(self, ends, transfers):
        self.ends, self.transfers = ends, transfers
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.connection = None
        self.sent = 0  # transfers sent
        self.acked_offset = 0
        self._reports = b""

    def accept(self, timeout=60.0):
        """Accept the slave and read its first report, which must be offset 0."""
        self.listener.settimeout(timeout)
        self.connection, _ = self.listener.accept()
        self.connection.settimeout(timeout)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        first = self._read_report()
        if first != 0:
            raise RuntimeError("the slave's store is not empty: it reports offset %d" % first)

    def _read_report(self):
        """Block until at least one whole report arrived; the newest (as a master keeps)."""
        while len(self._reports) < 8:
            chunk = self.connection.recv(4096)
            if not chunk:
                raise EOFError("the slave closed its HA connection")
            self._reports += chunk
        whole = len(self._reports) // 8 * 8
        offset = decode_slave_report(self._reports[whole - 8:whole])
        self._reports = self._reports[whole:]
        return offset

    @property
    def acked(self):
        """Records the slave holds, as its reports say."""
        return bisect.bisect_right(self.ends, self.acked_offset)

    def drive(self, inflight, records):
        """Send the next ``records`` records keeping ``inflight`` of them unacknowledged, and
        wait until the slave acknowledged them all."""
        last = self.sent + records
        if last > len(self.transfers):
            raise RuntimeError("only %d records were prepared" % len(self.transfers))
        while self.acked < last:
            while self.sent < last and self.sent - self.acked < inflight:
                self.connection.sendall(self.transfers[self.sent])
                self.sent += 1
            self.acked_offset = max(self.acked_offset, self._read_report())

    def close(self):
        if self.connection is not None:
            self.connection.close()
        self.listener.close()


def _floor_slave(address, cpu):
    """A bare Twisted client of ``address`` answering every read with a report of where the
    master's transfers reached (its own process, on ``cpu`` unless None; runs until
    killed)."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    from twisted.internet import reactor
    from twisted.internet.protocol import ClientFactory, Protocol

    from rmqproto.codec.ha import TransferReader, encode_slave_report
    from rmqproto.remoting.sendnow import send_now

    class Reporter(Protocol):
        held = 0

        def connectionMade(self):
            self.transport.setTcpNoDelay(True)
            self.reader = TransferReader()
            send_now(self.transport, encode_slave_report(0))

        def dataReceived(self, data):
            for piece in self.reader.feed(data):  # a read may hold several transfers
                self.held = piece.offset + len(piece.data)
            send_now(self.transport, encode_slave_report(self.held))

    host, port = address.split(":")
    reactor.connectTCP(host, int(port), ClientFactory.forProtocol(Reporter))
    reactor.run()


class _ForkedFloor:
    def __init__(self, address, cpu):
        self.process = multiprocessing.get_context("fork").Process(
            target=_floor_slave, args=(address, cpu))
        self.process.start()
        self.pid = self.process.pid

    def stop(self):
        self.process.kill()
        self.process.join()


def _start_slave(kind, master_address, workdir, pinned):
    """``(pid, stop)`` of a started slave of ``kind`` (one of :data:`SLAVES`)."""
    cpu = SLAVE_CPU if pinned else None
    if kind == "floor":
        floor = _ForkedFloor(master_address, cpu)
        return floor.pid, floor.stop
    store = workdir / "store"
    settings = dict(BROKER_SETTINGS, brokerName="broker-slave-bench", brokerRole="SLAVE",
                    brokerId=1, listenPort=broker_port(), haMasterAddress=master_address,
                    storePathRootDir=store, storePathCommitLog=store / "commitlog")
    if kind == "ours":
        process = start_twistd("rmq-slave", settings, workdir)
        stop = process.stop
    else:
        peers = JavaPeers(workdir)
        process = peers.broker("slave", **settings)
        stop = peers.stop_all
    pid = process.popen.pid
    if cpu is not None:
        pin(pid, cpu)
    return pid, stop


def measure(kind, transfers, inflight, windows, pinned=True):
    """Median ``{"rate", "cpu_us", "user_us", "system_us"}`` per record of a fresh slave of
    ``kind`` kept at ``inflight`` records in flight, and the list of each window's CPU µs:
    a warm-up of :data:`WARMUP_SHARE` of the records, then ``windows`` equal windows."""
    ends, chunks = transfers
    warmup = int(len(chunks) * WARMUP_SHARE)
    per_window = (len(chunks) - warmup) // windows
    workdir = Path(tempfile.mkdtemp(prefix="slave-bench-%s-" % kind))
    master = ScriptedMaster(ends, chunks)
    affinity = os.sched_getaffinity(0)
    stop = None
    try:
        pid, stop = _start_slave(kind, master.address, workdir, pinned)
        if pinned:
            os.sched_setaffinity(0, {MASTER_CPU})
        master.accept()
        master.drive(inflight, warmup)
        rows = []
        for _ in range(windows):
            cpu, started = process_cpu_times(pid), time.monotonic()
            master.drive(inflight, per_window)
            user, system = (b - a for a, b in zip(cpu, process_cpu_times(pid)))
            rows.append((per_window / (time.monotonic() - started),
                         (user + system) / per_window * 1e6, user / per_window * 1e6,
                         system / per_window * 1e6))
    finally:
        os.sched_setaffinity(0, affinity)
        master.close()
        if stop is not None:
            stop()
        shutil.rmtree(workdir, ignore_errors=True)
    medians = [statistics.median(row[i] for row in rows) for i in range(4)]
    return dict(zip(("rate", "cpu_us", "user_us", "system_us"), medians),
                windows=[row[1] for row in rows])


def table(results, markdown=False):
    headers = ["slave", "in flight", "records/s", "CPU µs/record", "user", "kernel",
               "vs Java", "windows (µs)"]
    rows = []
    for (kind, inflight), figures in results.items():
        java = results.get(("java", inflight))
        rows.append([kind if kind != "java" else "Java 4.9.7", str(inflight),
                     "{:,.0f}".format(figures["rate"]), "%.1f" % figures["cpu_us"],
                     "%.1f" % figures["user_us"], "%.1f" % figures["system_us"],
                     "%.2f" % (figures["cpu_us"] / java["cpu_us"]) if java else "-",
                     " ".join("%.0f" % w for w in figures["windows"])])
    return format_table(headers, rows, markdown)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=200_000,
                        help="records sent to each slave (1 KiB sends, about 1.2 KB each)")
    parser.add_argument("--inflight", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--windows", type=int, default=8)
    parser.add_argument("--slaves", nargs="+", choices=SLAVES, default=list(SLAVES))
    parser.add_argument("--no-pin", action="store_true", help="do not pin processes to CPUs")
    parser.add_argument("--markdown", type=Path, help="also write the table there as markdown")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    pinned = not args.no_pin and len(os.sched_getaffinity(0)) >= 2
    log("preparing %d records" % args.records)
    transfers = one_record_transfers(commit_log(args.records))
    results = {}
    for inflight in args.inflight:
        for kind in args.slaves:
            log("%s slave, %d in flight" % (kind, inflight))
            results[kind, inflight] = measure(kind, transfers, inflight, args.windows, pinned)
    info = machine()
    heading = "%s, %d CPUs%s; %s, %s" % (info["cpu"], info["cpus"],
                                         ", pinned" if pinned else "", info["python"],
                                         info["java"])
    print(heading)
    print(table(results))
    if args.markdown:
        args.markdown.write_text(heading + "\n\n" + table(results, markdown=True) + "\n")


if __name__ == "__main__":
    main()
