"""RocketMQ 5.3.3's tools and client against our master/slave pair and against a Java 4.9.7
broker: ``mqadmin haStatus``, ``topicStatus`` and ``consumerProgress -g`` answer correctly
from ours and fail against Java's (it refuses GET_BROKER_HA_STATUS and GET_TOPIC_CONFIG), and
the 5.x ``DefaultLitePullConsumer`` (LITE_PULL_MESSAGE) consumes from ours, and ``consumerStatus``
shows its running info through our broker (GET_CONSUMER_RUNNING_INFO).

The two sides have a NameServer each, so that every mqadmin command meets one kind of
broker. JVM starts: the Java broker (while the consumer runs), one lite-pull consumer, one
batch of mqadmin commands.
"""

import json
import re
import subprocess

import pytest

from rmqproto.codec import headers as h
from rmqproto.codec.bodies.offsets import ConsumeStats
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from support.daemons import start_nameserver
from support.hapair import HAPair, runtime_info
from support.javapeers import broker_port, wait_for_port
from support.syncclient import call, wait_until

pytestmark = pytest.mark.java

TOPIC, GROUP, COUNT, QUEUES = "Topic5", "LiteGroup5", 10, 4


def create_topic(addr, topic, queues=QUEUES):
    header = h.CreateTopicRequestHeader(topic=topic, default_topic="TBW102", read_queue_nums=queues,
                                        write_queue_nums=queues, perm=6,
                                        topic_filter_type="SINGLE_TAG", topic_sys_flag=0,
                                        order=False)
    assert call(addr, RC.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields()).code == R.SUCCESS


@pytest.fixture
def sides(tmp_path):
    """Our NameServer, master and slave; a Java 4.9.7 broker under a NameServer of its own."""
    (tmp_path / "ours").mkdir()
    (tmp_path / "java").mkdir()
    pair = HAPair(tmp_path / "ours", "ours", topic=TOPIC)
    java_ns = None
    try:
        java_ns, java_ns_addr = start_nameserver(tmp_path / "java")
        port = broker_port()
        java = pair.peers.broker("java", wait=False, listenPort=port, namesrvAddr=java_ns_addr,
                                 brokerName="broker-java", mappedFileSizeCommitLog=16 * 1024 * 1024)
        yield pair, java_ns_addr, (java, port)
    finally:
        pair.stop()
        if java_ns is not None:
            java_ns.stop()


def rows(output, first):
    """The table lines of an mqadmin output that start with ``first`` (a regex), split."""
    return [line.split() for line in output.splitlines() if re.match(first, line)]


def printed(path, kind):
    """The JSON of the whole lines starting with ``kind`` that a client program printed."""
    text = path.read_text()
    return [json.loads(line[len(kind):]) for line in text[:text.rfind("\n") + 1].splitlines()
            if line.startswith(kind)]


def committed(addr, group=GROUP):
    """The messages ``group`` committed on the broker at ``addr``."""
    answer = call(addr, RC.GET_CONSUME_STATS,
                  h.GetConsumeStatsRequestHeader(consumer_group=group, topic=TOPIC).to_ext_fields())
    return sum(w.consumer_offset for w in ConsumeStats.from_json(answer.body).offset_table.values())


def run_mqadmin(pair, java_broker, java_port, java_ns_addr):
    """Prepare the Java broker (started meanwhile): the topic, and an offset of the group; then
    the mqadmin 5.3.3 commands on both sides, in one JVM; their outputs."""
    wait_for_port(java_port, 90, java_broker)
    java_addr = "127.0.0.1:%d" % java_port
    create_topic(java_addr, TOPIC)
    create_topic(java_addr, "%RETRY%" + GROUP, queues=1)
    offset = h.UpdateConsumerOffsetRequestHeader(consumer_group=GROUP, topic=TOPIC, queue_id=0,
                                                 commit_offset=0)
    assert call(java_addr, RC.UPDATE_CONSUMER_OFFSET, offset.to_ext_fields()).code == R.SUCCESS
    ours = ["-n", pair.namesrv_addr]
    java = ["-n", java_ns_addr]
    return pair.peers.mqadmin5_batch(
        ["haStatus", "-b", pair.master_addr, *ours], ["haStatus", "-b", pair.slave_addr, *ours],
        ["topicStatus", "-t", TOPIC, *ours], ["consumerProgress", "-g", GROUP, *ours],
        ["consumerStatus", "-g", GROUP, *ours],
        ["cloneGroupOffset", "-s", GROUP, "-d", GROUP + "Copy", "-t", TOPIC, *ours],
        ["haStatus", "-b", java_addr, *java], ["topicStatus", "-t", TOPIC, *java],
        ["consumerProgress", "-g", GROUP, *java])


def test_rocketmq5_tools_and_lite_pull_consumer(sides):
    pair, java_ns_addr, (java_broker, java_port) = sides
    create_topic(pair.master_addr, TOPIC)
    pair.wait_in_sync()

    # the 5.3.3 lite pull consumer (subscribe mode) reads what its producer sent, and stays
    # online (linger) for consumerStatus
    output = pair.workdir / "litepull.out"
    with output.open("w") as sink:
        consumer = subprocess.Popen(pair.peers._java(
            pair.peers.client5_cp, "rmqproto.peers.ConsumeAll", pair.namesrv_addr, "litepull",
            GROUP, TOPIC, str(COUNT), "180", "send=%d" % COUNT, "linger=170000"),
            cwd=pair.workdir, stdout=sink, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: len(printed(output, "MSG ")) >= COUNT, timeout=90)
        sent, got = printed(output, "SENT "), printed(output, "MSG ")
        assert sorted(m["msgId"] for m in got) == sorted(m["msgId"] for m in sent)
        wait_until(lambda: committed(pair.master_addr) == COUNT)  # auto commit, every second
        max_offset = pair.wait_logs_identical()
        wait_until(lambda: runtime_info(pair.master_addr)["inSyncSlaveNums"] == "1")
        outputs = run_mqadmin(pair, java_broker, java_port, java_ns_addr)
    finally:
        consumer.kill()
        consumer.wait()
    (master, slave, topic_status, progress, status, cloned,
     java_ha, java_topic_status, java_progress) = outputs

    # haStatus of the master: its offset, one slave in sync with all of it
    assert "#MasterAddr\t%s" % pair.master_addr in master, master
    assert "#MasterCommitLogMaxOffset\t%d" % max_offset in master, master
    assert "#SlaveNum\t1" in master and "#InSyncSlaveNum\t1" in master, master
    [slave_row] = rows(master, r"127\.0\.0\.1:\d+ ")
    assert slave_row[1:3] == [str(max_offset), "0"] and slave_row[4] == "OK", master
    assert int(slave_row[-1]) == max_offset, master  # transferFromWhere: all was sent
    # haStatus of the slave: its HA client
    assert "#MasterAddr\t127.0.0.1:%d" % (pair.master_port + 1) in slave, slave
    assert "#CommitLogMaxOffset\t%d" % max_offset in slave, slave
    assert re.search(r"#LastReadTime\t\d{4}-\d\d-\d\d", slave), slave

    # topicStatus: every queue of the topic, the messages sent over them
    queues = rows(topic_status, r"broker-a ")
    assert [int(r[1]) for r in queues] == list(range(QUEUES)), topic_status
    assert sum(int(r[3]) for r in queues) == COUNT, topic_status
    assert "Topic Put TPS:" in topic_status

    # consumerProgress -g: every queue consumed to its end, nothing in flight
    queues = rows(progress, TOPIC + " ")
    assert len(queues) == QUEUES, progress
    assert all(r[3] == r[4] and r[5:7] == ["0", "0"] for r in queues), progress
    assert sum(int(r[4]) for r in queues) == COUNT, progress
    assert "Consume Diff Total: 0" in progress and "Consume Inflight Total: 0" in progress

    # consumerStatus: the consumer's own running info, relayed by the broker
    assert re.search(r"^1\s+\S+@\S+\s+V5_3_3\s", status, re.M), status
    assert "Same subscription in the same group of consumer" in status, status

    # cloneGroupOffset: the copy starts where the group is
    assert "clone group offset success" in cloned, cloned
    assert committed(pair.master_addr, GROUP + "Copy") == COUNT

    # Java 4.9.7 refuses what these commands ask
    assert "request type 907 not supported" in java_ha, java_ha
    for output in (java_topic_status, java_progress):
        assert "request type 351 not supported" in output, output
        assert "command failed" in output, output
    refused = re.findall(r"request type (\d+) not supported", pair.master.output()
                         + pair.slave.output())
    assert refused == [], refused
