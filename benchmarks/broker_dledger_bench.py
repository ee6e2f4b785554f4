"""Broker groups on a DLedger commit log: three Java 4.9.7 brokers against three of ours
(``twistd -n rmq-master -c broker.conf`` with ``enableDLegerCommitLog=true``), in one run.

Each group is started from the same ``broker.conf`` (``support.brokergroup``: DLedger's
defaults, 1 MiB data files, stores under a temporary directory), registers with our
NameServer and gets a topic of 8 queues. The load generator is ``BrokerLoad``
(``benchmarks/java``, the real RocketMQ 4.9.8 client): THREADS threads of synchronous sends,
no retries, no compression. After ``--jit`` seconds of load that are not reported (the
brokers' JIT warm-up), for each body size (128 B, 1 KiB) and thread count (1, 8, 32) it
warms up, then measures messages/s and the mean and p99 latency of a send; every row is run
``--repeat`` times, the best run reported. Then a Java producer (``SendStorm``, one thread,
routes refreshed every second, as both groups get) sends, the leader is killed with -9, and
the time until the producer's first SEND_OK stored by another broker is measured (the
producer's output is watched every 5 ms).

Our group runs when our broker takes a DLedger commit log (``ours_ready``); without it the
table has the Java figures alone. On a machine with two or more CPUs the brokers are
pinned to CPU 0 and the generator to CPU 1 (``--no-pin`` lets the scheduler place them).

    python benchmarks/broker_dledger_bench.py [--seconds 5] [--warmup 2] [--jit 10] [--markdown out.md]
                                              [--only ours]
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from harness import (  # noqa: E402
    exit_on_sigterm, format_table, group_bench_arguments, java_classpath, java_command, log,
    machine, rate, ratio)
from namesrv_bench import pin  # noqa: E402
from rmqproto.codec import message as msg  # noqa: E402
from support.brokergroup import broker_group, ours_ready  # noqa: E402
from support.hapair import Storm  # noqa: E402

LOAD_MAIN = "rmqproto.bench.BrokerLoad"
SIZES = (128, 1024)
THREADS = (1, 8, 32)
TOPIC = "BenchDLedger"
BROKER_CPU, LOAD_CPU = 0, 1


def load(classpath, group, size, threads, warmup, seconds, pinned):
    """One ``BrokerLoad send`` run against the group's NameServer; its JSON figures."""
    command = java_command(classpath, LOAD_MAIN, group.namesrv_addr, "send", TOPIC, threads,
                           size, 1, warmup, seconds, heap="256m")
    preexec = (lambda: os.sched_setaffinity(0, {LOAD_CPU})) if pinned else None
    result = subprocess.run(command, capture_output=True, text=True, preexec_fn=preexec,
                            timeout=120 + warmup + seconds)
    if result.returncode != 0:
        raise RuntimeError("load generator failed (%d):\n%s" % (result.returncode, result.stderr))
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1])


def failover_seconds(group):
    """Kill the leader with -9 while a Java producer sends; seconds until the producer's first
    SEND_OK stored by another broker."""
    storm = Storm(group.java_peers, group.namesrv_addr, TOPIC, 120, 1, poll_ms=1000)
    try:
        storm.wait_acks(50)
        leader = group.wait_master()
        killed_port = group.listen_ports[leader]
        seen = len(storm.acks())
        start = time.monotonic()
        group.kill(leader)
        while time.monotonic() - start < 90:
            acks = storm.acks()[seen:]
            if any(msg.decode_message_id(a.offset_msg_id)[0][1] != killed_port for a in acks):
                return time.monotonic() - start
            time.sleep(0.005)
        raise RuntimeError("no SEND_OK on a new leader within 90 s of the leader's death")
    finally:
        storm.process.stop()


def measure_group(kind, workdir, classpath, args, pinned):
    """``({(size, threads): figures}, failover seconds)`` of a group of three ``kind``."""
    best = {}
    with broker_group(workdir / kind, (kind,) * 3) as group:
        if pinned:
            for process in group.daemons.values():
                pin(process.popen.pid, BROKER_CPU)
        group.wait_master()
        group.create_topics(TOPIC, queues=8)
        group.wait_synced(TOPIC)
        load(classpath, group, SIZES[-1], THREADS[1], 0, args.jit, pinned)  # JIT warm-up
        for size in SIZES:
            for threads in THREADS:
                runs = [load(classpath, group, size, threads, args.warmup, args.seconds, pinned)
                        for _ in range(args.repeat)]
                best[size, threads] = top = max(runs, key=lambda run: run["tps"])
                log("%s %d B x %d: %.0f msg/s, mean %.0f us, p99 %.0f us, %d errors" % (
                    kind, size, threads, top["tps"], top["mean_us"], top["p99_us"],
                    top["errors"]))
        failover = failover_seconds(group)
        log("%s failover: %.2f s" % (kind, failover))
    return best, failover


def tables(results, markdown):
    kinds = list(results)
    rows = []
    for size in SIZES:
        for threads in THREADS:
            figures = [results[k][0][size, threads] for k in kinds]
            row = ["%d B" % size if size < 1024 else "1 KiB", str(threads)]
            row += [rate(f["tps"]) for f in figures]
            if len(kinds) == 2:
                row.append(ratio(figures[1]["tps"], figures[0]["tps"]))
            row += ["%.0f / %.0f" % (f["mean_us"], f["p99_us"]) for f in figures]
            rows.append(row)
    headers = ["body", "threads"] + ["%s msg/s" % k for k in kinds]
    headers += ["ours/Java"] if len(kinds) == 2 else []
    headers += ["%s mean / p99 µs" % k for k in kinds]
    failover = format_table(["group", "leader killed → first SEND_OK on the new leader (s)"],
                            [[k, "%.2f" % results[k][1]] for k in kinds], markdown=markdown)
    return format_table(headers, rows, markdown=markdown) + "\n\n" + failover


def main():
    parser = group_bench_arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--jit", type=int, default=10,
                        help="seconds of load before the first row (the brokers' JIT warm-up)")
    parser.add_argument("--only", choices=("java", "ours"),
                        help="run one group alone (no ratio: for iterating on one side)")
    args = parser.parse_args()
    exit_on_sigterm()
    pinned = not args.no_pin and (os.cpu_count() or 1) >= 2
    classpath = java_classpath()
    kinds = ["java"] + (["ours"] if ours_ready() else [])
    if args.only:
        kinds = [k for k in kinds if k == args.only]
    results = {}
    with tempfile.TemporaryDirectory(prefix="broker-dledger-bench-") as tmp:
        for kind in kinds:
            results[kind] = measure_group(kind, Path(tmp), classpath, args, pinned)
    print(machine())
    print(tables(results, markdown=False))
    if args.markdown:
        Path(args.markdown).write_text(tables(results, markdown=True) + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps({k: {"rows": [
            {"size": s, "threads": t, **f} for (s, t), f in rows.items()], "failover_s": fo}
            for k, (rows, fo) in results.items()}, indent=2))


if __name__ == "__main__":
    main()
