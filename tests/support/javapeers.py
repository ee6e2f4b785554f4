"""Real Apache RocketMQ Java processes as test peers: NameServer, broker, mqadmin, Java client.

Classpaths are built with Maven from ``tests/javapeers/`` (downloads are cached in
``~/.m2``): ``server`` (NameServer and broker 4.9.7, the newest 4.x server artifacts on
Maven Central), ``client`` (Java client and mqadmin 4.9.8, plus our small client programs)
and, built the first time a test asks for it, ``client5`` (Java client and mqadmin 5.3.3,
with the same client programs compiled against them).
Every process runs on 127.0.0.1 with a small heap and is killed when its owner stops it.
"""

import fcntl
import functools
import os
import re
import subprocess
from pathlib import Path

from support.interop import JAVA_FLAGS, java_available
from support.processes import ManagedProcess, free_port, wait_for_port  # noqa: F401 (re-exported)

ROOT = Path(__file__).resolve().parents[2]
PEERS_DIR = ROOT / "tests" / "javapeers"

_LOGBACK = """<configuration>
  <appender name="OUT" class="ch.qos.logback.core.%s">
    <encoder><pattern>%%d{HH:mm:ss.SSS} %%-5level %%logger{20} - %%msg%%n</pattern></encoder>%s
  </appender>
  <root level="WARN"><appender-ref ref="OUT"/></root>
</configuration>
"""


def logback_config(log_file=None):
    """Warnings and worse to the console, or to ``log_file`` when given."""
    if log_file is None:
        return _LOGBACK % ("ConsoleAppender", "")
    return _LOGBACK % ("FileAppender", "\n    <file>%s</file>" % log_file)


def broker_port():
    """A broker ``listenPort`` whose VIP port (−2) and HA port (+1) are free too."""
    return free_port(4) + 2


@functools.lru_cache(maxsize=None)
def build_classpath(name):
    """Build ``tests/javapeers/<name>`` with Maven once per run; its Java classpath."""
    project = PEERS_DIR / name
    goals = ["dependency:copy-dependencies", "-DoutputDirectory=target/lib"]
    if (project / "src").exists() or "<sourceDirectory>" in (project / "pom.xml").read_text():
        goals.insert(0, "compile")  # its own sources, or another project's (client5)
    with open(PEERS_DIR / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = subprocess.run(["mvn", "-q", "-B", *goals], cwd=project,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise RuntimeError("building %s peers failed:\n%s"
                           % (name, result.stdout.decode(errors="replace")))
    parts = [str(project / "target" / "lib" / "*")]
    if (project / "target" / "classes").exists():
        parts.insert(0, str(project / "target" / "classes"))
    return os.pathsep.join(parts)


class JavaPeers:
    """Builds the classpaths once and starts peers under ``workdir``."""

    def __init__(self, workdir):
        if not java_available():
            raise RuntimeError("Java 17 and Maven are needed for the Java peers")
        self.workdir = Path(workdir)
        self.home = self.workdir / "rocketmq-home"
        (self.home / "conf").mkdir(parents=True, exist_ok=True)
        for name in ("namesrv", "broker"):  # their console is the process's log file
            (self.home / "conf" / ("logback_%s.xml" % name)).write_text(logback_config())
        # mqadmin's client logs in the background (route updates that can race its own
        # shutdown); keeping them out of its output leaves only the command's answer
        (self.home / "conf" / "logback_tools.xml").write_text(
            logback_config(self.workdir / "mqadmin.log"))
        self.server_cp = build_classpath("server")
        self.client_cp = build_classpath("client")
        self.processes = []

    def _java(self, classpath, main, *args, heap="256m"):
        return ["java", *JAVA_FLAGS[:-2], "-Xms%s" % heap, "-Xmx%s" % heap,
                "-Duser.home=%s" % self.home, "-Drocketmq.home.dir=%s" % self.home,
                "-Drocketmq.client.logUseSlf4j=true",
                "-cp", classpath, main, *args]

    def _write_properties(self, name, props):
        path = self.workdir / name
        path.write_text("".join("%s=%s\n" % (k, v) for k, v in props.items()))
        return path

    def start(self, name, classpath, main, *args, port=None, timeout=90.0):
        """Start a Java main class; wait for ``port`` when given."""
        process = ManagedProcess(self._java(classpath, main, *args),
                              self.workdir / (name + ".log"), cwd=self.workdir)
        self.processes.append(process)
        if port is not None:
            wait_for_port(port, timeout, process)
        return process

    def namesrv(self, port, **props):
        """Start the Java NameServer on ``port``."""
        conf = self._write_properties("namesrv-%d.properties" % port, dict(listenPort=port, **props))
        return self.start("namesrv-%d" % port, self.server_cp,
                          "org.apache.rocketmq.namesrv.NamesrvStartup", "-c", str(conf), port=port)

    def broker(self, name, wait=True, **props):
        """Start a Java broker from Java property names (``listenPort``, ``namesrvAddr``, …);
        unless ``wait`` is false, wait until it listens."""
        store = self.workdir / ("store-" + name)
        defaults = dict(brokerClusterName="DefaultCluster", brokerName="broker-a", brokerId=0,
                        brokerIP1="127.0.0.1", brokerIP2="127.0.0.1",
                        storePathRootDir=store, storePathCommitLog=store / "commitlog",
                        mappedFileSizeCommitLog=64 * 1024 * 1024,
                        mappedFileSizeConsumeQueue=300000 * 20 // 100)
        defaults.update(props)
        conf = self._write_properties("broker-%s.properties" % name, defaults)
        return self.start("broker-" + name, self.server_cp,
                          "org.apache.rocketmq.broker.BrokerStartup", "-c", str(conf),
                          port=int(defaults["listenPort"]) if wait else None)

    @functools.cached_property
    def client5_cp(self):
        """The 5.3.3 client's classpath (built on first use: most tests never need it)."""
        return build_classpath("client5")

    def _mqadmin(self, classpath, args, timeout):
        result = subprocess.run(
            self._java(classpath, "org.apache.rocketmq.tools.command.MQAdminStartup",
                       *[str(a) for a in args], heap="128m"),
            cwd=self.workdir, capture_output=True, timeout=timeout)
        return (result.stdout + result.stderr).decode(errors="replace")

    def mqadmin(self, *args, timeout=120):
        """Run one mqadmin (4.9.8) command; its output (stdout, then stderr) as text."""
        return self._mqadmin(self.client_cp, args, timeout)

    def mqadmin5(self, *args, timeout=120):
        """Run one mqadmin 5.3.3 command; its output (stdout, then stderr) as text."""
        return self._mqadmin(self.client5_cp, args, timeout)

    def mqadmin5_batch(self, *commands, timeout=180):
        """:meth:`mqadmin_batch` with mqadmin 5.3.3."""
        return self.mqadmin_batch(*commands, timeout=timeout, classpath=self.client5_cp)

    def mqadmin_batch(self, *commands, timeout=180, classpath=None):
        """Run mqadmin commands (each a sequence of arguments) one after the other in one JVM
        (``MQAdminBatch``: a JVM start is seconds), with mqadmin 4.9.8 or the one of
        ``classpath``; the output of each, in order."""
        args = [str(a) for command in commands for a in ("--next", *command)][1:]
        result = self.run_client("rmqproto.peers.MQAdminBatch", *args, timeout=timeout,
                                 classpath=classpath)
        parts = re.split(r"^=== mqadmin .*$", result.stdout + result.stderr, flags=re.M)
        assert len(parts) == len(commands) + 1, result.stdout + result.stderr
        return parts[1:]

    def run_client(self, main, *args, timeout=300, classpath=None):
        """Run a program of ``tests/javapeers/client`` to completion (with the 4.9.8 client,
        or the 5.3.3 one when ``classpath`` is :attr:`client5_cp`); the CompletedProcess."""
        return subprocess.run(self._java(classpath or self.client_cp, main,
                                         *[str(a) for a in args], heap="256m"),
                              cwd=self.workdir, capture_output=True, text=True, timeout=timeout)

    def stop_all(self):
        for process in reversed(self.processes):
            process.kill()
        self.processes.clear()
