"""Our ``twistd rmq-master`` (SYNC_MASTER) with a real Java 4.9.7 slave replicating from it
(reference §4): the slave finds the HA address through our NameServer, Java producers get
SEND_OK once the slave acked, both commit logs end byte-identical (crossing a segment
boundary), a killed slave gives SLAVE_NOT_AVAILABLE at once, a frozen one (SIGSTOP)
FLUSH_SLAVE_TIMEOUT after ``slaveTimeout``, and service resumes when the slave returns."""

import pytest

from support.hapair import SEGMENT, HAPair, runtime_info, send_statuses
from support.interop import java_available
from support.syncclient import wait_until

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

SLAVE_TIMEOUT_MS = 2000
TOPIC = "HATopic"


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    pair = HAPair(tmp_path_factory.mktemp("ha-master-java"), "java", topic=TOPIC,
                  slaveTimeout=SLAVE_TIMEOUT_MS)
    yield pair
    pair.stop()


def test_a_java_slave_replicates_our_master_byte_for_byte(pair):
    pair.wait_in_sync()
    result = pair.peers.run_client("rmqproto.peers.SendAll", pair.namesrv_addr, TOPIC, 20)
    assert result.returncode == 0, result.stdout + result.stderr
    acked = [line.split() for line in result.stdout.splitlines()
             if line.split()[0] in ("SYNC", "ASYNC", "BATCH")]
    assert len(acked) == 41 and {line[1] for line in acked} == {"SEND_OK"}
    # a load that crosses into the second commit-log segment
    result = pair.peers.run_client("rmqproto.peers.SyncSends", pair.namesrv_addr, TOPIC,
                                   1100, 16 * 1024)
    statuses = send_statuses(result.stdout)
    assert statuses == ["SEND_OK"] * 1100, result.stdout[-2000:] + result.stderr[-2000:]
    max_offset = pair.wait_logs_identical()
    assert max_offset > SEGMENT  # two segments
    info = runtime_info(pair.master_addr)
    acks = {k: v for k, v in info.items() if k.startswith("slaveAckOffset_")}
    assert list(acks.values()) == [str(max_offset)]
    assert info["push2SlaveMaxOffset"] == str(max_offset)


def test_a_killed_slave_gives_slave_not_available_until_it_returns(pair):
    pair.wait_in_sync()
    pair.slave.kill()
    wait_until(lambda: runtime_info(pair.master_addr)["haConnectionCount"] == "0", timeout=10)
    producer = pair.producer()
    try:
        status, elapsed, _ = producer.send()
        assert status == "SLAVE_NOT_AVAILABLE" and elapsed < SLAVE_TIMEOUT_MS
        pair.start_slave()    # the same store: it resumes from its own max offset
        pair.wait_in_sync()
        assert producer.send()[0] == "SEND_OK"
    finally:
        producer.close()
    pair.wait_logs_identical()


def test_a_frozen_slave_gives_flush_slave_timeout_within_slave_timeout(pair):
    pair.wait_in_sync()
    producer = pair.producer()
    try:
        assert producer.send()[0] == "SEND_OK"   # the slave acked just now
        pair.freeze_slave()
        try:
            status, elapsed, _ = producer.send()
        finally:
            pair.thaw_slave()
        assert status == "FLUSH_SLAVE_TIMEOUT"
        assert SLAVE_TIMEOUT_MS - 100 <= elapsed < SLAVE_TIMEOUT_MS + 1500
        pair.wait_in_sync()
        assert producer.send()[0] == "SEND_OK"
    finally:
        producer.close()
    pair.wait_logs_identical()
