"""Faults on a replicating pair: our ``twistd rmq-master`` as SYNC_MASTER with
a real Java 4.9.7 slave, and again with our ``twistd rmq-slave``; the slave reaches the
master's HA port through a :class:`~support.faultproxy.FaultProxy` (its ``haMasterAddress``).

Java producers (``SendStorm``: threads of sync sends without retries, going on through
failures; ``SyncSends`` one send at a time) load the pair while

* the proxy forwards the HA stream in pieces of 1 to 7 bytes;
* the proxy holds the stream for longer than ``slaveTimeout`` (FLUSH_SLAVE_TIMEOUT), then
  lets it go;
* the proxy drops the HA connection again and again;
* the slave is killed (``kill -9``) and restarted on its store: the master transfers from
  exactly the slave's recovered commit-log end;
* the master is killed (``kill -9``) and restarted: the slave reconnects.

After each, every message acknowledged SEND_OK is intact in the slave's commit log (decoded
at its offset message id), the two commit logs end byte-identical and the pair is in sync.
"""

import pytest

from support.hapair import SEGMENT, HAPair
from support.interop import java_available
from support.storecheck import check_store
from support.syncclient import wait_until

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

SLAVE_TIMEOUT_MS = 2000


@pytest.fixture(scope="module", params=["java", "ours"])
def pair(request, tmp_path_factory):
    pair = HAPair(tmp_path_factory.mktemp("ha-faults-" + request.param), request.param,
                  proxy=True, slaveTimeout=SLAVE_TIMEOUT_MS)
    yield pair
    pair.stop()


def check_replicated(pair, acks):
    """Every acked message is on the slave and the logs end identical."""
    assert pair.missing_on_slave(acks) == []
    pair.wait_in_sync()
    pair.wait_logs_identical()


def test_bytes_split_in_pieces_of_1_to_7_during_a_load(pair):
    storm = pair.storm(6, threads=4)
    proxy = pair.proxy
    cycles = 0
    try:
        while storm.process.poll() is None:
            for size in range(1, 8):
                proxy.split(size)
                before = proxy.forwarded
                wait_until(lambda: proxy.forwarded > before + 4096 or storm.process.poll() is not None,
                           timeout=60, interval=0.05)
            cycles += 1
    finally:
        proxy.split(None)
    acks = storm.wait()
    assert cycles >= 1 and len(acks) > 100
    check_replicated(pair, acks)


def test_a_stall_longer_than_slave_timeout_then_resume(pair):
    pair.wait_in_sync()
    producer = pair.producer()
    try:
        assert producer.send()[0] == "SEND_OK"
        pair.proxy.stall()
        try:
            status, elapsed, _ = producer.send()
            assert status == "FLUSH_SLAVE_TIMEOUT" and elapsed >= SLAVE_TIMEOUT_MS - 100
        finally:
            pair.proxy.resume()
        pair.wait_in_sync()
        assert [producer.send()[0] for _ in range(5)] == ["SEND_OK"] * 5
    finally:
        producer.close()
    pair.wait_logs_identical()


def test_connections_dropped_again_and_again_during_a_load(pair):
    # a Java slave's first report comes ~5 s after it connects: a longer load for it
    storm = pair.storm(20 if pair.slave_kind == "java" else 6, threads=4, acked=100)
    for _ in range(3):
        before = pair.in_sync_connections()
        pair.proxy.drop()
        # a new connection replicates again (the old one is gone from the master's table)
        wait_until(lambda: pair.in_sync_connections() - before, timeout=30)
    acks = storm.wait()
    check_replicated(pair, acks)


def test_a_killed_slave_resumes_from_its_own_max_offset(pair):
    storm = pair.storm(8, threads=4, acked=300)
    transfers = len(pair.transfer_requests())
    pair.slave.kill()
    # where the slave's recovery will truncate to: the end of its last whole record
    recovered_end = check_store(pair.slave_store, SEGMENT, 6000).log_end
    assert recovered_end > 0
    pair.start_slave()
    wait_until(lambda: len(pair.transfer_requests()) > transfers, timeout=30)
    assert pair.transfer_requests()[transfers:] == [(recovered_end, recovered_end)]
    acks = storm.wait()
    check_replicated(pair, acks)


def test_a_master_killed_during_a_send_storm_loses_no_acked_message(pair):
    storm = pair.storm(8, threads=8, acked=500)
    pair.master.kill()
    acks = storm.wait()
    assert "FAILED" in storm.process.output()  # the producer saw the master go
    assert len(acks) >= 500
    assert pair.missing_on_slave(acks) == []
    # restarted on its store, the master is found again by the slave
    pair.start_master()
    pair.wait_in_sync()
    producer = pair.producer()
    try:
        assert [producer.send()[0] for _ in range(5)] == ["SEND_OK"] * 5
    finally:
        producer.close()
    pair.wait_logs_identical()
