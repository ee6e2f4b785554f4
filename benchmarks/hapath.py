"""Our replication path in one process, without sockets (``docs/ha.md``): the CPU a megabyte
of commit log costs the master to send and the slave to append and dispatch, and where it
goes.

A master :class:`BrokerController` with a real store (``sendpath.make_broker``: ASYNC_FLUSH,
1 GiB segments, on a fake clock) is filled with batch sends as ``loadclient.py`` makes
them. Its :class:`~rmqproto.ha.master.HAMasterService` then streams the whole log to one
connection on a transport that only keeps the written chunks: the slave's first report
(0) starts the transfer and ``pump`` runs until the log's end, which is the master's work
per byte (reading the mapped file, the transfer headers, the writes). The stream is cut
into the reads the slave's HA connection makes (``rmqproto.ha.slave.READ_SIZE``, 1 MiB)
and fed to an :class:`~rmqproto.ha.client.HAClient` on an empty slave store: parsing the
transfers, appending to the commit log, the offset reports, and after each read one turn
of the (fake) reactor, which dispatches what was appended into consume queues and the index.
What this leaves out compared with ``ha_bench.py``: the real reactor, the sockets and the
flushes.

    python benchmarks/hapath.py [--megabytes 64] [--body-size 1024]
    python benchmarks/hapath.py --profile       # cProfile of both sides (CPU-time clock)
"""

import argparse
import cProfile
import io
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import OtherLoad, exit_on_sigterm, log  # noqa: E402
from sendpath import make_broker, native, request_frames, run as run_sends, check  # noqa: E402
from rmqproto.broker.config import SETTINGS  # noqa: E402
from rmqproto.codec.javalang import java_string_hash  # noqa: E402
from rmqproto.codec.ha import encode_slave_report  # noqa: E402
from rmqproto.ha.client import HAClient  # noqa: E402
from rmqproto.ha.master import HAMasterService  # noqa: E402
from rmqproto.ha.slave import READ_SIZE  # noqa: E402
from rmqproto.store.defaultstore import DefaultMessageStore  # noqa: E402

__all__ = ["ReplicationPath", "measure"]

MB = 1024 * 1024
#: Messages a fill request carries.
FILL_BATCH = 32

#: Stages of the slave's work as the profile names them: (label, file suffix, function).
SLAVE_STAGES = [
    ("HAClient.data_received, all", "ha/client.py", "data_received"),
    ("  TransferReader.feed (headers, slicing)", "codec/ha.py", "feed"),
    ("  append_to_commit_log, all", "store/defaultstore.py", "append_to_commit_log"),
    ("    CommitLog.append_data (copy into the mapped file)", "store/commitlog.py", "append_data"),
    ("  offset report (_report)", "ha/client.py", "_report"),
    ("reput slices (ReputService.do_reput), all", "store/dispatch.py", "do_reput"),
    ("  usual records in C (_dispatch_usual), all", "store/defaultstore.py",
     "_dispatch_usual"),
    ("    records to units, entries (C)", *native("dispatch_usual_records")),
    ("    consume-queue units (put_packed_units)", "store/consumequeue.py", "put_packed_units"),
    ("    IndexFile.put_hashes (C loop)", "codec/indexfile.py", "put_hashes"),
    ("  other records (DispatchScan.take)", "codec/message.py", "take"),
    ("  other records' dispatch (_dispatch)", "store/defaultstore.py", "_dispatch"),
]
MASTER_STAGES = [
    ("HAMasterConnection.pump, all", "ha/master.py", "pump"),
    ("  get_commit_log_data (slice of the mapped file)", "store/defaultstore.py",
     "get_commit_log_data"),
    ("  _write (header, send_now)", "ha/master.py", "_write"),
]


class _ChunkTransport(StringTransport):
    """A transport that keeps written chunks as they are (no joining)."""

    def __init__(self):
        super().__init__()
        self.chunks = []

    def write(self, data):
        self.chunks.append(data)


def _slave_store(root, clock):
    values, unknown = SETTINGS.resolve(dict(
        brokerRole="SLAVE", brokerId=1, brokerName="broker-bench", storePathRootDir=str(root),
        flushDiskType="ASYNC_FLUSH", mappedFileSizeCommitLog=1024 * 1024 * 1024))
    assert not unknown
    store = DefaultMessageStore(values, clock, run_blocking=lambda f, *a: defer.Deferred())
    store.load()
    store.start()
    return store, values


class ReplicationPath:
    """A filled master and an empty slave under ``root``; :meth:`send` and :meth:`receive`
    replicate the master's log once (call each once, in that order)."""

    def __init__(self, root, megabytes, body_size):
        self.root = Path(root)
        self.master = make_broker(self.root / "master")
        record_size = body_size + 180  # about: the header, topic and properties
        count = -(-megabytes * MB // (record_size * FILL_BATCH))
        frames = request_frames(count, body_size, FILL_BATCH)
        check(frames, run_sends(frames, self.master)[1])
        del frames
        self.size = self.master.store.get_max_phy_offset()
        self.clock = Clock()
        self.clock.advance(time.time())
        self.slave_store, values = _slave_store(self.root / "slave", self.clock)
        self.client = HAClient(self.slave_store, values)
        self.stream = None

    def send(self):
        """The master streams its log to a new HA connection; the bytes are kept."""
        ha = HAMasterService(self.master)
        connection = ha.factory.buildProtocol(None)
        transport = _ChunkTransport()
        connection.makeConnection(transport)
        connection.dataReceived(encode_slave_report(0))
        self.stream = transport.chunks
        return sum(len(chunk) for chunk in self.stream)

    def reads(self):
        """The stream cut into ``READ_SIZE`` reads."""
        data = b"".join(self.stream)
        self.stream = None
        return [data[i:i + READ_SIZE] for i in range(0, len(data), READ_SIZE)]

    def receive(self, reads):
        """The slave takes the reads; the bytes it appended."""
        client = self.client
        now = self.clock.seconds()
        client.start(now)
        client.connection_made(now)
        for data in reads:
            client.data_received(data, now)
            self.clock.advance(0)  # the reactor turn after the read: the store's reput slices
        appended = self.slave_store.get_max_phy_offset()
        if appended != self.size or self.slave_store.dispatch_behind_bytes():
            raise RuntimeError("the slave holds %d of %d bytes, %d undispatched" % (
                appended, self.size, self.slave_store.dispatch_behind_bytes()))
        return appended

    def close(self):
        self.slave_store.shutdown()
        self.master.store.shutdown()


def _timed(function, *args, profiler=None):
    started = time.process_time()
    if profiler is not None:
        profiler.enable()
    try:
        value = function(*args)
    finally:
        if profiler is not None:
            profiler.disable()
    return value, time.process_time() - started


def measure(megabytes=64, body_size=1024, profile=False):
    """``{"megabytes", "master_mb_s", "slave_mb_s", "other_cores", "profiles"}``: CPU-bound MB/s
    of each side on one core; ``profiles`` are ``pstats.Stats`` when ``profile``."""
    root = Path(tempfile.mkdtemp(prefix="hapath-"))
    try:
        path = ReplicationPath(root, megabytes, body_size)
        try:
            profilers = ([cProfile.Profile(time.process_time) for _ in range(2)] if profile
                         else [None, None])
            with OtherLoad() as other:
                sent, master_s = _timed(path.send, profiler=profilers[0])
                reads = path.reads()
                # a slave process has not hashed the master's keys (index, tags) before
                java_string_hash.cache_clear()
                appended, slave_s = _timed(path.receive, reads, profiler=profilers[1])
        finally:
            path.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    figures = {"megabytes": appended / MB, "stream_bytes": sent,
               "master_mb_s": appended / MB / master_s, "slave_mb_s": appended / MB / slave_s,
               "other_cores": other.cores, "profiled": profile}
    if profile:
        figures["profiles"] = {"master": pstats.Stats(profilers[0], stream=io.StringIO()),
                               "slave": pstats.Stats(profilers[1], stream=io.StringIO())}
    return figures


def stage_table(stats, stages, total_mb):
    """Each stage's cumulative CPU share of the profiled side, and its cost per MB."""
    def cumulative(suffix, function):
        return sum(ct for (path, _, name), (_, _, _, ct, _) in stats.stats.items()
                   if name == function and path.endswith(suffix))

    total = stats.total_tt
    rows = []
    for label, suffix, function in stages:
        seconds = cumulative(suffix, function)
        rows.append("%-56s %5.1f %%  %7.2f ms/MB" % (label, 100 * seconds / total if total else 0,
                                                     1000 * seconds / total_mb))
    return "\n".join(rows)


def top_functions(stats, limit=20):
    stats.stream = io.StringIO()
    stats.sort_stats("tottime").print_stats(limit)
    return stats.stream.getvalue()


def report(figures):
    lines = ["%.0f MB replicated in process%s: master sends %.0f MB/s, slave appends and "
             "dispatches %.0f MB/s (CPU time, one core each); other load %.2f cores"
             % (figures["megabytes"], " under cProfile" if figures["profiled"] else "",
                figures["master_mb_s"], figures["slave_mb_s"], figures["other_cores"])]
    for side, stages in (("slave", SLAVE_STAGES), ("master", MASTER_STAGES)):
        stats = figures.get("profiles", {}).get(side)
        if stats is not None:
            lines += ["", "%s (profiled, cumulative share of its time):" % side,
                      stage_table(stats, stages, figures["megabytes"]), "",
                      top_functions(stats)]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--megabytes", type=int, default=64, help="commit log to replicate")
    parser.add_argument("--body-size", type=int, default=1024)
    parser.add_argument("--profile", action="store_true",
                        help="run both sides under cProfile (slower) and print where time goes")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    print(report(measure(args.megabytes, args.body_size, args.profile)))
    log("done")


if __name__ == "__main__":
    main()
