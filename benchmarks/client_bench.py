"""Our Python client against the Java 4.9.8 client, both against our broker, in one run.

Our NameServer and broker (``twistd -n rmq-master``, the broker benchmark's settings) serve
two load generators in turn:

- ``java``: ``BrokerLoad`` (``benchmarks/java``) on the RocketMQ 4.9.8 client. ``send``:
  THREADS threads each sending synchronously in a closed loop; ``async``: THREADS
  ``send(Message, SendCallback)`` in flight; ``consume``: a ``DefaultMQPushConsumer``
  (one pull in flight per queue) reading a backlog, its listener counting; ``litepull``:
  a ``DefaultLitePullConsumer`` reading it with ``poll()``.
- ``python``: this file run as ``client_bench.py load …``, our client with the Twisted
  transport (:mod:`rmqproto.client.deferred`) on rmqproto's reactor. ``send``: THREADS
  ``Producer.send`` calls in flight, the next made as one answers (the Twisted client has
  no threads: its sends in flight are what Java's sending threads are); ``async``:
  THREADS ``Producer.send_async``; ``consume``: a ``PushConsumer`` whose listener counts;
  ``litepull``: a ``LitePullConsumer`` and ``poll()``.

Both sides alike: a new ``Message(topic, body)`` a send, no retries
(``retryTimesWhenSendFailed`` and ``retryTimesWhenSendAsyncFailed`` 0), no compression,
consumers of a new group from the first offset with their defaults (push: 32 messages a
pull, one message a listener call; lite pull: 10 messages a pull). A topic of 8 queues for the sends and one for each consumed body size, its backlog
written before the first run. Each run warms up, then measures messages/s, the mean
latency of a send, the CPU the generator used ("gen CPU": the client's cost; near 1.00 on
its own core means the client set the pace) and the broker's; "other load" as in the
broker benchmark (a disturbed run is run again). The broker is pinned to CPU 0, the
generators to CPU 1 (``--no-pin``: not pinned).

    python benchmarks/client_bench.py                  # every workload: about 3 minutes
    python benchmarks/client_bench.py --quick          # three workloads, short runs
    python benchmarks/client_bench.py --client python --workload "push consumer 128 B" \\
        --profile prof/                                # cProfile our client's runs
"""

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from broker_bench import (  # noqa: E402
    CONSUMES, Brokers, Loaders, Workload, _cores, _ms, _size, backlog_first, errors,
    print_profile, run_workloads)
from harness import (  # noqa: E402
    exit_on_sigterm, format_table, group_bench_arguments, log, machine, rate, ratio)
from loadclient import announce, closed_loop  # noqa: E402

CLIENTS = ("python", "java")
#: The topics: sends, and a backlog of each consumed body size.
TOPIC_KINDS = {"send": None, "consume": 128, "consume1k": 1024}
BACKLOG = {"full": 50_000, "quick": 10_000}
ASYNC_IN_FLIGHT = 32


WORKLOADS = [
    Workload("sync send %s, %d thread%s" % (_size(size), threads, "s" * (threads > 1)),
             "send", size, threads)
    for size in (128, 1024) for threads in (1, 8)] + [
    Workload("async send %s, %d in flight" % (_size(size), ASYNC_IN_FLIGHT), "async", size,
             ASYNC_IN_FLIGHT) for size in (128, 1024)] + [
    Workload("%s %s" % (what, _size(size)), mode, size, topic=kind)
    for mode, what in (("consume", "push consumer"), ("litepull", "lite pull consumer"))
    for kind, size in TOPIC_KINDS.items() if size]
QUICK = ("sync send 128 B, 8 threads", "async send 128 B, 32 in flight",
         "push consumer 128 B", "lite pull consumer 128 B")


class OurBroker(Brokers):
    """Our NameServer and broker as the broker benchmark starts them."""

    def _start_java(self):
        """No Java broker: both clients load ours."""


class ClientLoaders(Loaders):
    """``java`` as in the broker benchmark; ``python`` is this file's :func:`load`, under
    cProfile writing into the directory ``profile`` when given."""

    def __init__(self, workdir, namesrv_addr, profile=None):
        super().__init__(workdir, namesrv_addr)
        self.profile = profile

    def command(self, loader, args):
        if loader != "python":
            return super().command(loader, args)
        profiling = []
        if self.profile:
            name = "_".join(str(a) for a in args[:4]) + ".prof"
            profiling = ["-m", "cProfile", "-o", str(self.profile / name)]
        return [sys.executable, *profiling, str(Path(__file__).resolve()), "load",
                self.namesrv_addr, *map(str, args)]


# ---------------------------------------------------------------- the python load generator

def _producer(reactor, namesrv):
    from rmqproto.client import deferred

    return deferred.Producer(
        reactor, namesrvAddr=namesrv, producerGroup="bench_producer",
        instanceName="bench-%d" % os.getpid(), retryTimesWhenSendFailed=0,
        retryTimesWhenSendAsyncFailed=0, compressMsgBodyOverHowmuch=2**31 - 1)


async def send(reactor, namesrv, mode, topic, in_flight, body_size, batch, warmup, seconds):
    """Keep ``in_flight`` sends (``mode`` "send" or "async") going; BrokerLoad's report."""
    from rmqproto.client import Message, SendStatus

    if batch != 1:
        raise SystemExit("the client benchmark sends single messages")
    producer = _producer(reactor, namesrv)
    sending = producer.send if mode == "send" else producer.send_async
    body = b"x" * body_size

    def send_one():
        return sending(Message(topic, body)).addCallback(
            lambda result: result.status is not SendStatus.SEND_OK)

    report = await closed_loop(reactor, send_one, in_flight, warmup, seconds, batch)
    await producer.close()
    return report


async def consume(reactor, namesrv, topic, expected, timeout):
    """Consume ``expected`` messages of ``topic`` from its first offset; BrokerLoad's report."""
    from twisted.internet import defer

    from rmqproto.client import ConsumeStatus, deferred

    consumer = deferred.PushConsumer(
        reactor, namesrvAddr=namesrv, consumerGroup="bench_consumer_%d" % time.monotonic_ns(),
        instanceName="bench-%d" % os.getpid(), consumeFromWhere="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    state = {"received": 0, "first": None, "last": None}
    done = defer.Deferred()

    def listener(messages):
        now = time.perf_counter()
        if state["first"] is None:
            state["first"] = now
            announce("measuring")
        state["received"] += len(messages)
        state["last"] = now
        if state["received"] >= expected and not done.called:
            done.callback(None)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer.register_message_listener(listener)
    await consumer.start()
    timer = reactor.callLater(timeout, lambda: done.called or done.callback(None))
    await done
    if timer.active():
        timer.cancel()
    announce("measured")
    await consumer.shutdown()
    return _consumed(state["received"], state["first"], state["last"])


async def lite_pull(reactor, namesrv, topic, expected, timeout):
    """Poll ``expected`` messages of ``topic`` from its first offset; BrokerLoad's report."""
    from rmqproto.client import deferred

    consumer = deferred.LitePullConsumer(
        reactor, namesrvAddr=namesrv, consumerGroup="bench_consumer_%d" % time.monotonic_ns(),
        instanceName="bench-%d" % os.getpid(), consumeFromWhere="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    deadline = reactor.seconds() + timeout
    received, first, last = 0, None, None
    while received < expected and reactor.seconds() < deadline:
        messages = await consumer.poll(timeout=1)
        if messages:
            last = time.perf_counter()
            if first is None:
                first = last
                announce("measuring")
            received += len(messages)
    announce("measured")
    await consumer.close()
    return _consumed(received, first, last)


def _consumed(received, first, last):
    """The JSON report of a consume: ``received`` messages from ``first`` to ``last`` (s)."""
    seconds = max(1e-9, (last or 0) - (first or 0))
    return {"messages": received, "seconds": seconds, "rps": received / seconds,
            "tps": received / seconds, "errors": 0}


def load(argv):
    """The ``python`` generator, with BrokerLoad's arguments and output:
    ``NAMESRV send|async TOPIC IN_FLIGHT BODY_SIZE BATCH WARMUP_S MEASURE_S`` or
    ``NAMESRV consume|litepull TOPIC EXPECTED TIMEOUT_S``."""
    from rmqproto import eventloop

    eventloop.install_default()
    from twisted.internet import defer, task

    async def main(reactor, namesrv, mode, topic, *args):
        if mode in ("send", "async"):
            in_flight, body_size, batch = map(int, args[:3])
            report = await send(reactor, namesrv, mode, topic, in_flight, body_size, batch,
                                *map(float, args[3:5]))
        elif mode in CONSUMES:
            reader = consume if mode == "consume" else lite_pull
            report = await reader(reactor, namesrv, topic, int(args[0]), float(args[1]))
        else:
            raise SystemExit("mode must be send, async, consume or litepull: %s" % mode)
        print(json.dumps(report), flush=True)

    task.react(lambda reactor, *a: defer.Deferred.fromCoroutine(main(reactor, *a)), argv)


# ---------------------------------------------------------------- the benchmark

def run(workloads, clients, warmup, seconds, repeat, reruns, pinned, backlog, profile=None):
    """``{workload: {client: {"ours": figures}}}``."""
    workdir = Path(tempfile.mkdtemp(prefix="client-bench-"))
    try:
        broker = OurBroker(workdir, pinned)
        try:
            loaders = ClientLoaders(workdir, broker.namesrv_addr, profile)
            topics = broker.create_topics(tuple(TOPIC_KINDS))
            for kind in sorted({w.topic for w in workloads if w.mode in CONSUMES}):
                log("writing a backlog of %d messages to %s" % (backlog, kind))
                broker.prefill(topics, backlog, TOPIC_KINDS[kind], kind)
            results = run_workloads(broker, loaders, topics, backlog_first(workloads), clients,
                                    warmup, seconds, repeat, reruns, pinned, backlog)
        finally:
            broker.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return {w.name: results[w.name] for w in workloads if w.name in results}


def table(results, markdown=False):
    """One row a workload: each client's figures and ours/Java."""
    rows = []
    for workload, by_client in results.items():
        ours, java = (by_client.get(client, {}).get("ours") for client in CLIENTS)
        row = [workload]
        for figures in (ours, java):
            row += ["-"] * 4 if figures is None else [
                rate(figures["tps"]), _ms(figures, "mean_us"),
                _cores(figures, "generator_cpu_s"), _cores(figures, "server_cpu_s")]
        row += [ratio(ours and ours["tps"], java and java["tps"]),
                ratio(ours and ours["median_tps"], java and java["median_tps"]),
                "%.2f" % max(f["other_cores"] for f in (ours, java) if f)]
        rows.append(row)
    columns = ["msg/s", "avg ms", "gen CPU", "broker CPU"]
    headers = (["workload"] + ["ours " + c for c in columns] + ["Java " + c for c in columns]
               + ["ours/Java", "medians ours/Java", "other load"])
    return format_table(headers, rows, markdown)


def main(argv=None):
    parser = group_bench_arguments(__doc__.split("\n")[0])
    parser.set_defaults(seconds=3, warmup=2)
    parser.add_argument("--quick", action="store_true",
                        help="three workloads, 1 s warm-up, 2 s measured, a smaller backlog")
    parser.add_argument("--reruns", type=int,
                        help="times a disturbed run may be run again (default 2 × --repeat)")
    parser.add_argument("--workload", action="append", choices=[w.name for w in WORKLOADS],
                        metavar="NAME", help="run only this workload (repeatable)")
    parser.add_argument("--client", choices=CLIENTS, action="append",
                        help="only this client (repeatable; default both)")
    parser.add_argument("--profile", type=Path,
                        help="run our client under cProfile, one file a run in this directory")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    mode = "quick" if args.quick else "full"
    names = args.workload or (QUICK if args.quick else [w.name for w in WORKLOADS])
    warmup, seconds = (1, 2) if args.quick else (args.warmup, args.seconds)
    pinned = not args.no_pin and len(os.sched_getaffinity(0)) >= 2
    profile = args.profile.resolve() if args.profile else None
    if profile:
        profile.mkdir(parents=True, exist_ok=True)
    reruns = args.reruns if args.reruns is not None else 2 * args.repeat
    started = time.monotonic()
    results = run([w for w in WORKLOADS if w.name in names], args.client or list(CLIENTS),
                  warmup, seconds, args.repeat, reruns, pinned, BACKLOG[mode], profile)
    info = machine()
    print("\n".join([table(results)] + ["WARNING: " + line for line in errors(results)] + [
        "", "%(cpus)d CPUs, %(cpu)s; %(python)s; %(java)s" % info,
        "broker pinned to CPU 0, load generators to CPU 1" if pinned else "not pinned"]))
    log("took %.0f s" % (time.monotonic() - started))
    if args.markdown:
        Path(args.markdown).write_text(table(results, markdown=True) + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(
            machine=info, pinned=pinned, mode=mode, warmup=warmup, seconds=seconds,
            results=results), indent=2) + "\n")
    if profile:
        for path in sorted(profile.glob("*.prof")):
            print("== %s" % path.name)
            print_profile(path, limit=25)


if __name__ == "__main__":
    if sys.argv[1:2] == ["load"]:
        load(sys.argv[2:])
    else:
        main()
