"""DLedger group throughput and failover: three of our members (``twistd -n rmq-dledger``)
against three real DLedger 0.3.1.2 members, under the same load generator, in one run.

The generator (``benchmarks/java/.../DLedgerLoad.java``) is DLedger's own ``DLedgerClient``:
CLIENTS threads, each with one append outstanding (closed loop). For each body size (128 B,
1 KiB) and client count (1, 8, 32) it warms up, then measures appends/s and latency, and
the CPU the three members used a append (and, before the rows, with no load at all). Then the leader is killed with -9 and the time
until an append succeeds on the new leader is measured (appends tried every 5 ms on every
survivor), ``--failovers`` times (the killed member is started again in between; the
median is reported). Before the first row each group takes ``--group-warmup`` seconds of
load (Java's JIT). Each row is run ``--repeat`` times per group; the median run is reported.

Both groups get the same conditions: DLedger's defaults (heartbeats every 2 s, a leader
lost after 3 missed), except 64 MiB data and 32 MiB index segments for both (a new 1 GiB
segment would be measured otherwise), the same CPUs for every process (all of them, or
``--cpus 0,1``), and a 256 MiB heap for each Java member. ``--batch-push`` turns on
``isEnableBatchPush`` in both groups.

    python benchmarks/dledger_bench.py [--seconds 3] [--warmup 1] [--repeat 1] [--markdown out.md]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))

from harness import (  # noqa: E402
    OtherLoad, exit_on_sigterm, format_table, java_classpath, java_command, log, machine,
    process_cpu_seconds, rate, ratio)
from support.dledgergroup import Group  # noqa: E402

LOAD_MAIN = "rmqproto.bench.DLedgerLoad"
SIZES = (128, 1024)
CLIENTS = (1, 8, 32)
#: the same for both groups: segments small enough that creating one is not measured
SEGMENTS = {"mappedFileSizeForEntryData": 64 * 1024 * 1024,
            "mappedFileSizeForEntryIndex": 32 * 1024 * 1024}
MEMBER_HEAP = ["-Xms256m", "-Xmx256m"]


def pin_tree(pid, cpus):
    """Move every thread of process ``pid`` onto ``cpus``."""
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            os.sched_setaffinity(int(task), cpus)
        except (ProcessLookupError, FileNotFoundError):
            pass


def start_group(kind, workdir, cpus, batch_push):
    settings = dict(SEGMENTS)
    if batch_push:  # the field's name for ours, the setter's (setEnableBatchPush) for Java
        settings["enableBatchPush" if kind == "java" else "isEnableBatchPush"] = "true"
    group = Group(workdir / kind, java=("n0", "n1", "n2") if kind == "java" else (),
                  java_options=MEMBER_HEAP, **settings)
    group.start_all()
    for daemon in group.daemons.values():
        pin_tree(daemon.popen.pid, cpus)
    group.wait_leader()
    return group


def load(classpath, group, size, clients, warmup, seconds, cpus):
    """One closed-loop run of the generator; its figures plus ``cpu_us`` a append."""
    command = java_command(classpath, LOAD_MAIN, group.group, group.peers, size, clients, warmup,
                           seconds, heap="256m")
    pids = [daemon.popen.pid for daemon in group.daemons.values()]
    before = sum(process_cpu_seconds(pid) for pid in pids)
    started = time.monotonic()
    with OtherLoad() as other:
        result = subprocess.run(command, capture_output=True, text=True,
                                preexec_fn=lambda: os.sched_setaffinity(0, cpus),
                                timeout=120 + warmup + seconds)
        used = sum(process_cpu_seconds(pid) for pid in pids) - before
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        raise RuntimeError("load generator failed (%d):\n%s" % (result.returncode, result.stderr))
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    # the CPU of warm-up and measurement together, over the appends of both (estimated)
    appends = figures["aps"] * (warmup + seconds)
    figures["cpu_us"] = round(used / appends * 1e6, 1) if appends else None
    # the members are not waited-for children: OtherLoad counts them as others
    figures["other_cores"] = round(max(0.0, other.cores - used / elapsed), 2)
    return figures


def idle_cores(group, seconds=2.0):
    """The CPU (in cores) the group's members use with no load: timers and polling."""
    pids = [daemon.popen.pid for daemon in group.daemons.values()]
    before = sum(process_cpu_seconds(pid) for pid in pids)
    time.sleep(seconds)
    return (sum(process_cpu_seconds(pid) for pid in pids) - before) / seconds


def failover_seconds(group, cpus):
    """Kill the leader with -9; seconds until an append succeeds on a new leader. The
    killed member is started again and the group agrees on a leader before this returns."""
    leader = group.wait_leader()
    survivors = [m for m in group.ids if m != leader]
    killed = time.monotonic()
    group.kill(leader)
    deadline = killed + 60
    took = None
    while took is None and time.monotonic() < deadline:
        for member in survivors:
            answer = group.append(member, b"failover")
            if answer is not None and answer.code == 200:
                took = time.monotonic() - killed
                break
        else:
            time.sleep(0.005)
    if took is None:
        raise RuntimeError("no append succeeded within 60 s of the leader's death")
    group.start(leader)
    pin_tree(group.daemons[leader].popen.pid, cpus)
    group.wait_leader()
    return took


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--group-warmup", type=int, default=5,
                        help="seconds of 8 clients x 1 KiB before the first row (the JIT's)")
    parser.add_argument("--failovers", type=int, default=5, help="leader kills a group")
    parser.add_argument("--cpus", help="CPUs for every process, e.g. 0,1 (default: all)")
    parser.add_argument("--batch-push", action="store_true",
                        help="isEnableBatchPush in both groups")
    parser.add_argument("--groups", default="ours,java", help="which groups to run")
    parser.add_argument("--markdown", help="also write the tables to this file")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    exit_on_sigterm()
    cpus = ({int(c) for c in args.cpus.split(",")} if args.cpus
            else os.sched_getaffinity(0))
    kinds = args.groups.split(",")
    classpath = java_classpath()
    figures = {"rows": [], "failover": {}, "idle_cores": {}, "batch_push": args.batch_push,
               "cpus": sorted(cpus)}
    with tempfile.TemporaryDirectory(prefix="dledger-bench-") as tmp:
        workdir = Path(tmp)
        median = {}
        for kind in kinds:
            group = start_group(kind, workdir, cpus, args.batch_push)
            try:
                load(classpath, group, 1024, 8, 0, args.group_warmup, cpus)
                figures["idle_cores"][kind] = idle_cores(group)
                log("%s idle: %.3f cores" % (kind, figures["idle_cores"][kind]))
                for size in SIZES:
                    for clients in CLIENTS:
                        runs = sorted((load(classpath, group, size, clients, args.warmup,
                                            args.seconds, cpus) for _ in range(args.repeat)),
                                      key=lambda run: run["aps"])
                        top = median[kind, size, clients] = runs[len(runs) // 2]
                        log("%s %d B x %d: %.0f appends/s, p99 %d us, %s CPU us a append, "
                            "%d errors, other load %.2f cores" % (
                                kind, size, clients, top["aps"], top["p99_us"], top["cpu_us"],
                                top["errors"], top["other_cores"]))
                times = figures["failover"][kind] = [
                    failover_seconds(group, cpus) for _ in range(args.failovers)]
                log("%s failover: %s s" % (kind, ", ".join("%.2f" % t for t in times)))
            finally:
                group.stop()
        rows = []
        empty = {"aps": 0, "p99_us": 0, "cpu_us": None}
        for size in SIZES:
            for clients in CLIENTS:
                ours = median.get(("ours", size, clients), empty)
                java = median.get(("java", size, clients), empty)
                rows.append(["%d B" % size, str(clients), rate(ours["aps"]), rate(java["aps"]),
                             ratio(ours["aps"], java["aps"]) if java["aps"] else "-",
                             "%.1f" % (ours["p99_us"] / 1000), "%.1f" % (java["p99_us"] / 1000),
                             "%s / %s" % (ours["cpu_us"], java["cpu_us"])])
                figures["rows"].append({"size": size, "clients": clients, "ours": ours,
                                        "java": java})
        table = format_table(["body", "clients", "ours/s", "Java/s", "ours/Java", "ours p99 ms",
                              "Java p99 ms", "CPU µs a append, ours / Java"], rows,
                             markdown=bool(args.markdown))
        failover = format_table(
            ["group", "leader killed → first append, median (s)", "each kill (s)",
             "idle CPU (cores)"],
            [[kind, "%.2f" % statistics.median(figures["failover"][kind]),
              ", ".join("%.2f" % t for t in figures["failover"][kind]),
              "%.3f" % figures["idle_cores"][kind]] for kind in kinds],
            markdown=bool(args.markdown))
    print(machine())
    print("other load during the rows: at most %.2f cores" % max(
        run["other_cores"] for run in median.values()))
    print(table)
    print(failover)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n\n" + failover + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
