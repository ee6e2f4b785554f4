"""NameServer throughput: ours (``twistd -n rmq-nameserver``) against Apache RocketMQ's Java
NameServer 4.9.7, under the same load generator, in one run.

The generator (``benchmarks/java/.../NamesrvLoad.java``) opens N connections, each with one
request outstanding (closed loop), first registering broker-a with 100 topics over a
connection it keeps open. It runs each operation (GET_ROUTEINFO_BY_TOPIC, REGISTER_BROKER)
with 1, 8 and 64 clients for a warm-up, then measures requests/s, mean and p99 latency,
the CPU the server used meanwhile ("CPU", in cores) and the CPU everything else on the
machine used ("other load": anything well above 0 means the run was disturbed). Both
servers run side by side and take turns; each configuration is run ``--repeat`` times
per server and the best run is reported. A run disturbed by other processes (more than
0.25 cores of other load) is run again, up to three times ``--repeat`` runs in all.

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

from harness import (  # noqa: E402
    exit_on_sigterm, format_table, java_classpath, java_command, log, machine, rate, ratio)
from support.daemons import start_nameserver  # noqa: E402
from support.javapeers import JavaPeers, free_port  # noqa: E402

LOAD_MAIN = "rmqproto.bench.NamesrvLoad"
OPERATIONS = {"route": "GET_ROUTEINFO_BY_TOPIC", "register": "REGISTER_BROKER"}
CLIENTS = (1, 8, 64)
TOPICS = 100
SERVER_CPU, GENERATOR_CPU = 0, 1
#: Cores other processes may use during a run before it counts as disturbed.
DISTURBED = 0.25


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


def run(servers, operations, client_counts, warmup, seconds, repeat, pinned):
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
        for operation in operations:
            for clients in client_counts:
                def measure(pid, address):
                    return load(classpath, address, operation, clients, warmup, seconds, pid,
                                pinned)

                label = "%s %d clients" % (operation, clients)
                for name, figures in _best_runs(started, repeat, measure, label).items():
                    results.setdefault(name, {}).setdefault(operation, {})[clients] = figures
    finally:
        for stop in reversed(stops):
            stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return results


def _best_runs(started, repeat, measure, label):
    """``{server: figures}``: the fastest of ``repeat`` undisturbed runs of each server.

    Servers take turns. A run during which other processes used more than
    ``DISTURBED`` cores does not count and is run again, up to ``3 * repeat`` turns in all;
    a server with no undisturbed run keeps its fastest disturbed one.
    """
    clean = {name: [] for name in started}
    disturbed = {name: [] for name in started}
    for turn in range(3 * repeat):
        waiting = [name for name in started if len(clean[name]) < repeat]
        if not waiting:
            break
        for name in waiting:
            figures = measure(*started[name])
            other = figures["other_cpu_s"] / figures["seconds"]
            (disturbed if other > DISTURBED else clean)[name].append(figures)
            log("%-4s %s, turn %d: %s" % (name, label, turn + 1, figures))
    return {name: max(clean[name] or disturbed[name], key=lambda f: f["rps"])
            for name in started}


def table(results, markdown=False):
    rows = []
    for operation, code in OPERATIONS.items():
        for clients in sorted({c for r in results.values() for c in r.get(operation, {})}):
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
                        help="undisturbed runs per configuration and server; the best is reported")
    parser.add_argument("--server", choices=sorted(SERVERS), action="append",
                        help="benchmark only this server (repeatable; default: both)")
    parser.add_argument("--operation", choices=list(OPERATIONS), action="append",
                        help="run only this request (repeatable; default: both)")
    parser.add_argument("--clients", type=int, action="append",
                        help="run only with this many clients (repeatable; default: 1, 8, 64)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin server and generator")
    parser.add_argument("--markdown", type=Path, help="also write the table there as markdown")
    parser.add_argument("--json", type=Path, help="also write the raw figures there")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    pinned = not args.no_pin and len(os.sched_getaffinity(0)) >= 2
    started = time.monotonic()
    results = run(args.server or list(SERVERS), args.operation or list(OPERATIONS),
                  args.clients or CLIENTS, args.warmup, args.seconds, args.repeat, pinned)
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
