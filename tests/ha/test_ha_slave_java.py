"""Our ``twistd rmq-slave`` replicating a real Java 4.9.7 master, both
registered with a real Java NameServer: the slave learns the master's HA and remoting
addresses from its REGISTER_BROKER answers; after a Java producer's load the two commit
logs are byte-identical; a topic created and an offset committed on the master reach the
slave; the slave refuses sends; a Java consumer reads every message from the slave once
the master is gone; a Java SYNC_MASTER answers SEND_OK with our slave acking."""

import collections
import json
import os

import pytest

from rmqproto.codec import headers as h
from rmqproto.codec.bodies.route import KVTable
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from support.daemons import Daemon
from support.interop import java_available
from support.javapeers import JavaPeers, broker_port, free_port
from support.syncclient import call, wait_until

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

SEGMENT = 256 * 1024  # small: the load below crosses segment boundaries
TOPIC = "SlaveTopic"
COUNT = 300  # per SendAll kind: sync, async, oneway, one batch
SEND_STATUSES = {"SEND_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"}


def runtime_info(addr):
    return KVTable.from_json(call(addr, RC.GET_BROKER_RUNTIME_INFO).body).table


class JavaMasterOurSlave:
    """A Java NameServer and master (``role``), and our slave daemon, under ``workdir``."""

    def __init__(self, workdir, role):
        self.workdir = workdir
        self.peers = JavaPeers(workdir)
        namesrv_port = free_port()
        self.peers.namesrv(namesrv_port)
        self.namesrv_addr = "127.0.0.1:%d" % namesrv_port
        master_port = broker_port()
        self.master_addr = "127.0.0.1:%d" % master_port
        self.master = self.peers.broker("master", listenPort=master_port, brokerRole=role,
                                        namesrvAddr=self.namesrv_addr,
                                        mappedFileSizeCommitLog=SEGMENT)
        slave_port = broker_port()
        self.slave_addr = "127.0.0.1:%d" % slave_port
        self.slave = Daemon(
            workdir, "rmq-slave", "--listenPort", slave_port, "--bindAddress", "127.0.0.1",
            "--brokerIP1", "127.0.0.1", "--brokerIP2", "127.0.0.1", "--brokerName", "broker-a",
            "--namesrvAddr", self.namesrv_addr, "--storePathRootDir", workdir / "slave-store",
            "--mappedFileSizeCommitLog", SEGMENT, "--registerNameServerPeriod", 10_000,
            port=slave_port)
        # the first answer names the master only once the master has registered
        wait_until(lambda: runtime_info(self.slave_addr)["haClientState"] == "TRANSFER",
                   timeout=60)

    def send_all(self, count=COUNT, topic=TOPIC):
        """Run SendAll; the status of every acknowledged send."""
        result = self.peers.run_client("rmqproto.peers.SendAll", self.namesrv_addr, topic, count)
        assert result.returncode == 0, result.stdout + result.stderr
        return [line.split()[1] for line in result.stdout.splitlines()
                if len(line.split()) > 1 and line.split()[1] in SEND_STATUSES]

    def wait_logs_identical(self, timeout=60):
        """Wait until our slave holds the whole Java commit log; then compare the files."""
        master_max = runtime_info(self.master_addr)["commitLogMaxOffset"]
        wait_until(lambda: runtime_info(self.slave_addr)["commitLogMaxOffset"] == master_max,
                   timeout=timeout)
        java = self.workdir / "store-master" / "commitlog"
        ours = self.workdir / "slave-store" / "commitlog"
        our_names, java_names = sorted(os.listdir(ours)), sorted(os.listdir(java))
        assert our_names and java_names[:len(our_names)] == our_names
        for name in our_names:
            assert (ours / name).read_bytes() == (java / name).read_bytes(), name
        for name in java_names[len(our_names):]:  # Java allocates its next segment ahead
            assert not any((java / name).read_bytes()), name
        return int(master_max)

    def consume_from_slave(self, group, expected):
        result = self.peers.run_client("rmqproto.peers.ConsumeAll", self.namesrv_addr,
                                       "concurrently", group, TOPIC, expected, 90, timeout=150)
        assert result.returncode == 0, result.stdout + result.stderr
        return [json.loads(line[4:]) for line in result.stdout.splitlines() if line.startswith("MSG ")]

    def stop(self):
        self.slave.stop()
        self.peers.stop_all()


@pytest.fixture
def async_pair(tmp_path):
    pair = JavaMasterOurSlave(tmp_path, "ASYNC_MASTER")
    yield pair
    pair.stop()


@pytest.fixture
def sync_pair(tmp_path):
    pair = JavaMasterOurSlave(tmp_path, "SYNC_MASTER")
    yield pair
    pair.stop()


def create_topic(addr, topic):
    header = h.CreateTopicRequestHeader(
        topic=topic, default_topic="TBW102", read_queue_nums=2, write_queue_nums=2, perm=6,
        topic_filter_type="SINGLE_TAG", topic_sys_flag=0, order=False)
    answer = call(addr, RC.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
    assert answer.code == R.SUCCESS, answer.remark


def test_replicates_a_java_async_master_and_serves_consumers_when_it_is_gone(async_pair):
    pair = async_pair
    statuses = pair.send_all()
    assert statuses == ["SEND_OK"] * (2 * COUNT + 1)  # sync, async and the batch
    assert pair.wait_logs_identical() > SEGMENT

    # metadata: a topic made on the master and a committed offset reach the slave
    create_topic(pair.master_addr, "CreatedOnMaster")
    update = h.UpdateConsumerOffsetRequestHeader(consumer_group="SyncedGroup", topic=TOPIC,
                                                 queue_id=1, commit_offset=3)
    assert call(pair.master_addr, RC.UPDATE_CONSUMER_OFFSET, update.to_ext_fields()).code == R.SUCCESS

    def synced():
        topics = json.loads(call(pair.slave_addr, RC.GET_ALL_TOPIC_CONFIG).body)["topicConfigTable"]
        answer = call(pair.slave_addr, RC.QUERY_CONSUMER_OFFSET, {
            "consumerGroup": "SyncedGroup", "topic": TOPIC, "queueId": "1"})
        return "CreatedOnMaster" in topics and answer.code == R.SUCCESS \
            and answer.ext_fields["offset"] == "3"

    wait_until(synced, timeout=40)

    # the slave refuses sends as Java's does (the store's SERVICE_NOT_AVAILABLE)
    send = h.SendMessageRequestHeaderV2(
        producer_group="PG", topic=TOPIC, default_topic="TBW102", default_topic_queue_nums=4,
        queue_id=0, sys_flag=0, born_timestamp=0, flag=0, properties="", reconsume_times=0,
        unit_mode=False)
    answer = call(pair.slave_addr, RC.SEND_MESSAGE_V2, send.to_ext_fields(), b"body")
    assert answer.code == R.SERVICE_NOT_AVAILABLE
    assert answer.remark.startswith("service not available now. It may be caused by one of the "
                                    "following reasons: the broker's disk is full [")
    info = runtime_info(pair.slave_addr)
    assert info["masterAddr"] == pair.master_addr
    assert info["haClientMasterAddr"] == "127.0.0.1:%d" % (int(pair.master_addr.rsplit(":")[1]) + 1)

    # a pull gets the same records from both, with suggestWhichBrokerId 0 (slaveReadEnable=false)
    pull = h.PullMessageRequestHeader(
        consumer_group="PullGroup", topic=TOPIC, queue_id=0, queue_offset=0, max_msg_nums=32,
        sys_flag=0x4, commit_offset=0, suspend_timeout_millis=0, subscription="*", sub_version=0)
    answers = [call(addr, RC.PULL_MESSAGE, pull.to_ext_fields())
               for addr in (pair.master_addr, pair.slave_addr)]
    assert [(a.code, a.ext_fields["suggestWhichBrokerId"]) for a in answers] == [(R.SUCCESS, "0")] * 2
    assert answers[0].body == answers[1].body and answers[0].body
    assert answers[0].ext_fields["nextBeginOffset"] == answers[1].ext_fields["nextBeginOffset"]

    # the master goes away; a Java consumer reads everything from the slave
    pair.master.kill()
    messages = pair.consume_from_slave("FromSlaveGroup", 4 * COUNT)
    kinds = collections.Counter(m["body"].split(" ")[0] for m in messages)
    assert kinds == {"sync": COUNT, "async": COUNT, "oneway": COUNT, "batch": COUNT}
    assert len({m["msgId"] for m in messages}) == 4 * COUNT


def test_a_java_sync_master_gets_send_ok_with_our_slave_acking(sync_pair):
    statuses = sync_pair.send_all()
    assert statuses == ["SEND_OK"] * (2 * COUNT + 1)
    sync_pair.wait_logs_identical()
