"""NameServer throughput: ours (``twistd -n rmq-nameserver``) against Apache RocketMQ's Java
NameServer 4.9.7, under the same load generator, in one run.

The generator (``benchmarks/java/.../NamesrvLoad.java``) opens N connections, each with one
request outstanding (closed loop), first registering broker-a with 100 topics over a
connection it keeps open. It runs each operation (GET_ROUTEINFO_BY_TOPIC, REGISTER_BROKER)
with 1, 8 and 64 clients for a warm-up, then measures requests/s, mean and p99 latency,
the CPU the server used meanwhile ("CPU", in cores) and the CPU everything else on the
machine used ("other load": anything well above 0 means the run was disturbed). Both
servers run side by side and take turns; each configuration is run ``--repeat`` times
per server and the best run is reported.

On a machine with two or more CPUs the server is pinned to CPU 0 and the generator to
CPU 1 (``--no-pin`` lets the scheduler place them), so each server gets one core.

    python benchmarks/namesrv_bench.py [--seconds 5] [--warmup 2] [--repeat 2] [--markdown out.md]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))

from harness import format_table, java_classpath, java_command, log, machine, rate, ratio  # noqa: E402
from support.daemons import start_nameserver  # noqa: E402
from support.javapeers import JavaPeers, free_port  # noqa: E402

LOAD_MAIN = "rmqproto.bench.NamesrvLoad"
OPERATIONS = {"route": "GET_ROUTEINFO_BY_TOPIC", "register": "REGISTER_BROKER"}
CLIENTS = (1, 8, 64)
TOPICS = 100
SERVER_CPU, GENERATOR_CPU = 0, 1


def pin(pid, cpu):
    """Move every thread of process ``pid`` onto ``cpu`` (threads started later inherit it)."""
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            os.sched_setaffinity(int(task), {cpu})
        except ProcessLookupError:
            pass


def load(classpath, address, operation, clients, warmup, seconds, server_pid, pinned):
    """Run the generator once against ``address``; its JSON figures."""
    command = java_command(classpath, LOAD_MAIN, address, operation, clients, warmup, seconds,
                           TOPICS, server_pid, os.sysconf("SC_CLK_TCK"), heap="256m")
    preexec = (lambda: os.sched_setaffinity(0, {GENERATOR_CPU})) if pinned else None
    result = subprocess.run(command, capture_output=True, text=True, preexec_fn=preexec,
                            timeout=60 + warmup + seconds)
    if result.returncode != 0:
        raise RuntimeError("load generator failed (%d):\n%s" % (result.returncode, result.stderr))
    return json.loads(result.stdout.strip().splitlines()[-1])


def ours(workdir):
    """Start our NameServer; ``(pid, address, stop)``."""
    daemon, address = start_nameserver(workdir)
    return daemon.popen.pid, address, daemon.stop


def java(workdir):
    """Start the Java NameServer 4.9.7; ``(pid, address, stop)``."""
    peers = JavaPeers(workdir)
    port = free_port()
    process = peers.namesrv(port)
    return process.popen.pid, "127.0.0.1:%d" % port, peers.stop_all


SERVERS = {"ours": ours, "java": java}


def run(servers, warmup, seconds, repeat, pinned):
    """``{server: {operation: {clients: figures}}}``, the best of ``repeat`` runs each.

    Both servers stay up for the whole benchmark and take turns for each configuration,
    so that anything else loading the machine meanwhile hits both alike.
    """
    classpath = java_classpath()
    results = {}
    stops = []
    workdir = Path(tempfile.mkdtemp(prefix="namesrv-bench-"))
    try:
        started = {}
        for name in servers:
            (workdir / name).mkdir()
            pid, address, stop = SERVERS[name](workdir / name)
            stops.append(stop)
            if pinned:
                pin(pid, SERVER_CPU)
            started[name] = pid, address
        time.sleep(1)  # let the servers finish starting up
        for operation in OPERATIONS:
            for clients in CLIENTS:
                for attempt in range(repeat):
                    for name, (pid, address) in started.items():
                        figures = load(classpath, address, operation, clients, warmup, seconds,
                                       pid, pinned)
                        log("%-4s %-8s %2d clients #%d: %s" % (name, operation, clients,
                                                               attempt + 1, figures))
                        best = results.setdefault(name, {}).setdefault(operation, {})
                        if clients not in best or figures["rps"] > best[clients]["rps"]:
                            best[clients] = figures
    finally:
        for stop in reversed(stops):
            stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return results


def table(results, markdown=False):
    rows = []
    for operation, code in OPERATIONS.items():
        for clients in CLIENTS:
            ours_ = results.get("ours", {}).get(operation, {}).get(clients)
            java_ = results.get("java", {}).get(operation, {}).get(clients)
            row = [code, str(clients)]
            for figures in (ours_, java_):
                if figures is None:
                    row += ["-"] * 4
                    continue
                row += [rate(figures["rps"]), "%.0f" % figures["mean_us"],
                        "%.0f" % figures["p99_us"], _cpu(figures)]
            row.append(ratio(ours_ and ours_["rps"], java_ and java_["rps"]))
            row.append("%.2f" % max(f["other_cpu_s"] / f["seconds"] for f in (ours_, java_) if f))
            rows.append(row)
    headers = ["request", "clients", "ours req/s", "ours mean µs", "ours p99 µs", "ours CPU",
               "Java req/s", "Java mean µs", "Java p99 µs", "Java CPU", "ours/Java",
               "other load"]
    return format_table(headers, rows, markdown)


def _cpu(figures):
    """The server's CPU use while measuring, in cores (1.00 = one core busy)."""
    return "%.2f" % (figures["server_cpu_s"] / figures["seconds"])


def errors(results):
    return ["%s %s %d clients: %d non-SUCCESS answers" % (server, op, clients, f["errors"])
            for server, ops in results.items() for op, by_clients in ops.items()
            for clients, f in by_clients.items() if f["errors"]]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="measuring time per run")
    parser.add_argument("--warmup", type=float, default=2.0, help="warm-up time per run")
    parser.add_argument("--repeat", type=int, default=2,
                        help="runs per configuration and server; the best one is reported")
    parser.add_argument("--server", choices=sorted(SERVERS), action="append",
                        help="benchmark only this server (repeatable; default: both)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin server and generator")
    parser.add_argument("--markdown", type=Path, help="also write the table there as markdown")
    parser.add_argument("--json", type=Path, help="also write the raw figures there")
    args = parser.parse_args(argv)
    pinned = not args.no_pin and len(os.sched_getaffinity(0)) >= 2
    started = time.monotonic()
    results = run(args.server or list(SERVERS), args.warmup, args.seconds, args.repeat, pinned)
    print(table(results))
    for line in errors(results):
        print("WARNING:", line)
    info = machine()
    print("\n%(cpus)d CPUs, %(cpu)s; %(python)s; %(java)s" % info)
    print("server pinned to CPU %d, generator to CPU %d" % (SERVER_CPU, GENERATOR_CPU)
          if pinned else "not pinned")
    log("took %.0f s" % (time.monotonic() - started))
    if args.markdown:
        args.markdown.write_text(table(results, markdown=True) + "\n")
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "pinned": pinned, "results": results},
                                        indent=2) + "\n")


if __name__ == "__main__":
    main()
