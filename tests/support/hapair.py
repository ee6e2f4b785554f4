"""A master/slave pair for replication tests: our NameServer and our
``twistd rmq-master`` as SYNC_MASTER, with a slave that is either a real Java 4.9.7 broker
or our ``twistd rmq-slave``; optionally a :class:`~support.faultproxy.FaultProxy` on the HA
stream (the slave's ``haMasterAddress`` points at it). Java producers and the send storm
are run against it through the NameServer.

Every process can be killed (``kill -9``), stopped and started again on its own store and
port; each restart keeps the previous run's log beside the new one.
"""

import os
import re
import signal
import subprocess
from pathlib import Path

from rmqproto.codec.bodies.route import KVTable
from rmqproto.codec.codes import RequestCode as RC
from support.daemons import Daemon, start_nameserver
from support.faultproxy import FaultProxy
from support.hacheck import compare_commit_logs, missing_acks, storm_acks
from support.javapeers import JavaPeers, broker_port
from support.syncclient import call, wait_until

__all__ = ["SEGMENT", "SEND_STATUSES", "HAPair", "GatedProducer", "Storm", "runtime_info", "send_statuses"]

#: Commit-log segment size of both brokers.
SEGMENT = 16 * 1024 * 1024

#: The first word of each line ``SyncSends`` prints for a send (other lines are client logs).
SEND_STATUSES = {"SEND_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE",
                 "ERROR"}


#: The master's log line when a slave's first report starts a transfer.
_TRANSFER_LOG = re.compile(r"master transfer data from (\d+) to slave\[[^\]]*\], and slave request (\d+)")


def send_statuses(output):
    """The status of every send in ``SyncSends``' output, in order."""
    return [line.split()[0] for line in output.splitlines()
            if line.split() and line.split()[0] in SEND_STATUSES]


def runtime_info(addr):
    """GET_BROKER_RUNTIME_INFO of the broker at ``addr`` as a dict."""
    return KVTable.from_json(call(addr, RC.GET_BROKER_RUNTIME_INFO).body).table


def _keep_log(process, run):
    """Move a finished process's log aside before the same name is started again."""
    if process is not None:
        process.log_path.rename(process.log_path.with_name("%s.%d" % (process.log_path.name, run)))


def _stop_cleanly(process, store):
    """SIGTERM ``process`` (twistd re-raises the signal after its graceful stop)."""
    assert process.stop() in (0, -signal.SIGTERM), process.output()[-3000:]
    assert not (store / "abort").exists(), process.output()[-3000:]


class HAPair:
    """Our NameServer and SYNC_MASTER, and a ``java`` or ``ours`` slave, under ``workdir``.

    ``proxy=True`` puts a :class:`FaultProxy` (``self.proxy``) between the slave and the
    master's HA port. ``master_settings`` are Java property names for the master,
    ``slave_settings`` (a dict) for the slave.
    """

    def __init__(self, workdir, slave_kind, proxy=False, topic="HATopic", slave_settings=None,
                 **master_settings):
        assert slave_kind in ("java", "ours")
        self.workdir = workdir
        self.slave_kind = slave_kind
        self.topic = topic
        self.master_settings = dict(dict(brokerRole="SYNC_MASTER", slaveTimeout=2000), **master_settings)
        self.slave_settings = slave_settings or {}
        self.master_port = broker_port()
        self.master_addr = "127.0.0.1:%d" % self.master_port
        self.master_store = workdir / "store"
        self.slave_store = workdir / "store-slave"
        self.master = self.slave = self.proxy = None
        self.runs = 0
        self.peers = JavaPeers(workdir)
        self.namesrv, self.namesrv_addr = start_nameserver(workdir)
        try:
            self.start_master()
            self.slave_port = broker_port()  # chosen once the master's ports are taken
            self.slave_addr = "127.0.0.1:%d" % self.slave_port
            if proxy:
                self.proxy = FaultProxy(self.master_port + 1)
            self.start_slave()
        except BaseException:
            self.stop()
            raise

    # ------------------------------------------------------------ processes

    def start_master(self):
        """Start (or restart) our master on its port and store."""
        self.runs += 1
        _keep_log(self.master, self.runs)
        values = dict(listenPort=self.master_port, bindAddress="127.0.0.1", brokerIP1="127.0.0.1",
                      brokerIP2="127.0.0.1", brokerName="broker-a", namesrvAddr=self.namesrv_addr,
                      storePathRootDir=self.master_store, mappedFileSizeCommitLog=SEGMENT,
                      mappedFileSizeConsumeQueue=6000, **self.master_settings)
        options = [item for name, value in values.items() for item in ("--" + name, value)]
        self.master = Daemon(self.workdir, "rmq-master", *options, port=self.master_port)

    def start_slave(self):
        """Start (or restart) the slave on its port and store."""
        self.runs += 1
        _keep_log(self.slave, self.runs)
        settings = dict(listenPort=self.slave_port, namesrvAddr=self.namesrv_addr,
                        brokerRole="SLAVE", brokerId=1, mappedFileSizeCommitLog=SEGMENT,
                        mappedFileSizeConsumeQueue=6000)
        if self.proxy is not None:
            settings["haMasterAddress"] = self.proxy.address
        settings.update(self.slave_settings)
        if self.slave_kind == "java":
            self.slave = self.peers.broker("slave", storePathRootDir=self.slave_store,
                                           storePathCommitLog=self.slave_store / "commitlog",
                                           **settings)
            return
        settings.update(bindAddress="127.0.0.1", brokerIP1="127.0.0.1", brokerIP2="127.0.0.1",
                        brokerName="broker-a", storePathRootDir=self.slave_store)
        options = [item for name, value in settings.items() for item in ("--" + name, value)]
        self.slave = Daemon(self.workdir, "rmq-slave", *options, port=self.slave_port)

    def stop_master(self):
        """SIGTERM the master; check it stopped cleanly (it unregisters, the store has no
        ``abort`` file)."""
        _stop_cleanly(self.master, self.master_store)

    def stop_slave(self):
        """SIGTERM the slave; check it stopped cleanly."""
        _stop_cleanly(self.slave, self.slave_store)

    def stop(self):
        if self.proxy is not None:
            self.proxy.close()
        self.peers.stop_all()
        for process in (self.slave, self.master, self.namesrv):
            if process is not None:
                process.stop()

    # ------------------------------------------------------------ replication state

    def in_sync(self):
        return runtime_info(self.master_addr).get("inSyncSlaveNums") == "1"

    def in_sync_connections(self):
        """The master's HA connections (slave socket addresses) that are in sync."""
        return {key.split("_", 1)[1] for key, value in runtime_info(self.master_addr).items()
                if key.startswith("inSync_") and value == "true"}

    def wait_in_sync(self, timeout=60):
        wait_until(self.in_sync, timeout=timeout)

    def max_offsets(self):
        """``(master's, slave's)`` commit-log max offsets from their runtime info."""
        return tuple(int(runtime_info(addr)["commitLogMaxOffset"])
                     for addr in (self.master_addr, self.slave_addr))

    def wait_logs_identical(self, timeout=60):
        """Wait until the slave holds the master's whole commit log; check the files are
        byte-identical (no sends may be running). The master's max offset."""
        def caught_up():
            master, slave = self.max_offsets()
            return master == slave and master
        max_offset = wait_until(caught_up, timeout=timeout)
        problems = compare_commit_logs(self.master_store / "commitlog",
                                       self.slave_store / "commitlog")
        assert problems == []
        return max_offset

    def wait_slave_knows_topic(self, topic, timeout=30):
        """Wait until the slave's metadata sync (every 10 s) has copied ``topic``'s config: a
        slave answers pulls of a topic it does not know TOPIC_NOT_EXIST, as Java's does."""
        wait_until(lambda: ('"%s"' % topic).encode() in call(
            self.slave_addr, RC.GET_ALL_TOPIC_CONFIG).body, timeout=timeout)

    def missing_on_slave(self, acks):
        """Problems for each acked message the slave's commit log does not hold."""
        return missing_acks(self.slave_store / "commitlog", acks, SEGMENT, self.topic)

    def transfer_requests(self):
        """``(start, request offset)`` of every transfer the master's log says it began."""
        return [tuple(map(int, m)) for m in _TRANSFER_LOG.findall(self.master.output())]

    # ------------------------------------------------------------ clients

    def producer(self, body_bytes=200, topic=None):
        """A Java producer (``SyncSends``) sending one message per :meth:`GatedProducer.send`."""
        command = self.peers._java(self.peers.client_cp, "rmqproto.peers.SyncSends",
                                   self.namesrv_addr, topic or self.topic, "-", str(body_bytes),
                                   heap="128m")
        return GatedProducer(subprocess.Popen(command, cwd=self.workdir, stdin=subprocess.PIPE,
                                              stdout=subprocess.PIPE, text=True))

    def storm(self, seconds, threads=4, acked=0):
        """Once the pair is in sync, a running ``SendStorm`` of ``seconds``; returned once
        ``acked`` of its sends have been acknowledged."""
        self.wait_in_sync()
        storm = Storm(self.peers, self.namesrv_addr, self.topic, seconds, threads)
        if acked:
            storm.wait_acks(acked)
        return storm

    def freeze_slave(self):
        """SIGSTOP the slave and wait until every one of its threads has stopped (on a loaded
        machine a thread may run on for a moment after the signal is sent)."""
        pid = self.slave.popen.pid
        os.kill(pid, signal.SIGSTOP)
        wait_until(lambda: all(_thread_state(stat) in "Tt"
                               for stat in Path("/proc/%d/task" % pid).glob("*/stat")),
                   timeout=10)

    def thaw_slave(self):
        os.kill(self.slave.popen.pid, signal.SIGCONT)


def _thread_state(stat_path):
    """The state letter of a ``/proc/<pid>/task/<tid>/stat`` file ("T" when stopped)."""
    try:
        return stat_path.read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "T"  # the thread is gone


class GatedProducer:
    """A ``SyncSends`` process in gated mode: one send per :meth:`send`."""

    def __init__(self, process):
        self.process = process

    def send(self):
        """``(status, elapsed ms, offsetMsgId or error)`` of one send."""
        self.process.stdin.write("send\n")
        self.process.stdin.flush()
        while True:
            line = self.process.stdout.readline()
            assert line, "the producer exited"
            words = line.split()
            if words and words[0] in SEND_STATUSES:
                return words[0], int(words[1]), " ".join(words[2:])

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)


class Storm:
    """``SendStorm``: ``threads`` threads of sync sends for ``seconds``, going on through
    failures, started by ``peers`` (:class:`~support.javapeers.JavaPeers`) through the
    NameServer at ``namesrv_addr``; :meth:`acks` are the messages acknowledged SEND_OK so far.
    ``poll_ms`` is the producer's route refresh interval (the client's 30 s unless given)."""

    def __init__(self, peers, namesrv_addr, topic, seconds, threads, poll_ms=None):
        poll = () if poll_ms is None else (str(poll_ms),)
        self.process = peers.start("storm-%d" % len(peers.processes), peers.client_cp,
                                   "rmqproto.peers.SendStorm", namesrv_addr, topic,
                                   str(seconds), str(threads), *poll)

    def acks(self):
        return storm_acks(self.process.output())

    def wait(self, timeout=120):
        """Wait for the end; the acks."""
        self.process.popen.wait(timeout=timeout)
        assert "DONE" in self.process.output(), self.process.output()[-3000:]
        return self.acks()

    def attempted(self):
        """The key of every send that printed an outcome (acknowledged, refused or failed)."""
        keys = set()
        for line in self.process.output().splitlines():
            words = line.split()
            if words[:1] == ["OK"]:
                keys.add(words[-1])
            elif words[:1] == ["NOT_OK"]:
                keys.add(words[2])
            elif words[:1] == ["FAILED"]:
                keys.add(words[1])
        return keys

    def wait_acks(self, count, timeout=90):
        """Wait until ``count`` sends have been acknowledged."""
        wait_until(lambda: len(self.acks()) >= count, timeout=timeout, interval=0.05)

