"""Broker throughput and latency: ours (``twistd -n rmq-master``) against Apache RocketMQ's Java
broker 4.9.7, under the same load generators, in one run.

Both brokers run side by side for the whole benchmark with the same settings (one Java
``broker.conf``: ASYNC_MASTER, ASYNC_FLUSH, the same commit-log and consume-queue file sizes,
stores under a temporary directory) and register with the same NameServer (ours). Each has
its own topics of 8 queues. Three load generators drive them in turn:

- ``java``: ``BrokerLoad`` (``benchmarks/java``) on the real RocketMQ 4.9.8 client:
  ``DefaultMQProducer`` threads sending synchronously, ``DefaultMQPushConsumer``;
- ``python``: ``loadclient.py``, a Twisted client on ``rmqproto.remoting`` and the codecs
  (N threads = N requests in flight on one connection);
- ``raw``: ``rawclient.py``, a blocking socket without Twisted re-sending pre-encoded
  SEND_MESSAGE_V2 frames, N in flight on one connection: the cheapest client, so that the
  broker rather than the client sets the pace. Single sends only (a workload names the
  clients it is run with).

Workloads: sends of 128 B and 1 KiB bodies at 1, 8 and 32 producer threads; batch sends
(32 messages a request, 8 threads); consuming a backlog of 128 B messages from its first
offset. For every workload, client and broker a run warms up, then measures messages/s,
the mean and max latency of a send, the CPU the broker used ("CPU", in cores), the CPU the
load generator used ("gen CPU": near 1.00 on its own core means the generator, not the
broker, set the pace) and what everything else on the machine used ("other load": well
above 0 means a disturbed run, which is run again, up to three times ``--repeat`` runs;
the fastest run counts).

On a machine with two or more CPUs the brokers are pinned to CPU 0 and the load generators
to CPU 1 (``--no-pin`` lets the scheduler place them): the brokers are compared per core.

    python benchmarks/broker_bench.py            # full: a few minutes
    python benchmarks/broker_bench.py --quick    # a short smoke run of three workloads
    python benchmarks/broker_bench.py --profile prof.out   # also cProfile our broker
"""

import argparse
import io
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))

from harness import (  # noqa: E402
    _busy_seconds, exit_on_sigterm, format_table, java_classpath, java_command, log, machine,
    process_cpu_seconds, rate, ratio)
from loadclient import SendRequests  # noqa: E402
from namesrv_bench import DISTURBED, pin  # noqa: E402
from rmqproto.codec import headers as h  # noqa: E402
from rmqproto.codec.codes import RequestCode, ResponseCode  # noqa: E402
from support.daemons import _TWISTD, start_nameserver  # noqa: E402
from support.javapeers import JavaPeers, broker_port  # noqa: E402
from support.processes import ManagedProcess, wait_for_port  # noqa: E402
from support.syncclient import SyncClient, call, wait_until  # noqa: E402

LOAD_MAIN = "rmqproto.bench.BrokerLoad"
BROKER_CPU, LOAD_CPU = 0, 1
QUEUES = 8
BATCH = 32
#: Messages a consume run reads (the backlog is written once, before the first run).
BACKLOG = {"full": 100_000, "quick": 20_000}
PREFILL_BATCH = 64

#: Settings both brokers get (Java property names; the commit log's file size is Java's default).
BROKER_SETTINGS = dict(
    brokerClusterName="BenchCluster", brokerRole="ASYNC_MASTER", flushDiskType="ASYNC_FLUSH",
    brokerIP1="127.0.0.1", brokerIP2="127.0.0.1",
    mappedFileSizeCommitLog=1024 * 1024 * 1024, mappedFileSizeConsumeQueue=300_000 * 20)


#: The load generators: ``Loaders.command`` runs them.
CLIENTS = ("java", "python", "raw")
#: The generators that send only single messages (no batches, no consuming).
SINGLE_SEND_ONLY = ("raw",)
#: The modes that read a backlog: a push consumer, a lite pull consumer.
CONSUMES = ("consume", "litepull")


class Workload:
    """One row of the table: a send (``mode`` "send", or "async" for asynchronous sends,
    ``threads`` producer threads or sends in flight, ``batch`` messages a send) or a
    consume of the backlog (a mode of :data:`CONSUMES`); ``clients`` are the load
    generators that can run it; ``topic`` the kind of topic it runs on (a key of
    :meth:`Brokers.create_topics`' answer)."""

    def __init__(self, name, mode, body_size=128, threads=1, batch=1, topic=None):
        self.name, self.mode = name, mode
        self.body_size, self.threads, self.batch = body_size, threads, batch
        self.topic = topic or ("consume" if mode in CONSUMES else "send")
        single = mode == "send" and batch == 1
        self.clients = tuple(c for c in CLIENTS if single or c not in SINGLE_SEND_ONLY)

    def loader_args(self, topic, warmup, seconds, backlog):
        if self.mode in CONSUMES:
            return [self.mode, topic[self.topic], backlog, 60 + backlog / 2000]
        return [self.mode, topic[self.topic], self.threads, self.body_size, self.batch, warmup,
                seconds]


def _send(size, threads):
    return Workload("send %s, %d thread%s" % (_size(size), threads, "s" * (threads > 1)),
                    "send", size, threads)


def _size(size):
    return "%d B" % size if size < 1024 else "%d KiB" % (size // 1024)


WORKLOADS = [_send(size, threads) for size in (128, 1024) for threads in (1, 8, 32)] + [
    Workload("batch %d × %s, 8 threads" % (BATCH, _size(size)), "send", size, 8, BATCH)
    for size in (128, 1024)] + [Workload("consume 128 B", "consume")]
QUICK = ("send 128 B, 8 threads", "batch 32 × 128 B, 8 threads", "consume 128 B")


# ---------------------------------------------------------------- measuring a run

class LoadRun:
    """One load generator process: samples the broker's, its own and the machine's CPU when it
    prints ``measuring`` and ``measured``; its JSON report with those figures added.

    ``companion_pids`` are processes that serve with the broker (a SYNC_MASTER's slave):
    their CPU is reported as ``companion_cpu_s`` and not counted as other load."""

    def __init__(self, command, server_pid, pinned, timeout, env=None, companion_pids=()):
        self.command, self.server_pid, self.pinned = command, server_pid, pinned
        self.timeout, self.env, self.companion_pids = timeout, env, companion_pids

    def _sample(self, pid):
        return (time.monotonic(), process_cpu_seconds(self.server_pid), process_cpu_seconds(pid),
                _busy_seconds(), sum(map(process_cpu_seconds, self.companion_pids)))

    def run(self):
        preexec = (lambda: os.sched_setaffinity(0, {LOAD_CPU})) if self.pinned else None
        stderr = tempfile.TemporaryFile()
        process = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=stderr,
                                   text=True, preexec_fn=preexec, env=self.env)
        samples, lines = [], []
        deadline = time.monotonic() + self.timeout
        try:
            for line in process.stdout:
                line = line.strip()
                if line in ("measuring", "measured"):
                    samples.append(self._sample(process.pid))
                elif line:
                    lines.append(line)
                if time.monotonic() > deadline:
                    raise TimeoutError("load generator ran over %.0f s" % self.timeout)
            process.wait(timeout=max(1.0, deadline - time.monotonic()))
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        stderr.seek(0)
        if process.returncode != 0 or len(samples) != 2 or not lines:
            raise RuntimeError("load generator failed (%s):\n%s\n%s" % (
                process.returncode, "\n".join(lines), stderr.read().decode(errors="replace")))
        figures = json.loads(lines[-1])
        (t0, server0, own0, busy0, mate0), (t1, server1, own1, busy1, mate1) = samples
        window = t1 - t0
        figures["window_s"] = window
        figures["server_cpu_s"] = server1 - server0
        figures["generator_cpu_s"] = own1 - own0
        if self.companion_pids:
            figures["companion_cpu_s"] = mate1 - mate0
        figures["other_cpu_s"] = max(0.0, (busy1 - busy0) - (server1 - server0) - (own1 - own0)
                                     - (mate1 - mate0))
        # other load is judged over the CPU-sampled window (``seconds`` is the loader's own)
        figures["other_cores"] = figures["other_cpu_s"] / window if window > 0 else 0.0
        return figures


# ---------------------------------------------------------------- the brokers

def start_twistd(plugin, settings, workdir, profile=None, stops=None):
    """``twistd -n PLUGIN -c broker.conf`` with ``settings`` (Java property names, one of
    them ``listenPort``) written to ``workdir/broker.conf``, bound to 127.0.0.1, under
    cProfile saving to ``profile`` when given; waits until it listens (stops it if it
    does not). Its ``stop`` is appended to ``stops`` as soon as it runs."""
    conf = workdir / "broker.conf"
    conf.write_text("".join("%s=%s\n" % item for item in settings.items()))
    twistd = ["-n", "--pidfile="]
    if profile:
        twistd += ["--profile=%s" % profile, "--profiler=cprofile", "--savestats"]
    process = ManagedProcess([sys.executable, "-c", _TWISTD, *twistd, plugin,
                              "-c", str(conf), "--bindAddress", "127.0.0.1"],
                             workdir / ("%s.log" % plugin), cwd=workdir)
    if stops is not None:
        stops.append(process.stop)
    try:
        wait_for_port(int(settings["listenPort"]), 60, process)
    except BaseException:
        process.stop()
        raise
    return process


class Brokers:
    """Our NameServer, our broker and the Java broker under ``workdir``; ``stop()`` ends all.
    ``settings`` (Java property names) are what both brokers get besides their name, port,
    NameServer and store."""

    def __init__(self, workdir, pinned, profile=None, settings=BROKER_SETTINGS):
        self.workdir = workdir
        self.settings = settings
        self.stops = []
        self.started = {}  # name -> (pid, address)
        self.profile = profile
        try:
            namesrv, self.namesrv_addr = start_nameserver(self._dir("namesrv"))
            self.stops.append(namesrv.stop)
            self._start_ours()
            self._start_java()
            if pinned:
                for pid, _ in self.started.values():
                    pin(pid, BROKER_CPU)
        except BaseException:
            self.stop()
            raise

    def _dir(self, name):
        path = self.workdir / name
        path.mkdir(exist_ok=True)
        return path

    def _settings(self, name, port):
        store = self._dir(name) / "store"
        return dict(self.settings, brokerName="broker-" + name, listenPort=port,
                    namesrvAddr=self.namesrv_addr, storePathRootDir=store,
                    storePathCommitLog=store / "commitlog")

    def _start_ours(self):
        port = broker_port()
        process = start_twistd("rmq-master", self._settings("ours", port), self._dir("ours"),
                               self.profile, self.stops)
        self.started["ours"] = process.popen.pid, "127.0.0.1:%d" % port

    def _start_java(self):
        peers = JavaPeers(self._dir("java"))
        self.stops.append(peers.stop_all)
        port = broker_port()
        process = peers.broker("java", **self._settings("java", port))
        self.started["java"] = process.popen.pid, "127.0.0.1:%d" % port

    def create_topics(self, kinds=("send", "consume")):
        """``{broker: {kind: topic}}`` (``{"send": "BenchSend_ours", …}``), created and
        routed by the NameServer."""
        topics = {}
        for name, (_, address) in self.started.items():
            topics[name] = {kind: "Bench%s_%s" % (kind.capitalize(), name) for kind in kinds}
            for topic in topics[name].values():
                header = h.CreateTopicRequestHeader(
                    topic=topic, default_topic="TBW102", read_queue_nums=QUEUES,
                    write_queue_nums=QUEUES, perm=6, topic_filter_type="SINGLE_TAG")
                answer = call(address, RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
                if answer.code != ResponseCode.SUCCESS:
                    raise RuntimeError("creating %s on %s failed: %s" % (topic, name, answer.remark))
        for routed in topics.values():
            for topic in routed.values():
                wait_until(lambda: self._routed(topic), timeout=60)
        return topics

    def _routed(self, topic):
        answer = call(self.namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC,
                      h.GetRouteInfoRequestHeader(topic=topic).to_ext_fields())
        return answer.code == ResponseCode.SUCCESS

    def prefill(self, topics, count, body_size=128, kind="consume"):
        """Write ``count`` messages to each broker's topic of ``kind``, in batches."""
        for name, (_, address) in self.started.items():
            requests = SendRequests(topics[name][kind], QUEUES, body_size, PREFILL_BATCH)
            client = SyncClient(address, timeout=30)
            try:
                requests.send_sync(client, -(-count // PREFILL_BATCH), "prefilling %s" % name)
            finally:
                client.close()

    def stop(self):
        for stop in reversed(self.stops):
            stop()
        self.stops.clear()


# ---------------------------------------------------------------- the benchmark

class Loaders:
    """Command lines of the load generators (:data:`CLIENTS`)."""

    def __init__(self, workdir, namesrv_addr):
        self.workdir, self.namesrv_addr = workdir, namesrv_addr
        self.classpath = java_classpath()
        home = workdir / "java-client"
        home.mkdir(exist_ok=True)
        self.java_props = ["-Duser.home=%s" % home, "-Drocketmq.client.logRoot=%s" % home,
                           "-Drocketmq.client.logLevel=WARN"]

    def command(self, loader, args):
        if loader == "java":
            command = java_command(self.classpath, LOAD_MAIN, self.namesrv_addr, *args, heap="256m")
            return command[:1] + self.java_props + command[1:]
        script = {"python": "loadclient.py", "raw": "rawclient.py"}[loader]
        return [sys.executable, str(HERE / script), self.namesrv_addr, *map(str, args)]


def backlog_first(workloads):
    """``workloads`` in the order they run: the consumes first, since long send runs write
    enough for the brokers' disk-usage retention to delete the backlog's files."""
    return sorted(workloads, key=lambda w: w.mode not in CONSUMES)


def run(workloads, loaders_, warmup, seconds, repeat, reruns, pinned, backlog, profile=None):
    """``{workload: {loader: {broker: figures}}}``."""
    workdir = Path(tempfile.mkdtemp(prefix="broker-bench-"))
    try:
        brokers = Brokers(workdir, pinned, profile)
        try:
            loaders = Loaders(workdir, brokers.namesrv_addr)
            topics = brokers.create_topics()
            if any(w.mode == "consume" and set(w.clients) & set(loaders_) for w in workloads):
                log("writing a backlog of %d messages to each broker" % backlog)
                brokers.prefill(topics, backlog)
            results = run_workloads(brokers, loaders, topics, backlog_first(workloads),
                                    loaders_, warmup, seconds, repeat, reruns, pinned, backlog)
            results = {w.name: results[w.name] for w in workloads if w.name in results}
        finally:
            brokers.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return results


def run_workloads(brokers, loaders, topics, workloads, loaders_, warmup, seconds, repeat, reruns,
                  pinned, backlog=0, companions=None):
    """Each workload with each of ``loaders_`` that can run it (``workload.clients``) against
    each of ``brokers.started``; ``{workload: {loader: {broker: figures}}}``. ``companions``
    maps a broker's name to the pids serving with it (see :class:`LoadRun`)."""
    results = {}
    for workload in workloads:
        for loader in (c for c in loaders_ if c in workload.clients):
            def measure(pid, address):
                name = next(n for n, (_, a) in brokers.started.items() if a == address)
                args = workload.loader_args(topics[name], warmup, seconds, backlog)
                figures = LoadRun(loaders.command(loader, args), pid, pinned,
                                  timeout=120 + warmup + seconds + backlog / 1000,
                                  companion_pids=(companions or {}).get(name, ())).run()
                return figures

            label = "%s, %s client" % (workload.name, loader)
            best = best_runs(brokers.started, measure, label, repeat, reruns)
            results.setdefault(workload.name, {})[loader] = best
    return results


def best_runs(started, measure, label, repeat, reruns):
    """``{broker: figures}``: the fastest of ``repeat`` runs of each broker, taking turns,
    with the median ``tps`` of the runs that count as ``median_tps`` (a JVM's rare fast or
    slow turn moves the best of a few turns, not the median).

    Each turn starts with the next broker, so none always runs first (the first run after
    a quiet spell can meet a cold page cache and cold guest memory). A run during which
    other processes used more than ``DISTURBED`` cores is run again, ``reruns`` times at
    most per broker; with none undisturbed the fastest disturbed one counts.
    """
    runs = {name: [] for name in started}
    turn = 0
    while True:
        waiting = [name for name, done in runs.items()
                   if sum(f["other_cores"] <= DISTURBED for f in done) < repeat
                   and len(done) < repeat + reruns]
        if not waiting:
            break
        turn += 1
        first = (turn - 1) % len(waiting)
        for name in waiting[first:] + waiting[:first]:
            figures = measure(*started[name])
            runs[name].append(figures)
            log("%-4s %s, turn %d: %s" % (name, label, turn, _brief(figures)))
    best = {}
    for name, done in runs.items():
        counted = [f for f in done if f["other_cores"] <= DISTURBED] or done
        best[name] = dict(max(counted, key=lambda f: f["tps"]),
                          median_tps=statistics.median(f["tps"] for f in counted))
    return best


def _brief(figures):
    return ", ".join("%s=%s" % (k, round(v, 3) if isinstance(v, float) else v)
                     for k, v in figures.items())


def _ms(figures, key):
    return "-" if key not in figures else "%.2f" % (figures[key] / 1000)


def _cores(figures, key):
    """CPU seconds of ``key`` over the measured window, in cores."""
    return "%.2f" % (figures[key] / figures["window_s"])


def table(results, markdown=False, companion=None):
    """The runs' figures, one row per workload and client; with ``companion`` (a name such
    as "slave") a column of each side's ``companion_cpu_s`` too."""
    columns = ["msg/s", "avg ms", "max ms", "CPU", "gen CPU"]
    if companion:
        columns.append(companion + " CPU")
    rows = []
    for workload, by_loader in results.items():
        for loader, by_broker in by_loader.items():
            ours, java = by_broker.get("ours"), by_broker.get("java")
            row = [workload, loader]
            for figures in (ours, java):
                if figures is None:
                    row += ["-"] * len(columns)
                    continue
                row += [rate(figures["tps"]), _ms(figures, "mean_us"), _ms(figures, "max_us"),
                        _cores(figures, "server_cpu_s"), _cores(figures, "generator_cpu_s")]
                if companion:
                    row.append(_cores(figures, "companion_cpu_s"))
            row.append(ratio(ours and ours["tps"], java and java["tps"]))
            row.append(ratio(ours and ours["median_tps"], java and java["median_tps"]))
            row.append("%.2f" % max(f["other_cores"] for f in (ours, java) if f))
            rows.append(row)
    headers = (["workload", "client"] + ["ours " + c for c in columns]
               + ["Java " + c for c in columns] + ["ours/Java", "medians ours/Java", "other load"])
    return format_table(headers, rows, markdown)


def errors(results):
    return ["%s, %s client, %s broker: %d failed sends" % (workload, loader, broker, f["errors"])
            for workload, by_loader in results.items() for loader, by_broker in by_loader.items()
            for broker, f in by_broker.items() if f["errors"]]


def print_profile(path, limit=30):
    stats = pstats.Stats(str(path), stream=io.StringIO())
    stats.sort_stats("tottime").print_stats(limit)
    print(stats.stream.getvalue())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="three workloads, 0.5 s warm-up, 1.5 s measured, a smaller backlog")
    parser.add_argument("--seconds", type=float, help="measuring time per run (default 3)")
    parser.add_argument("--warmup", type=float, help="warm-up time per run (default 1.5)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="undisturbed runs per workload, client and broker; the best counts")
    parser.add_argument("--reruns", type=int,
                        help="times a disturbed run may be run again (default: 2 × --repeat, "
                             "0 with --quick)")
    parser.add_argument("--workload", action="append", choices=[w.name for w in WORKLOADS],
                        metavar="NAME", help="run only this workload (repeatable)")
    parser.add_argument("--client", choices=CLIENTS, action="append",
                        help="only this load generator (repeatable; default all; raw runs "
                             "single sends only)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin brokers and generators")
    parser.add_argument("--profile", type=Path,
                        help="run our broker under cProfile, save the stats there and print them")
    parser.add_argument("--markdown", type=Path, help="also write the table there as markdown")
    parser.add_argument("--json", type=Path, help="also write the raw figures there")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    mode = "quick" if args.quick else "full"
    names = args.workload or (QUICK if args.quick else [w.name for w in WORKLOADS])
    workloads = [w for w in WORKLOADS if w.name in names]
    warmup = args.warmup if args.warmup is not None else (0.5 if args.quick else 1.5)
    seconds = args.seconds if args.seconds is not None else (1.5 if args.quick else 3.0)
    pinned = not args.no_pin and len(os.sched_getaffinity(0)) >= 2
    profile = args.profile.resolve() if args.profile else None
    started = time.monotonic()
    reruns = args.reruns if args.reruns is not None else (0 if args.quick else 2 * args.repeat)
    results = run(workloads, args.client or list(CLIENTS), warmup, seconds, args.repeat,
                  reruns, pinned, BACKLOG[mode], profile)
    info = machine()
    placement = ("brokers pinned to CPU %d, load generators to CPU %d" % (BROKER_CPU, LOAD_CPU)
                 if pinned else "not pinned")
    print("\n".join([table(results)] + ["WARNING: " + line for line in errors(results)] + [
        "", "%(cpus)d CPUs, %(cpu)s; %(python)s; %(java)s" % info, placement]))
    log("took %.0f s" % (time.monotonic() - started))
    if args.markdown:
        args.markdown.write_text(table(results, markdown=True) + "\n")
    if args.json:
        figures = dict(machine=info, pinned=pinned, mode=mode, warmup=warmup, seconds=seconds,
                       results=results)
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    if profile:
        print_profile(profile)


if __name__ == "__main__":
    main()
