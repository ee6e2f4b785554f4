"""Our ``twistd rmq-master`` (SYNC_MASTER) with a real Java 4.9.7 slave replicating from it
(reference §4): the slave finds the HA address through our NameServer, Java producers get
SEND_OK once the slave acked, both commit logs end byte-identical (crossing a segment
boundary), a killed slave gives SLAVE_NOT_AVAILABLE at once, a frozen one (SIGSTOP)
FLUSH_SLAVE_TIMEOUT after ``slaveTimeout``, and service resumes when the slave returns."""

import os
import signal
import subprocess

import pytest

from rmqproto.codec.bodies.route import KVTable
from rmqproto.codec.codes import RequestCode as RC
from support.daemons import start_nameserver
from support.interop import java_available
from support.javapeers import JavaPeers, broker_port
from support.syncclient import call, wait_until
from broker.brokerkit import start_broker

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

SEGMENT = 16 * 1024 * 1024
SLAVE_TIMEOUT_MS = 2000
TOPIC = "HATopic"


#: The first word of each line SyncSends prints for a send (other lines are client logs).
SEND_LINE_WORDS = {"SEND_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE",
                   "ERROR"}


def send_lines(output):
    return [line.split() for line in output.splitlines()
            if line.split() and line.split()[0] in SEND_LINE_WORDS]


def runtime_info(addr):
    return KVTable.from_json(call(addr, RC.GET_BROKER_RUNTIME_INFO).body).table


class Pair:
    """Our NameServer and SYNC_MASTER daemons, and a Java slave, under ``workdir``."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.namesrv, self.namesrv_addr = start_nameserver(workdir)
        self.master, self.master_addr = start_broker(
            workdir, self.namesrv_addr, brokerRole="SYNC_MASTER", slaveTimeout=SLAVE_TIMEOUT_MS)
        self.peers = JavaPeers(workdir)
        self.slave_port = broker_port()
        self.slave_addr = "127.0.0.1:%d" % self.slave_port
        self.slave = None
        self.start_slave()

    def start_slave(self):
        self.slave = self.peers.broker(
            "slave", listenPort=self.slave_port, namesrvAddr=self.namesrv_addr,
            brokerRole="SLAVE", brokerId=1, mappedFileSizeCommitLog=SEGMENT)

    def wait_slave_in_sync(self, timeout=60):
        wait_until(lambda: runtime_info(self.master_addr).get("inSyncSlaveNums") == "1",
                   timeout=timeout)

    def wait_logs_identical(self, timeout=60):
        """Wait until the Java slave holds all of our master's commit log; compare the files."""
        master_max = runtime_info(self.master_addr)["commitLogMaxOffset"]
        wait_until(lambda: runtime_info(self.slave_addr)["commitLogMaxOffset"] == master_max,
                   timeout=timeout)
        ours = self.workdir / "store" / "commitlog"
        theirs = self.workdir / "store-slave" / "commitlog"
        names = sorted(os.listdir(ours))
        java_names = sorted(os.listdir(theirs))
        assert java_names[:len(names)] == names
        for name in names:
            assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name
        for name in java_names[len(names):]:  # Java allocates the next segment ahead
            data = (theirs / name).read_bytes()
            assert data == bytes(len(data)), name
        return int(master_max), names

    def producer(self):
        """A Java producer sending one message per line written to it."""
        command = self.peers._java(self.peers.client_cp, "rmqproto.peers.SyncSends",
                                   self.namesrv_addr, TOPIC, "-", "200", heap="128m")
        return GatedProducer(subprocess.Popen(command, cwd=self.workdir, stdin=subprocess.PIPE,
                                              stdout=subprocess.PIPE, text=True))

    def stop(self):
        self.peers.stop_all()
        self.master.stop()
        self.namesrv.stop()


class GatedProducer:
    def __init__(self, process):
        self.process = process

    def send(self):
        """``(status, elapsed ms)`` of one send."""
        self.process.stdin.write("send\n")
        self.process.stdin.flush()
        while True:
            line = self.process.stdout.readline()
            assert line, "the producer exited"
            words = send_lines(line)
            if words:
                return words[0][0], int(words[0][1])

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    pair = Pair(tmp_path_factory.mktemp("ha-master-java"))
    yield pair
    pair.stop()


def test_a_java_slave_replicates_our_master_byte_for_byte(pair):
    pair.wait_slave_in_sync()
    result = pair.peers.run_client("rmqproto.peers.SendAll", pair.namesrv_addr, TOPIC, 20)
    assert result.returncode == 0, result.stdout + result.stderr
    acked = [line.split() for line in result.stdout.splitlines()
             if line.split()[0] in ("SYNC", "ASYNC", "BATCH")]
    assert len(acked) == 41 and {line[1] for line in acked} == {"SEND_OK"}
    # a load that crosses into the second commit-log segment
    result = pair.peers.run_client("rmqproto.peers.SyncSends", pair.namesrv_addr, TOPIC,
                                   1100, 16 * 1024)
    statuses = [words[0] for words in send_lines(result.stdout)]
    assert statuses == ["SEND_OK"] * 1100, result.stdout[-2000:] + result.stderr[-2000:]
    max_offset, names = pair.wait_logs_identical()
    assert max_offset > SEGMENT and len(names) == 2
    info = runtime_info(pair.master_addr)
    acks = {k: v for k, v in info.items() if k.startswith("slaveAckOffset_")}
    assert list(acks.values()) == [str(max_offset)]
    assert info["push2SlaveMaxOffset"] == str(max_offset)


def test_a_killed_slave_gives_slave_not_available_until_it_returns(pair):
    pair.wait_slave_in_sync()
    pair.slave.kill()
    wait_until(lambda: runtime_info(pair.master_addr)["haConnectionCount"] == "0", timeout=10)
    producer = pair.producer()
    try:
        status, elapsed = producer.send()
        assert status == "SLAVE_NOT_AVAILABLE" and elapsed < SLAVE_TIMEOUT_MS
        pair.start_slave()    # the same store: it resumes from its own max offset
        pair.wait_slave_in_sync()
        assert producer.send()[0] == "SEND_OK"
    finally:
        producer.close()
    pair.wait_logs_identical()


def test_a_frozen_slave_gives_flush_slave_timeout_within_slave_timeout(pair):
    pair.wait_slave_in_sync()
    producer = pair.producer()
    pid = pair.slave.popen.pid
    try:
        assert producer.send()[0] == "SEND_OK"   # the slave acked just now
        os.kill(pid, signal.SIGSTOP)
        try:
            status, elapsed = producer.send()
        finally:
            os.kill(pid, signal.SIGCONT)
        assert status == "FLUSH_SLAVE_TIMEOUT"
        assert SLAVE_TIMEOUT_MS - 100 <= elapsed < SLAVE_TIMEOUT_MS + 1500
        pair.wait_slave_in_sync()
        assert producer.send()[0] == "SEND_OK"
    finally:
        producer.close()
    pair.wait_logs_identical()
