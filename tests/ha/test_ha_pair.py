"""Our ``twistd rmq-master`` as SYNC_MASTER with a slave replicating from it,
driven by real Java 4.9.8 clients through our NameServer; every test runs with a real
Java 4.9.7 slave and with our ``twistd rmq-slave``.

A Java producer gets SEND_OK only once the slave holds the message (it is in the slave's
commit-log file when the answer arrives); with the slave killed, SLAVE_NOT_AVAILABLE at
once, with it frozen FLUSH_SLAVE_TIMEOUT within ``slaveTimeout``, and SEND_OK again when it
returns (from its own max offset); the commit logs end byte-identical across a segment
boundary, and the master's runtime info shows the slave's ack; Java consumers read every
message from the master, and from the slave with the master stopped.
"""

import json

import pytest

from rmqproto.codec.message import decode_message_id
from support.hacheck import CommitLogReader
from support.hapair import SEGMENT, HAPair, runtime_info, send_statuses
from support.interop import java_available
from support.syncclient import wait_until

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

SLAVE_TIMEOUT_MS = 2000


@pytest.fixture(scope="module", params=["java", "ours"], ids=["java-slave", "our-slave"])
def pair(request, tmp_path_factory):
    pair = HAPair(tmp_path_factory.mktemp("ha-pair-%s" % request.param), request.param,
                  slaveTimeout=SLAVE_TIMEOUT_MS)
    yield pair
    pair.stop()


def test_every_kind_of_java_send_is_acked(pair):
    pair.wait_in_sync()
    result = pair.peers.run_client("rmqproto.peers.SendAll", pair.namesrv_addr, pair.topic, 20)
    assert result.returncode == 0, result.stdout + result.stderr
    acked = [line.split() for line in result.stdout.splitlines()
             if line.split() and line.split()[0] in ("SYNC", "ASYNC", "BATCH")]
    assert len(acked) == 41 and {line[1] for line in acked} == {"SEND_OK"}
    pair.wait_logs_identical()


def test_send_ok_only_once_the_slave_holds_the_message(pair):
    pair.wait_in_sync()
    producer = pair.producer(body_bytes=3000)
    try:
        for i in range(30):
            status, _, offset_msg_id = producer.send()
            assert status == "SEND_OK"
            # read at once: the slave appended it before acking
            record = CommitLogReader(pair.slave_store / "commitlog", SEGMENT).record(
                decode_message_id(offset_msg_id)[1])
            assert (record.msg_id, record.keys, len(record.body)) == (
                offset_msg_id, ["key-%d" % i], 3000)
    finally:
        producer.close()
    pair.wait_logs_identical()


def test_a_killed_slave_gives_slave_not_available_until_it_returns(pair):
    pair.wait_in_sync()
    pair.slave.kill()
    wait_until(lambda: not pair.in_sync(), timeout=10)
    producer = pair.producer()
    try:
        status, elapsed, _ = producer.send()
        assert status == "SLAVE_NOT_AVAILABLE" and elapsed < SLAVE_TIMEOUT_MS
        pair.start_slave()  # the same store: it resumes from its own max offset
        pair.wait_in_sync()
        assert producer.send()[0] == "SEND_OK"
    finally:
        producer.close()
    pair.wait_logs_identical()


def test_a_frozen_slave_gives_flush_slave_timeout_within_slave_timeout(pair):
    pair.wait_in_sync()
    producer = pair.producer()
    try:
        assert producer.send()[0] == "SEND_OK"
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


def test_commit_logs_are_byte_identical_across_a_segment_boundary(pair):
    pair.wait_in_sync()
    result = pair.peers.run_client("rmqproto.peers.SyncSends", pair.namesrv_addr, pair.topic,
                                   1100, 16 * 1024)
    statuses = send_statuses(result.stdout)
    assert statuses == ["SEND_OK"] * 1100, result.stdout[-2000:] + result.stderr[-2000:]
    max_offset = pair.wait_logs_identical()
    assert max_offset > SEGMENT  # two segments
    info = runtime_info(pair.master_addr)
    assert [v for k, v in info.items() if k.startswith("slaveAckOffset_")] == [str(max_offset)]
    assert info["push2SlaveMaxOffset"] == str(max_offset)


def consumed_keys(pair, group, topic, expected):
    """Keys a Java push consumer of ``group`` reads from ``topic`` (stops at ``expected``)."""
    result = pair.peers.run_client("rmqproto.peers.ConsumeAll", pair.namesrv_addr, "concurrently",
                                   group, topic, expected, 60, "linger=1000")
    assert result.returncode == 0, result.stderr[-3000:]
    messages = [json.loads(line[4:]) for line in result.stdout.splitlines()
                if line.startswith("MSG ")]
    return sorted(m["keys"] for m in messages)


def test_consumers_read_every_message_from_either_side(pair):
    topic, count = "PairConsumeTopic", 200
    pair.wait_in_sync()
    result = pair.peers.run_client("rmqproto.peers.SyncSends", pair.namesrv_addr, topic, count)
    assert result.stdout.count("SEND_OK") == count, result.stdout[-2000:]
    pair.wait_logs_identical()
    keys = sorted("key-%d" % i for i in range(count))
    assert consumed_keys(pair, "FromMaster", topic, count) == keys
    pair.wait_slave_knows_topic(topic)
    pair.stop_master()  # it unregisters: the route names only the slave
    try:
        assert consumed_keys(pair, "FromSlave", topic, count) == keys
    finally:
        pair.start_master()
    pair.wait_in_sync()
