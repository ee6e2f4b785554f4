"""The Spark formats' throughput (docs/spark.md), against the Java client and the disk, in one run.

One ``twistd -n rmq-local`` (our NameServer, SYNC_MASTER and slave) under a temporary
directory holds a topic of 8 queues filled with ``--messages`` messages of 100-byte bodies
(sent by our producer in batches). Then, on that same topic and store:

- **rocketmq**: ``spark.read.format("rocketmq")`` in Spark local mode (``local[2]``), every
  row materialised (``count(*)`` and ``sum(length(body))``): rows per second, from the query's
  start (planning included) to its result;
- **Java client**: ``BrokerLoad consume`` (``benchmarks/java``), a 4.9.8
  ``DefaultMQPushConsumer`` of a new group reading the topic from its first offset with a
  listener that only counts: messages per second, first to last message;
- **rocketmq-store**: ``spark.read.format("rocketmq-store")`` of the master's store directory,
  every row materialised: commit-log MB per second (the bytes of the records read);
- **sequential read**: the same commit-log bytes read in 1 MiB reads by one process, from
  the disk itself (``O_DIRECT``: caches are not dropped on a shared machine) and through
  the page cache, as warm as the store reader had it (the files were just written and read).

    python benchmarks/spark_bench.py                   # 1M messages: a few minutes
    python benchmarks/spark_bench.py --messages 100000 # quick
    python benchmarks/spark_bench.py --markdown        # the table for docs/performance.md
    python benchmarks/spark_bench.py --profile 15      # then both readers' work in this
                                                       # process under cProfile: top 15 items

Run it only through ``/work/wt/_brief/quiet`` on the shared machine (see docs/performance.md).
"""

import argparse
import json
import mmap
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from harness import (exit_on_sigterm, format_table, java_classpath, log, machine,  # noqa: E402
                     rate, run_java)
from rmqproto.client import Message  # noqa: E402
from rmqproto.client.blocking import Producer  # noqa: E402
from support.daemons import Daemon  # noqa: E402
from support.processes import free_port, wait_for_port  # noqa: E402
from rmqproto.codec.codes import RequestCode, ResponseCode  # noqa: E402
from support.syncclient import call, create_topic, wait_until  # noqa: E402

TOPIC = "SparkBench"
QUEUES = 8
BODY = 100
BATCH = 256
CHUNK = 1 << 20


def start_cluster(workdir):
    """``twistd -n rmq-local`` on free ports; ``(daemon, namesrv address, master address)``."""
    base = free_port(14)
    ports = dict(listenPort=base + 2, namesrvPort=base + 6, metricsPort=0)
    daemon = Daemon(workdir, "rmq-local", "--dataDir", workdir / "data",
                    *("--%s=%d" % item for item in ports.items()), port=ports["namesrvPort"])
    wait_for_port(ports["listenPort"], 60, daemon)
    return daemon, "127.0.0.1:%d" % ports["namesrvPort"], "127.0.0.1:%d" % ports["listenPort"]


def fill(namesrv, count):
    """``count`` messages of :data:`BODY` bytes to :data:`TOPIC`, in batches; seconds taken."""
    started = time.monotonic()
    with Producer(namesrvAddr=namesrv, producerGroup="spark_bench") as producer:
        sent = 0
        while sent < count:
            size = min(BATCH, count - sent)
            producer.send_batch([Message(TOPIC, b"%099d" % (sent + i) + b"\n") for i in range(size)])
            sent += size
    return time.monotonic() - started


def spark_session():
    from pyspark.sql import SparkSession
    from rmqproto.spark import register
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").appName("spark_bench")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "1g")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def timed(frame):
    """``(rows, body bytes, seconds)`` of materialising every row of ``frame``."""
    started = time.monotonic()
    rows, size = frame.selectExpr("count(*)", "sum(length(body))").collect()[0]
    return rows, size, time.monotonic() - started


def sequential_read(paths, limit, direct=False):
    """Seconds to read the first ``limit`` bytes of ``paths`` in 1 MiB reads: through the
    page cache, or with ``direct`` (``O_DIRECT``, an aligned buffer) from the disk itself."""
    buffer = mmap.mmap(-1, CHUNK)  # page-aligned, as O_DIRECT needs
    started, left = time.monotonic(), limit
    for path in paths:
        fd = os.open(path, os.O_RDONLY | (os.O_DIRECT if direct else 0))
        try:
            while left > 0:
                count = os.readv(fd, [buffer])
                if count <= 0:
                    break
                left -= count
        finally:
            os.close(fd)
    return time.monotonic() - started


def commit_log(store):
    """The commit-log segment files of ``store``, in offset order."""
    from rmqproto.spark.storefiles import find_segments
    return [path for path, _ in find_segments(str(store))]


def profiled(namesrv, store, top):
    """Both readers' executor work, in this process under cProfile (no Spark): every queue
    of the topic read by ``Brokers.read``, then every region of the store by
    ``region_batches``; the ``top`` items by own time of each."""
    import cProfile
    import io
    import pstats
    from rmqproto.spark.brokers import Brokers
    from rmqproto.spark.offsets import OffsetRange
    from rmqproto.spark.storefiles import find_segments, plan_regions, region_batches

    def source():
        with Brokers(namesrv, "spark_bench_profile") as brokers:
            for queue in brokers.queues([TOPIC]):
                low, high = brokers.bounds(queue)
                for _ in brokers.read(OffsetRange(queue, low, high)):
                    pass

    def store_reader():
        for region in plan_regions(find_segments(str(store))):
            for _ in region_batches(region):
                pass

    reports = {}
    for name, work in (("rocketmq", source), ("rocketmq-store", store_reader)):
        profile = cProfile.Profile()
        started = time.monotonic()
        profile.runcall(work)
        out = io.StringIO()
        stats = pstats.Stats(profile, stream=out)
        stats.sort_stats("tottime").print_stats(top)
        reports[name] = "%s: %.2f s in one process under the profiler\n%s" % (
            name, time.monotonic() - started, out.getvalue())
    return reports


def routed(namesrv):
    answer = call(namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})
    return answer.code == ResponseCode.SUCCESS


def run(messages, profile_top=0):
    results = {}
    with tempfile.TemporaryDirectory(prefix="spark_bench") as tmp:
        workdir = Path(tmp)
        daemon, namesrv, master = start_cluster(workdir)
        try:
            create_topic(master, TOPIC, queues=QUEUES)
            wait_until(lambda: routed(namesrv), timeout=60)
            log("filling %s with %d messages" % (TOPIC, messages))
            results["fill_s"] = fill(namesrv, messages)
            classpath = java_classpath()
            spark = spark_session()
            source = (spark.read.format("rocketmq").option("nameServer", namesrv)
                      .option("topic", TOPIC).load())
            timed(source.limit(10))  # Spark's and the workers' first start, not measured
            log("reading with spark.read.format('rocketmq')")
            rows, _, seconds = timed(source)
            assert rows == messages, (rows, messages)
            results["rocketmq"] = dict(rows=rows, seconds=seconds, rps=rows / seconds)
            log("consuming with the Java client")
            out = run_java(classpath, "rmqproto.bench.BrokerLoad", namesrv, "consume", TOPIC,
                           messages, 60 + messages / 2000, timeout=120 + messages / 1000)
            results["java"] = json.loads(out.strip().splitlines()[-1])
            store = workdir / "data" / "master"
            log("reading the store with spark.read.format('rocketmq-store')")
            stored = spark.read.format("rocketmq-store").load(str(store))
            rows, _, seconds = timed(stored)
            volume = stored.selectExpr("sum(storeSize)").collect()[0][0]
            results["store"] = dict(rows=rows, bytes=volume, seconds=seconds,
                                    mbps=volume / seconds / 1e6)
            for key, direct in (("cache", False), ("disk", True)):
                seconds = sequential_read(commit_log(store), volume, direct)
                results[key] = dict(bytes=volume, seconds=seconds, mbps=volume / seconds / 1e6)
            spark.stop()
            if profile_top:
                results["profiles"] = profiled(namesrv, store, profile_top)
        finally:
            daemon.stop()
    return results


def table(results, markdown=False):
    ours, java = results["rocketmq"], results["java"]
    store, disk = results["store"], results["disk"]
    rows = [
        ["spark.read rocketmq (local[2])", rate(ours["rps"]) + " rows/s", "%.1f" % ours["seconds"],
         "%.3f" % (ours["rps"] / java["tps"])],
        ["Java 4.9.8 push consumer", rate(java["tps"]) + " msgs/s", "%.1f" % java["seconds"], "1"],
        ["spark.read rocketmq-store (local[2])", "%.1f MB/s" % store["mbps"],
         "%.1f" % store["seconds"], "%.3f" % (store["mbps"] / disk["mbps"])],
        ["sequential read of the disk (O_DIRECT, 1 MiB reads)", "%.0f MB/s" % disk["mbps"],
         "%.2f" % disk["seconds"], "1"],
        ["the same through the page cache", "%.0f MB/s" % results["cache"]["mbps"],
         "%.2f" % results["cache"]["seconds"], "%.3f" % (results["cache"]["mbps"] / disk["mbps"])],
    ]
    return format_table(["what", "rate", "s", "ratio"], rows, markdown)


def main(argv=None):
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--profile", type=int, default=0, metavar="TOP",
                        help="then profile both readers' work in this process: TOP items")
    args = parser.parse_args(argv)
    info = machine()
    results = run(args.messages, args.profile)
    print("%d messages of %d B, %d queues; %s, %s, %s, %d CPUs" % (
        args.messages, BODY, QUEUES, info["cpu"], info["python"], info["java"], info["cpus"]))
    print("filled in %.1f s" % results["fill_s"])
    print(table(results, args.markdown))
    for report in results.get("profiles", {}).values():
        print(report)


if __name__ == "__main__":
    main()
