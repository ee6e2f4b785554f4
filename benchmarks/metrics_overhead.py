"""What metrics and the console cost the broker: two of our brokers side by side, one with
``metricsPort`` and ``consolePort`` on (``/metrics`` scraped and ``/api/snapshot`` fetched
every second, far more often than Prometheus' usual 15 s), one with both off, under
``broker_bench.py``'s load generators and rules (the same settings, pinning, turns and
best-of runs). Goal: sends with metrics on within 2 % of sends with them off.

    python benchmarks/metrics_overhead.py               # the send workloads, Java client
    python benchmarks/metrics_overhead.py --client raw  # the cheapest client
"""

import argparse
import shutil
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from broker_bench import (  # noqa: E402
    CLIENTS, WORKLOADS, Brokers, Loaders, run_workloads, start_twistd,
)
from harness import exit_on_sigterm, format_table, log, rate, ratio  # noqa: E402
from support.javapeers import broker_port  # noqa: E402
from support.processes import free_port, wait_for_port  # noqa: E402

#: Seconds between two looks at the observed broker's pages.
SCRAPE_INTERVAL = 1.0


class Scraper(threading.Thread):
    """Fetches ``urls`` every :data:`SCRAPE_INTERVAL` seconds until :meth:`stop`."""

    def __init__(self, urls):
        super().__init__(daemon=True)
        self.urls = urls
        self.stopped = threading.Event()
        self.scrapes = 0

    def run(self):
        while not self.stopped.wait(SCRAPE_INTERVAL):
            for url in self.urls:
                with urllib.request.urlopen(url, timeout=10) as answer:
                    answer.read()
            self.scrapes += 1

    def stop(self):
        self.stopped.set()
        self.join()


class ObservedBrokers(Brokers):
    """``off``: our broker as the broker benchmark runs it; ``on``: the same with metrics
    and the console served and looked at."""

    def _start_ours(self):
        for name in ("off", "on"):
            port = broker_port()
            settings = self._settings(name, port)
            if name == "on":
                metrics, console = free_port(), free_port()
                settings.update(metricsPort=metrics, consolePort=console)
            process = start_twistd("rmq-master", settings, self._dir(name), stops=self.stops)
            self.started[name] = process.popen.pid, "127.0.0.1:%d" % port
        wait_for_port(metrics, 60, process)
        self.scraper = Scraper(["http://127.0.0.1:%d/metrics" % metrics,
                                "http://127.0.0.1:%d/api/snapshot" % console])
        self.scraper.start()
        self.stops.append(self.scraper.stop)

    def _start_java(self):
        """No Java broker here: the two brokers compared are both ours."""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--client", choices=CLIENTS, action="append",
                        help="load generator (repeatable; default java)")
    parser.add_argument("--seconds", type=float, default=3.0, help="measuring time per run")
    parser.add_argument("--warmup", type=float, default=1.5, help="warm-up time per run")
    parser.add_argument("--repeat", type=int, default=3, help="turns per workload; the best counts")
    parser.add_argument("--markdown", type=Path, help="also write the table there as markdown")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    workloads = [w for w in WORKLOADS if w.mode == "send"]
    workdir = Path(tempfile.mkdtemp(prefix="metrics-overhead-"))
    try:
        brokers = ObservedBrokers(workdir, pinned=True)
        try:
            loaders = Loaders(workdir, brokers.namesrv_addr)
            topics = brokers.create_topics()
            results = run_workloads(brokers, loaders, topics, workloads, args.client or ["java"],
                                    args.warmup, args.seconds, args.repeat, 2 * args.repeat, True)
            log("%d scrapes of /metrics and /api/snapshot" % brokers.scraper.scrapes)
        finally:
            brokers.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(table(results))
    if args.markdown:
        args.markdown.write_text(table(results, markdown=True) + "\n")


def table(results, markdown=False):
    """One row per workload and client: both brokers' msg/s and mean latency, the ratios."""
    rows = []
    for workload, by_loader in results.items():
        for loader, by_broker in by_loader.items():
            on, off = by_broker["on"], by_broker["off"]
            rows.append([workload, loader, rate(off["tps"]), "%.2f" % (off["mean_us"] / 1000),
                         rate(on["tps"]), "%.2f" % (on["mean_us"] / 1000),
                         ratio(on["tps"], off["tps"]), ratio(on["median_tps"], off["median_tps"])])
    return format_table(["workload", "client", "off msg/s", "off avg ms", "on msg/s", "on avg ms",
                         "on/off", "medians on/off"], rows, markdown)


if __name__ == "__main__":
    main()
