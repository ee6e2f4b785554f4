"""DLedger group throughput and failover: three of our members (``twistd -n rmq-dledger``)
against three real DLedger 0.3.1.2 members, under the same load generator, in one run.

The generator (``benchmarks/java/.../DLedgerLoad.java``) is DLedger's own ``DLedgerClient``:
CLIENTS threads, each with one append outstanding (closed loop). For each body size (128 B,
1 KiB) and client count (1, 8, 32) it warms up, then measures appends/s and latency. Then
the leader is killed with -9 and the time until an append succeeds on the new leader is
measured (appends tried every 5 ms on every member). Both groups use DLedger's defaults
(heartbeats every 2 s, a leader lost after 3 missed), run in turn, and each row is run
``--repeat`` times per group, the best run reported.

On a machine with two or more CPUs the members are pinned to CPU 0 and the generator to
CPU 1 (``--no-pin`` lets the scheduler place them): the groups are compared on one core.

    python benchmarks/dledger_bench.py [--seconds 5] [--warmup 2] [--repeat 1] [--markdown out.md]
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))

from harness import (  # noqa: E402
    exit_on_sigterm, format_table, group_bench_arguments, java_classpath, java_command, log,
    machine, rate, ratio)
from support.dledgergroup import Group  # noqa: E402

LOAD_MAIN = "rmqproto.bench.DLedgerLoad"
SIZES = (128, 1024)
CLIENTS = (1, 8, 32)
SERVER_CPU, GENERATOR_CPU = 0, 1


def pin_tree(pid, cpu):
    """Move every thread of process ``pid`` onto ``cpu``."""
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            os.sched_setaffinity(int(task), {cpu})
        except (ProcessLookupError, FileNotFoundError):
            pass


def start_group(kind, workdir, pinned):
    group = Group(workdir / kind, java=("n0", "n1", "n2") if kind == "java" else ())
    group.start_all()
    if pinned:
        for daemon in group.daemons.values():
            pin_tree(daemon.popen.pid, SERVER_CPU)
    group.wait_leader()
    return group


def load(classpath, group, size, clients, warmup, seconds, pinned):
    command = java_command(classpath, LOAD_MAIN, group.group, group.peers, size, clients, warmup,
                           seconds, heap="256m")
    preexec = (lambda: os.sched_setaffinity(0, {GENERATOR_CPU})) if pinned else None
    result = subprocess.run(command, capture_output=True, text=True, preexec_fn=preexec,
                            timeout=120 + warmup + seconds)
    if result.returncode != 0:
        raise RuntimeError("load generator failed (%d):\n%s" % (result.returncode, result.stderr))
    return json.loads(result.stdout.strip().splitlines()[-1])


def failover_seconds(group):
    """Kill the leader with -9; seconds until an append succeeds on a new leader."""
    leader = group.wait_leader()
    survivors = [m for m in group.ids if m != leader]
    killed = time.monotonic()
    group.kill(leader)
    deadline = killed + 60
    while time.monotonic() < deadline:
        for member in survivors:
            answer = group.append(member, b"failover")
            if answer is not None and answer.code == 200:
                return time.monotonic() - killed
        time.sleep(0.005)
    raise RuntimeError("no append succeeded within 60 s of the leader's death")


def main():
    parser = group_bench_arguments(__doc__.split("\n\n")[0])
    args = parser.parse_args()
    exit_on_sigterm()
    pinned = not args.no_pin and (os.cpu_count() or 1) >= 2
    classpath = java_classpath()
    figures = {"rows": [], "failover": {}}
    with tempfile.TemporaryDirectory(prefix="dledger-bench-") as tmp:
        workdir = Path(tmp)
        best = {}
        for kind in ("ours", "java"):
            group = start_group(kind, workdir, pinned)
            try:
                for size in SIZES:
                    for clients in CLIENTS:
                        runs = [load(classpath, group, size, clients, args.warmup, args.seconds,
                                     pinned) for _ in range(args.repeat)]
                        top = max(runs, key=lambda run: run["aps"])
                        best[kind, size, clients] = top
                        log("%s %d B x %d: %.0f appends/s, p99 %d us" % (
                            kind, size, clients, top["aps"], top["p99_us"]))
                figures["failover"][kind] = failover_seconds(group)
                log("%s failover: %.2f s" % (kind, figures["failover"][kind]))
            finally:
                group.stop()
        rows = []
        for size in SIZES:
            for clients in CLIENTS:
                ours, java = best["ours", size, clients], best["java", size, clients]
                rows.append(["%d B" % size, str(clients), rate(ours["aps"]), rate(java["aps"]),
                             ratio(ours["aps"], java["aps"]), str(ours["p99_us"]),
                             str(java["p99_us"])])
                figures["rows"].append({"size": size, "clients": clients, "ours": ours,
                                        "java": java})
        table = format_table(["body", "clients", "ours/s", "Java/s", "ours/Java", "ours p99 µs",
                              "Java p99 µs"], rows, markdown=bool(args.markdown))
        failover = format_table(["group", "leader killed → first append (s)"], [
            [kind, "%.2f" % figures["failover"][kind]] for kind in ("ours", "java")],
            markdown=bool(args.markdown))
    print(machine())
    print(table)
    print(failover)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n\n" + failover + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
