"""What the benchmarks share: the Java benchmark classpath, a time-bounded subprocess
runner, the machine description and result tables (plain text and markdown)."""

import fcntl
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

JAVA_PROJECT = Path(__file__).resolve().parent / "java"

#: What Java 17 needs to run the RocketMQ 4.9 classes (Netty, direct buffers, fastjson).
JAVA_FLAGS = ["--add-opens", "java.base/java.nio=ALL-UNNAMED",
              "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
              "--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
              "--add-opens", "java.base/java.lang=ALL-UNNAMED"]


def group_bench_arguments(description):
    """An ``ArgumentParser`` with the options the group benchmarks share: ``--seconds``,
    ``--warmup``, ``--repeat``, ``--no-pin``, ``--markdown`` and ``--json``."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--no-pin", action="store_true")
    parser.add_argument("--markdown", help="also write the tables to this file")
    parser.add_argument("--json", help="also write the figures to this file")
    return parser


def exit_on_sigterm():
    """Turn SIGTERM (``timeout``, ``kill``) into ``SystemExit`` so ``finally`` blocks stop
    the processes a benchmark started."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def java_classpath():
    """Compile ``benchmarks/java`` (dependencies cached in ``~/.m2``); its classpath."""
    (JAVA_PROJECT / "target").mkdir(exist_ok=True)
    with open(JAVA_PROJECT / "target" / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = subprocess.run(
            ["mvn", "-q", "-B", "compile", "dependency:copy-dependencies",
             "-DoutputDirectory=target/lib"],
            cwd=JAVA_PROJECT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    if result.returncode != 0:
        raise RuntimeError("building benchmarks/java failed:\n%s"
                           % result.stdout.decode(errors="replace"))
    return os.pathsep.join([str(JAVA_PROJECT / "target" / "classes"),
                            str(JAVA_PROJECT / "target" / "lib" / "*")])


def java_command(classpath, main, *args, heap="512m"):
    return ["java", *JAVA_FLAGS, "-Xms%s" % heap, "-Xmx%s" % heap, "-cp", classpath, main,
            *map(str, args)]


def run_java(classpath, main, *args, timeout):
    """Run a Java main class to completion within ``timeout`` seconds; its stdout."""
    result = subprocess.run(java_command(classpath, main, *args), capture_output=True,
                            text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s" % (main, result.returncode, result.stderr))
    return result.stdout


def machine():
    """nproc, CPU model, Python and Java versions of this machine."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        java = subprocess.run(["java", "-version"], capture_output=True, text=True,
                              timeout=30).stderr.splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        java = "absent"
    return {"cpus": os.cpu_count(), "cpu": model,
            "python": "%s %s" % (platform.python_implementation(), platform.python_version()),
            "java": java}


def _busy_seconds():
    """CPU seconds all CPUs spent neither idle nor waiting for I/O (``/proc/stat``)."""
    with open("/proc/stat") as stat:
        ticks = [int(v) for v in stat.readline().split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def _own_seconds():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def process_cpu_times(pid):
    """``(user, system)`` CPU seconds of process ``pid``, all its threads (``/proc/PID/stat``
    fields 14, 15)."""
    with open("/proc/%d/stat" % pid) as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def process_cpu_seconds(pid):
    """utime + stime of process ``pid``, all its threads."""
    return sum(process_cpu_times(pid))


class OtherLoad:
    """``with OtherLoad() as other:`` then ``other.cores``: the CPU (in cores) everything
    but this process and its waited-for children used during the block. Well above zero
    means something else on the machine disturbed the measurement."""

    cores = 0.0

    def __enter__(self):
        self._start = (time.monotonic(), _busy_seconds(), _own_seconds())
        return self

    def __exit__(self, *exc):
        wall, busy, own = self._start
        elapsed = time.monotonic() - wall
        other = (_busy_seconds() - busy) - (_own_seconds() - own)
        self.cores = max(0.0, other / elapsed) if elapsed > 0 else 0.0


def format_table(headers, rows, markdown=False):
    """Rows of already formatted cells as a markdown or an aligned plain-text table."""
    if markdown:
        lines = ["| " + " | ".join(headers) + " |",
                 "|" + "|".join("---" if i == 0 else "---:" for i in range(len(headers))) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    fmt = "  ".join("%%-%ds" % w if i == 0 else "%%%ds" % w for i, w in enumerate(widths))
    return "\n".join([fmt % tuple(headers)] + [fmt % tuple(r) for r in rows])


def rate(value):
    """An operations-per-second figure, or a dash when it was not measured."""
    return "-" if value is None else "{:,.0f}".format(value)


def ratio(ours, theirs):
    return "-" if not ours or not theirs else "%.2f" % (ours / theirs)


def log(message):
    print(message, file=sys.stderr, flush=True)
