"""Master/slave replication (``docs/ha.md``): our pair (``twistd rmq-master`` + ``twistd
rmq-slave``) against a pair of Apache RocketMQ 4.9.7 Java brokers, in one run.

Three parts, all under one temporary directory that is removed at the end:

1. **limits** of this machine (``limits.py``): loopback TCP between two processes,
   sequential file writes (``write`` and ``mmap``, page cache and disk), and ``mmap``
   writes after ``limits.COLD_IDLE_SECONDS`` idle (the cold first touch a catch-up
   slave's new segment meets on a virtual machine), and after the same idle loopback TCP
   in 32 KiB writes copied into a new file through ``mmap`` as read: a slave's floor, the
   least a catch-up slave on one core does before it parses a record;
2. **catch-up**: our master and a Java master (ASYNC_MASTER, ASYNC_FLUSH, 1 GiB commit-log
   segments, one NameServer) are filled with the same MEGABYTES of 1 KiB messages; then for
   each pair (slave ← master: ours ← ours, Java ← Java, Java ← ours, ours ← Java) an empty
   slave is started after ``limits.COLD_IDLE_SECONDS`` of nothing (so that every slave
   meets the same cold memory) and its GET_BROKER_RUNTIME_INFO polled every 10 ms until its
   commit log holds the master's whole log (``commitLogMaxOffset``) and all of it is
   dispatched into consume queues and the index (``dispatchBehindBytes`` 0). MB/s are
   counted from the first poll that saw replicated bytes, so start-up (a JVM, a
   registration, Java's first offset report about 5 s after connecting) is left out and
   shown apart; "of floor" is the dispatched MB/s over part 1's slave floor; "slave system"
   is the share of the slave's CPU spent in the kernel (page faults on its new files,
   fsyncs, sockets). The slave's copy is then checked byte for byte against the master's,
   and the slave and its store are removed;
3. **SYNC_MASTER sends**: both masters restarted as SYNC_MASTER with their own kind of slave
   (ours ← ours, Java ← Java); ``broker_bench``'s load generators (the Java 4.9.8 client's
   ``BrokerLoad`` and the Twisted ``loadclient.py``) send 1 KiB messages with 1 and 8
   threads and batches of 32, each answer SEND_OK only once the slave holds the message.
   Each run warms up for 5 s first: a fresh JVM generator is still compiling its hot
   paths after 1.5 s, and its runs then scattered from 31,000 to 51,000 msg/s.

With two CPUs or more, masters are pinned to CPU 0, slaves and load generators to CPU 1
(``--no-pin`` lets the scheduler place them). Every run measures the CPU other processes
used meanwhile ("other load", in cores; a SYNC_MASTER's slave is not other load, its CPU
is shown apart); a run with more than 0.25 cores of other load is run again
(``--reruns``) and the best undisturbed run counts.

    python benchmarks/ha_bench.py             # full: a few minutes
    python benchmarks/ha_bench.py --quick     # a short smoke run
    python benchmarks/ha_bench.py --profile   # also cProfile our slave and the in-process path
    python benchmarks/ha_bench.py --sends-only --workload "send 1 KiB, 1 thread" --client python
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import hapath  # noqa: E402
import limits  # noqa: E402
from broker_bench import (  # noqa: E402
    BROKER_SETTINGS, QUEUES, WORKLOADS, Brokers, Loaders, _brief, best_runs, errors,
    print_profile, run_workloads, start_twistd, table as send_table)
from harness import (  # noqa: E402
    _busy_seconds, _own_seconds, exit_on_sigterm, format_table, log, machine,
    process_cpu_seconds, process_cpu_times, ratio)
from loadclient import SendRequests  # noqa: E402
from namesrv_bench import pin  # noqa: E402
from rmqproto.codec.bodies.route import KVTable  # noqa: E402
from rmqproto.codec.codes import RequestCode, ResponseCode  # noqa: E402
from support.javapeers import JavaPeers, broker_port  # noqa: E402
from support.syncclient import SyncClient  # noqa: E402

MB = limits.MB
MASTER_CPU, SLAVE_CPU = 0, 1
BODY_SIZE = 1024
#: Messages a fill request carries (about 38 KB).
FILL_BATCH = 32
POLL_SECONDS = 0.01

CATCH_UP_SETTINGS = BROKER_SETTINGS  # ASYNC_MASTER, ASYNC_FLUSH, 1 GiB segments
SYNC_SETTINGS = dict(BROKER_SETTINGS, brokerRole="SYNC_MASTER")
#: (slave, master) of each catch-up run.
PAIRS = [("ours", "ours"), ("java", "java"), ("java", "ours"), ("ours", "java")]

MODES = {
    "full": dict(megabytes=512, limit_megabytes=1024, path_megabytes=64, warmup=5.0, seconds=10.0,
                 workloads=("send 1 KiB, 1 thread", "send 1 KiB, 8 threads",
                            "batch 32 × 1 KiB, 8 threads"), clients=("java", "python")),
    "quick": dict(megabytes=64, limit_megabytes=256, path_megabytes=16, warmup=0.5, seconds=1.5,
                  workloads=("send 1 KiB, 1 thread", "send 1 KiB, 8 threads"),
                  clients=("java",)),
}


def _label(slave, master):
    return "%s ← %s" % (_kind(slave), _kind(master))


def _kind(name):
    return "Java" if name == "java" else name


# ---------------------------------------------------------------- slaves

class Slave:
    """A started slave: its process, pid, remoting address and store."""

    def __init__(self, process, address, store):
        self.process, self.address, self.store = process, address, store
        self.pid = process.popen.pid


class Slaves:
    """Starts slaves (``ours``: ``twistd rmq-slave``; ``java``: a Java 4.9.7 broker) of the
    masters in ``brokers``, each with an empty store under ``workdir``."""

    def __init__(self, workdir, brokers, pinned):
        self.workdir, self.brokers, self.pinned = workdir, brokers, pinned
        self.peers = None
        self.runs = 0

    def start(self, kind, master, profile=None):
        self.runs += 1
        workdir = self.workdir / ("slave-%d-%s" % (self.runs, kind))
        workdir.mkdir(parents=True)
        store = workdir / "store"
        port = broker_port()
        settings = dict(self.brokers.settings, brokerName="broker-" + master, brokerRole="SLAVE",
                        brokerId=1, listenPort=port, namesrvAddr=self.brokers.namesrv_addr,
                        storePathRootDir=store, storePathCommitLog=store / "commitlog")
        if kind == "ours":
            process = start_twistd("rmq-slave", settings, workdir, profile)
        else:
            if self.peers is None:
                self.peers = JavaPeers(self.workdir / "java-slaves")
            process = self.peers.broker("slave-%d" % self.runs, **settings)
            self.peers.processes.remove(process)  # stopped by its Slave
        slave = Slave(process, "127.0.0.1:%d" % port, store)
        if self.pinned:
            pin(slave.pid, SLAVE_CPU)
        return slave

    @staticmethod
    def stop(slave, keep_store=False):
        slave.process.stop()
        if not keep_store:
            shutil.rmtree(slave.store, ignore_errors=True)


def runtime_info(client):
    """GET_BROKER_RUNTIME_INFO as a dict; empty while the broker cannot answer it yet (a
    Java 4.9.7 broker answers SYSTEM_ERROR, NoSuchElementException, for about a second after
    it started: its store statistics have no sample yet)."""
    answer = client.call(RequestCode.GET_BROKER_RUNTIME_INFO)
    if answer.code != ResponseCode.SUCCESS or not answer.body:
        return {}
    return KVTable.from_json(answer.body).table


def master_commit_log(brokers, master):
    return brokers.workdir / master / "store" / "commitlog"


def same_bytes(first_dir, second_dir, size):
    """True when the first ``size`` bytes of the first segments in both directories match."""
    crcs = []
    for directory in (first_dir, second_dir):
        crc, left = 0, size
        with open(directory / ("%020d" % 0), "rb") as segment:
            while left:
                chunk = segment.read(min(left, 8 * MB))
                if not chunk:
                    return False
                crc, left = zlib.crc32(chunk, crc), left - len(chunk)
        crcs.append(crc)
    return crcs[0] == crcs[1]


# ---------------------------------------------------------------- catch-up

def fill(brokers, topics, megabytes):
    """Write about ``megabytes`` of 1 KiB messages to each master; its max offset."""
    sizes = {}
    for name, (_, address) in brokers.started.items():
        requests = SendRequests(topics[name]["consume"], QUEUES, BODY_SIZE, FILL_BATCH)
        client = SyncClient(address, timeout=30)
        try:
            while True:
                info = runtime_info(client)
                if not info:
                    time.sleep(0.2)
                    continue
                size = int(info["commitLogMaxOffset"])
                if size >= megabytes * MB:
                    break
                requests.send_sync(client, 64, "filling %s" % name)
        finally:
            client.close()
        sizes[name] = size
    return sizes


class CatchUp:
    """One catch-up run: an empty slave of ``master`` until it holds and has dispatched
    ``size`` bytes; figures as a dict (``tps`` is the dispatched MB/s, for ``best_runs``).

    Every run starts after ``limits.COLD_IDLE_SECONDS`` of nothing, so every slave meets
    the same memory: on a guest whose balloon reports free pages to the host, a slave
    started within a second or two of the previous one's removal would reuse its still
    backed pages and run several times faster (docs/performance.md)."""

    def __init__(self, slaves, brokers, sizes):
        self.slaves, self.brokers, self.sizes = slaves, brokers, sizes

    def _sample(self, master_pid, slave_pid):
        return (time.monotonic(), process_cpu_seconds(master_pid), process_cpu_times(slave_pid),
                _busy_seconds(), _own_seconds())

    def __call__(self, slave_kind, master, profile=None):
        """``profile``: where our slave saves its cProfile statistics."""
        size = self.sizes[master]
        master_pid = self.brokers.started[master][0]
        time.sleep(limits.COLD_IDLE_SECONDS)
        started = time.monotonic()
        slave = self.slaves.start(slave_kind, master, profile)
        try:
            figures = self._follow(slave, master_pid, size, started)
            if not same_bytes(master_commit_log(self.brokers, master), slave.store / "commitlog",
                              size):
                raise RuntimeError("%s: the slave's commit log differs from the master's"
                                   % _label(slave_kind, master))
        finally:
            self.slaves.stop(slave)
        return figures

    def _follow(self, slave, master_pid, size, started):
        client = SyncClient(slave.address, timeout=10)
        first = logged = None
        deadline = time.monotonic() + 60 + size / MB / 2
        try:
            while True:
                sample = self._sample(master_pid, slave.pid)
                info = runtime_info(client)
                offset = int(info.get("commitLogMaxOffset", 0))
                if first is None and offset > 0:
                    first, first_offset = sample, offset
                if logged is None and offset >= size:
                    logged = sample[0]
                if offset >= size and int(info.get("dispatchBehindBytes", -1)) == 0:
                    last = sample
                    break
                if sample[0] > deadline:
                    raise TimeoutError("the slave holds %d of %d bytes after %.0f s"
                                       % (offset, size, sample[0] - started))
                time.sleep(POLL_SECONDS)
        finally:
            client.close()
        (t0, master0, (user0, sys0), busy0, own0), (t1, master1, (user1, sys1), busy1, own1) = (
            first, last)
        slave0, slave1, slave_sys = user0 + sys0, user1 + sys1, sys1 - sys0
        window = max(t1 - t0, 1e-9)
        megabytes = (size - first_offset) / MB
        other = (busy1 - busy0) - (master1 - master0) - (slave1 - slave0) - (own1 - own0)
        return {"bytes": size, "first_offset": first_offset, "window_s": window,
                "log_mb_s": megabytes / max(logged - t0, 1e-9), "tps": megabytes / window,
                "to_first_byte_s": t0 - started, "total_s": t1 - started,
                "master_cores": (master1 - master0) / window,
                "slave_cores": (slave1 - slave0) / window,
                "slave_system_share": slave_sys / max(slave1 - slave0, 1e-9),
                "other_cores": max(0.0, other / window)}


def catch_up_runs(workdir, pinned, megabytes, repeat, reruns, profile=None):
    """``{(slave, master): figures}``: the best catch-up run of each pair; with ``profile``
    one more ours ← ours run, our slave saving its cProfile statistics there."""
    workdir.mkdir()
    brokers = Brokers(workdir, pinned, settings=CATCH_UP_SETTINGS)
    try:
        topics = brokers.create_topics()
        log("filling each master with %d MB of %d B messages" % (megabytes, BODY_SIZE))
        sizes = fill(brokers, topics, megabytes)
        slaves = Slaves(workdir, brokers, pinned)
        measure = CatchUp(slaves, brokers, sizes)
        started = {_label(*pair): pair for pair in PAIRS}
        best = best_runs(started, measure, "catch-up of %d MB" % megabytes, repeat, reruns)
        if profile:
            log("profiled: %s" % _brief(measure("ours", "ours", profile)))
    finally:
        brokers.stop()
    return {started[label]: figures for label, figures in best.items()}


# ---------------------------------------------------------------- SYNC_MASTER sends

def wait_in_sync(address, topic, timeout=90):
    """Send a small message until it is answered SEND_OK (the slave acked it)."""
    requests = SendRequests(topic, QUEUES, 16, 1)
    client = SyncClient(address, timeout=30)
    deadline = time.monotonic() + timeout
    try:
        while True:
            request = requests.next_request()
            answer = client.call(request.code, request.ext_fields, request.body)
            if answer.code == ResponseCode.SUCCESS:
                return
            if time.monotonic() > deadline:
                raise TimeoutError("%s: no SEND_OK after %d s: %s" % (address, timeout,
                                                                      answer.remark))
            time.sleep(0.2)
    finally:
        client.close()


def sync_send_runs(workdir, pinned, workloads, clients, warmup, seconds, repeat, reruns):
    """``{workload: {client: {master: figures}}}`` with each SYNC_MASTER's own kind of slave."""
    workdir.mkdir()
    brokers = Brokers(workdir, pinned, settings=SYNC_SETTINGS)
    slaves = {}
    try:
        topics = brokers.create_topics()
        sync_slaves = Slaves(workdir, brokers, pinned)
        for name in brokers.started:
            slaves[name] = sync_slaves.start(name, name)
        for name, (_, address) in brokers.started.items():
            wait_in_sync(address, topics[name]["send"])
        loaders = Loaders(workdir, brokers.namesrv_addr)
        return run_workloads(brokers, loaders, topics, workloads, clients, warmup, seconds,
                             repeat, reruns, pinned,
                             companions={name: [s.pid] for name, s in slaves.items()})
    finally:
        for slave in slaves.values():
            Slaves.stop(slave)
        brokers.stop()


# ---------------------------------------------------------------- report

def limits_table(figures, markdown):
    rows = [["loopback TCP, 32 KiB writes (the HA transfer size)", "%.0f" % figures["tcp_32k"]],
            ["loopback TCP, 1 MiB writes", "%.0f" % figures["tcp_1m"]]]
    for name in ("write", "mmap"):
        cached, synced = figures["file"][name]
        rows += [["file %s, into the page cache" % name, "%.0f" % cached],
                 ["file %s, until fsync/msync returns" % name, "%.0f" % synced]]
    rows.append(["file mmap, into the page cache after %d s idle (cold first touch)"
                 % limits.COLD_IDLE_SECONDS, "%.0f" % figures["mmap_cold"]])
    rows.append(["loopback TCP, 32 KiB writes, copied into a new file through mmap after %d s "
                 "idle (a slave's floor)" % limits.COLD_IDLE_SECONDS,
                 "%.0f" % figures["slave_floor"]])
    rows.append(["our path in one process: master sends (CPU-bound, one core)",
                 "%.0f" % figures["path"]["master_mb_s"]])
    rows.append(["our path in one process: slave appends and dispatches (one core)",
                 "%.0f" % figures["path"]["slave_mb_s"]])
    return format_table(["limit", "MB/s"], rows, markdown)


def catch_up_table(results, floor, markdown):
    """``floor``: the limits' slave floor in MB/s, beside which the dispatched MB/s go."""
    rows = []
    for (slave, master), f in results.items():
        rows.append([_label(slave, master), "%.0f" % (f["bytes"] / MB), "%.0f" % f["log_mb_s"],
                     "%.0f" % f["tps"], "%.2f" % (f["tps"] / floor), "%.1f" % f["to_first_byte_s"],
                     "%.1f" % f["total_s"], "%.2f" % f["master_cores"], "%.2f" % f["slave_cores"],
                     "%.0f %%" % (100 * f["slave_system_share"]), "%.2f" % f["other_cores"]])
    headers = ["slave ← master", "MB", "log MB/s", "dispatched MB/s", "of floor", "start s",
               "total s", "master CPU", "slave CPU", "slave system", "other load"]
    return format_table(headers, rows, markdown)


def summary_table(catch_up, sends, markdown):
    """Ours, Java and the ratio for the headline figures."""
    rows = []
    ours, java = catch_up.get(("ours", "ours")), catch_up.get(("java", "java"))
    if ours and java:
        for key, what in (("log_mb_s", "catch-up, commit log MB/s"),
                          ("tps", "catch-up, dispatched MB/s")):
            rows.append([what, "%.0f" % ours[key], "%.0f" % java[key], ratio(ours[key], java[key])])
    for workload, by_client in sends.items():
        for client, by_broker in by_client.items():
            o, j = by_broker.get("ours"), by_broker.get("java")
            if not (o and j):
                continue
            name = "SYNC_MASTER %s (%s client)" % (workload, client)
            rows.append([name + ", msg/s", "{:,.0f}".format(o["tps"]), "{:,.0f}".format(j["tps"]),
                         ratio(o["tps"], j["tps"])])
            rows.append([name + ", avg / max ms (ratio of avg)",
                         "%.2f / %.1f" % (o["mean_us"] / 1000, o["max_us"] / 1000),
                         "%.2f / %.1f" % (j["mean_us"] / 1000, j["max_us"] / 1000),
                         ratio(o["mean_us"], j["mean_us"])])
    return format_table(["measure", "ours", "Java", "ours/Java"], rows, markdown)


def report(results, info, pinned, markdown):
    """The tables of the parts that ran (``--sends-only`` leaves out catch-up and limits)."""
    placement = ("masters pinned to CPU %d, slaves and load generators to CPU %d"
                 % (MASTER_CPU, SLAVE_CPU) if pinned else "not pinned")
    parts = ["## Summary (ours ← ours against Java ← Java)", "",
             summary_table(results.get("catch_up", {}), results["sends"], markdown), ""]
    if "catch_up" in results:
        parts += ["## Catch-up of an empty slave", "",
                  catch_up_table(results["catch_up"], results["limits"]["slave_floor"],
                                 markdown), ""]
    parts += ["## SYNC_MASTER sends (CPU: the master's; slave CPU: its slave's)", "",
              send_table(results["sends"], markdown, companion="slave"), ""]
    if "limits" in results:
        parts += ["## Limits of this machine", "", limits_table(results["limits"], markdown), ""]
    parts += ["WARNING: " + line for line in errors(results["sends"])]
    parts += ["%(cpus)d CPUs, %(cpu)s; %(python)s; %(java)s" % info, placement]
    return "\n".join(parts)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="64 MB catch-ups, SYNC sends with the Java client only, short runs")
    parser.add_argument("--megabytes", type=int, help="commit log each catch-up replicates "
                        "(default 512, 64 with --quick; at most 1000)")
    parser.add_argument("--seconds", type=float,
                        help="measuring time per SYNC send run (default 10, 1.5 with --quick)")
    parser.add_argument("--warmup", type=float,
                        help="warm-up time per SYNC send run (default 5, 0.5 with --quick)")
    parser.add_argument("--repeat", type=int, default=1, help="undisturbed runs of each measure")
    parser.add_argument("--reruns", type=int,
                        help="times a disturbed run may be run again (default: 2 × --repeat, "
                             "0 with --quick)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin processes to CPUs")
    parser.add_argument("--profile", action="store_true",
                        help="profile the in-process path and our slave in one more ours ← ours "
                             "catch-up (not counted); print both")
    parser.add_argument("--sends-only", action="store_true",
                        help="only the SYNC_MASTER sends: no limits, no catch-up")
    parser.add_argument("--workload", action="append", metavar="NAME",
                        choices=[w.name for w in WORKLOADS],
                        help="run only this SYNC_MASTER send workload (repeatable)")
    parser.add_argument("--client", action="append", choices=("java", "python"),
                        help="run the sends with only this load generator (repeatable)")
    parser.add_argument("--markdown", type=Path, help="also write the tables there as markdown")
    parser.add_argument("--json", type=Path, help="also write the raw figures there")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    mode = "quick" if args.quick else "full"
    settings = MODES[mode]
    megabytes = args.megabytes or settings["megabytes"]
    if not 0 < megabytes <= 1000:
        parser.error("--megabytes must be in 1..1000 (the data must fit one 1 GiB segment)")
    warmup = args.warmup if args.warmup is not None else settings["warmup"]
    seconds = args.seconds if args.seconds is not None else settings["seconds"]
    reruns = args.reruns if args.reruns is not None else (0 if args.quick else 2 * args.repeat)
    pinned = not args.no_pin and len(os.sched_getaffinity(0)) >= 2
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="ha-bench-"))
    results = {}
    slave_profile = workdir / "slave.prof" if args.profile and not args.sends_only else None
    try:
        if not args.sends_only:
            log("limits: loopback TCP and file writes")
            total = settings["limit_megabytes"] * MB
            results["limits"] = {"tcp_32k": limits.loopback_mb_s(total, 32 * 1024, pinned),
                                 "tcp_1m": limits.loopback_mb_s(total, MB, pinned),
                                 "file": limits.file_write_mb_s(workdir, total),
                                 "mmap_cold": limits.mmap_cold_mb_s(workdir, total),
                                 "slave_floor": limits.slave_floor_mb_s(workdir, total, pinned)}
            log("our replication path in one process")
            results["limits"]["path"] = hapath.measure(settings["path_megabytes"], BODY_SIZE)
            results["catch_up"] = catch_up_runs(workdir / "catch-up", pinned, megabytes,
                                                args.repeat, reruns, slave_profile)
        names = args.workload or settings["workloads"]
        workloads = [w for w in WORKLOADS if w.name in names]
        results["sends"] = sync_send_runs(workdir / "sync", pinned, workloads,
                                          args.client or settings["clients"], warmup, seconds,
                                          args.repeat, reruns)
        info = machine()
        print(report(results, info, pinned, markdown=False))
        if args.markdown:
            args.markdown.write_text(report(results, info, pinned, markdown=True) + "\n")
        if args.json:
            raw = dict(results, catch_up={_label(*k): v
                                          for k, v in results.get("catch_up", {}).items()})
            args.json.write_text(json.dumps(dict(machine=info, pinned=pinned, mode=mode,
                                                 megabytes=megabytes, warmup=warmup,
                                                 seconds=seconds, results=raw), indent=2)
                                 + "\n")
        if args.profile:
            print(hapath.report(hapath.measure(settings["path_megabytes"], BODY_SIZE, True)))
            if slave_profile is not None and slave_profile.exists():
                print("our slave process during an extra ours ← ours catch-up:")
                print_profile(slave_profile)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        log("took %.0f s" % (time.monotonic() - started))


if __name__ == "__main__":
    main()
