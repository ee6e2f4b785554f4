"""Real RocketMQ 4.9.8 consumers, mqadmin and the C++ client against ``twistd -n rmq-master``
registered with ``twistd -n rmq-nameserver``: everything a Java
producer sent (sync, async, oneway, batch) is consumed exactly once per group by push
consumers (concurrently and orderly) and the lite pull consumer, intact; failed messages
come back through ``%RETRY%<group>`` and end in ``%DLQ%<group>``; delayed messages wait
their level; offsets survive a broker restart."""

import collections
import json
import re
import signal

import pytest

from rmqproto.codec import headers as h
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.message import iter_records
from support import cppclient
from support.interop import java_available
from support.syncclient import call, wait_until
from brokerkit import DaemonCluster

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

TOPIC = "JavaConsumeTopic"
COUNT = 10  # per send kind
KINDS = ("sync", "async", "oneway", "batch")
#: level 2 waits 2 s; retries (levels 3 and up) 1 s
DELAY_LEVELS = "1s 2s " + " ".join(["1s"] * 16)
#: small segments: the messages of this module span several commit-log and consume-queue files
SEGMENTS = dict(mappedFileSizeCommitLog=16 * 1024, mappedFileSizeConsumeQueue=8 * 20)


class Cluster(DaemonCluster):
    def __init__(self, workdir):
        super().__init__(workdir, messageDelayLevel=DELAY_LEVELS, flushConsumerOffsetInterval=1000,
                         **SEGMENTS)

    def restart_broker(self):
        """SIGTERM (twistd exits with the signal after its graceful stop), then start again;
        the first run's log is kept as ``rmq-master-1.log``."""
        assert self.broker.stop() in (0, -signal.SIGTERM), self.broker.output()
        assert "shut down" in self.broker.output()
        self.broker.log_path.rename(self.broker.log_path.with_name("rmq-master-1.log"))
        self.start_broker()

    def create_topic(self, topic, queues=4):
        """UPDATE_AND_CREATE_TOPIC, so consumers started before the first send find the route."""
        header = h.CreateTopicRequestHeader(
            topic=topic, default_topic="TBW102", read_queue_nums=queues, write_queue_nums=queues,
            perm=6, topic_filter_type="SINGLE_TAG", topic_sys_flag=0, order=False)
        answer = call(self.broker_addr, RC.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
        assert answer.code == R.SUCCESS, answer.remark

    def consume(self, mode, group, topic, expected, *options, timeout=60):
        """Run ``ConsumeAll``; its deliveries (dicts) and sent messages."""
        result = self.peers.run_client("rmqproto.peers.ConsumeAll", self.namesrv_addr, mode, group,
                                       topic, expected, timeout, *options)
        assert result.returncode == 0, result.stdout + result.stderr
        lines = result.stdout.splitlines()
        assert any(line.startswith("DONE ") for line in lines), result.stdout + result.stderr
        parsed = collections.defaultdict(list)
        for line in lines:
            kind, _, rest = line.partition(" ")
            if kind in ("MSG", "SENT"):
                parsed[kind].append(json.loads(rest))
        return parsed["MSG"], parsed["SENT"]

    def max_offset(self, topic, queue_id):
        answer = call(self.broker_addr, RC.GET_MAX_OFFSET, {"topic": topic, "queueId": str(queue_id)})
        assert answer.code == R.SUCCESS, answer.remark
        return int(answer.ext_fields["offset"])

    def consumer_offset(self, group, topic, queue_id):
        answer = call(self.broker_addr, RC.QUERY_CONSUMER_OFFSET, {
            "consumerGroup": group, "topic": topic, "queueId": str(queue_id)})
        return int(answer.ext_fields["offset"]) if answer.code == R.SUCCESS else None

    def pull_answer(self, group, topic, queue_id, offset=0, **fields):
        """One PULL_MESSAGE with its own ``*`` subscription (``fields`` replace or, when
        ``None``, drop header fields); the response."""
        header = h.PullMessageRequestHeader(
            consumer_group=group, topic=topic, queue_id=queue_id, queue_offset=offset,
            max_msg_nums=32, sys_flag=0x4, commit_offset=0, suspend_timeout_millis=0,
            subscription="*", sub_version=0)
        ext_fields = dict(header.to_ext_fields(), **fields)
        return call(self.broker_addr, RC.PULL_MESSAGE,
                    {k: v for k, v in ext_fields.items() if v is not None})

    def pull_all(self, group, topic, queue_id):
        """Every record of a queue, pulled as a consumer does (a pull stops at the end of a
        consume-queue file)."""
        records, offset = [], 0
        while offset < self.max_offset(topic, queue_id):
            answer = self.pull_answer(group, topic, queue_id, offset)
            assert answer.code == R.SUCCESS, (answer.code, answer.remark)
            records.extend(iter_records(answer.body))
            offset = int(answer.ext_fields["nextBeginOffset"])
        return records


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = Cluster(tmp_path_factory.mktemp("broker-java-consume"))
    yield cluster
    cluster.stop()


def expected_message(kind, i):
    return {"keys": "%s-key-%d" % (kind, i), "tags": "Tag" + kind,
            "body": "%s body %d \u00e9\u4e2d" % (kind, i), "seq": str(i)}


@pytest.fixture(scope="module")
def produced(cluster):
    """What ``SendAll`` stored in TOPIC: keys -> expected message, and the acknowledged sends."""
    result = cluster.peers.run_client("rmqproto.peers.SendAll", cluster.namesrv_addr, TOPIC, COUNT)
    assert result.returncode == 0, result.stdout + result.stderr
    acked = [line.split() for line in result.stdout.splitlines()
             if line.split()[0] in ("SYNC", "ASYNC", "BATCH")]
    expected = {}
    for kind in KINDS:
        for i in range(COUNT):
            message = expected_message(kind, i)
            expected[message["keys"]] = message
    return expected, acked


def check_everything_once(deliveries, expected):
    """Each expected message delivered exactly once, intact."""
    counts = collections.Counter(d["keys"] for d in deliveries)
    assert set(counts) == set(expected)
    assert [k for k, n in counts.items() if n != 1] == []
    for d in deliveries:
        want = expected[d["keys"]]
        assert d["topic"] == TOPIC
        assert (d["tags"], d["body"], d["properties"]["seq"]) == (want["tags"], want["body"], want["seq"])
        assert d["reconsumeTimes"] == 0
        assert d["properties"]["UNIQ_KEY"] == d["msgId"]
    # every queue offset once
    assert len({(d["queueId"], d["queueOffset"]) for d in deliveries}) == len(deliveries)


def test_push_consumer_concurrently_gets_everything_once(cluster, produced):
    expected, _ = produced
    deliveries, _ = cluster.consume("concurrently", "GroupConcurrently", TOPIC, len(expected),
                                    "linger=1500")
    check_everything_once(deliveries, expected)


def test_push_consumer_orderly_gets_everything_once_in_queue_order(cluster, produced):
    expected, _ = produced
    deliveries, _ = cluster.consume("orderly", "GroupOrderly", TOPIC, len(expected), "linger=1500")
    check_everything_once(deliveries, expected)
    by_queue = collections.defaultdict(list)
    for d in deliveries:
        by_queue[d["queueId"]].append(d["queueOffset"])
    for queue_id, offsets in by_queue.items():
        assert offsets == list(range(len(offsets))), queue_id


def test_push_consumer_gets_only_its_tags(cluster, produced):
    expected, _ = produced
    wanted = {k: m for k, m in expected.items() if m["tags"] in ("Tagsync", "Tagbatch")}
    deliveries, _ = cluster.consume("concurrently", "GroupTagged", TOPIC, len(wanted),
                                    "subscription=Tagsync || Tagbatch", "linger=1500")
    counts = collections.Counter(d["keys"] for d in deliveries)
    assert counts == dict.fromkeys(wanted, 1)


def test_lite_pull_consumer_reads_everything_and_commits(cluster, produced):
    expected, _ = produced
    deliveries, _ = cluster.consume("litepull", "GroupLitePull", TOPIC, len(expected), "linger=1500")
    check_everything_once(deliveries, expected)
    for queue_id in range(4):
        assert cluster.consumer_offset("GroupLitePull", TOPIC, queue_id) == cluster.max_offset(TOPIC, queue_id)


def test_reconsume_later_goes_through_retry_topic_to_dlq(cluster):
    topic, group, count = "JavaRetryTopic", "GroupRetry", 3
    cluster.create_topic(topic)
    deliveries, sent = cluster.consume(
        "concurrently", group, topic, 3 * count, "send=%d" % count, "reconsumeLater=true",
        "maxReconsumeTimes=2", "linger=3000")
    assert [s["status"] for s in sent] == ["SEND_OK"] * count
    times = collections.defaultdict(list)
    for d in deliveries:
        times[d["keys"]].append(d["reconsumeTimes"])
        assert d["topic"] == topic  # the client restores the real topic of a retry
        if d["reconsumeTimes"]:
            assert d["retryTopic"] == topic
    assert {k: sorted(v) for k, v in times.items()} == {
        "fresh-key-%d" % i: [0, 1, 2] for i in range(count)}
    # two retries of each message went through the group's retry topic
    retry = "%RETRY%" + group
    assert sum(cluster.max_offset(retry, q) for q in range(1)) == 2 * count
    dlq = "%DLQ%" + group
    assert cluster.max_offset(dlq, 0) == count
    records = cluster.pull_all("DlqReader", dlq, 0)
    assert sorted(r.properties["KEYS"] for r in records) == ["fresh-key-%d" % i for i in range(count)]
    for record in records:
        assert record.reconsume_times == 3  # Java counts the move to the DLQ too
        assert record.properties["RETRY_TOPIC"] == topic
        assert record.body.decode() == "fresh body %s \u00e9\u4e2d" % record.properties["seq"]


def test_delay_level_2_waits_its_delay(cluster):
    cluster.create_topic("JavaDelayTopic")
    deliveries, sent = cluster.consume("concurrently", "GroupDelay", "JavaDelayTopic", 2,
                                       "send=2", "delayLevel=2")
    assert [s["status"] for s in sent] == ["SEND_OK"] * 2
    assert sorted(d["keys"] for d in deliveries) == ["fresh-key-0", "fresh-key-1"]
    sent_at = {s["msgId"]: s["sendTime"] for s in sent}
    for d in deliveries:
        assert d["receivedAt"] - sent_at[d["msgId"]] >= 2000
        assert d["storeTimestamp"] - d["bornTimestamp"] >= 2000


def test_mqadmin_query_message_by_key_and_id(cluster, produced):
    _, acked = produced
    sync = [line for line in acked if line[0] == "SYNC"]
    uniq_id, offset_id = sync[3][2], sync[3][3]
    out = cluster.peers.mqadmin("queryMsgByKey", "-t", TOPIC, "-k", "sync-key-3",
                                "-n", cluster.namesrv_addr)
    assert uniq_id in out, out
    out = cluster.peers.mqadmin("queryMsgById", "-i", offset_id, "-n", cluster.namesrv_addr)
    assert re.search(r"Topic:\s+%s" % TOPIC, out), out
    assert re.search(r"Keys:\s+\[sync-key-3\]", out), out
    assert re.search(r"Tags:\s+\[Tagsync\]", out), out
    # the message track asks who consumes the topic and whether those groups are online
    assert "MessageTrack [consumerGroup=GroupConcurrently, trackType=NOT_ONLINE" in out, out


def test_mqadmin_consumer_progress(cluster, produced):
    wait_until(lambda: all(cluster.consumer_offset("GroupConcurrently", TOPIC, q)
                           == cluster.max_offset(TOPIC, q) for q in range(4)), timeout=10)
    out = cluster.peers.mqadmin("consumerProgress", "-g", "GroupConcurrently",
                                "-n", cluster.namesrv_addr)
    rows = re.findall(r"^%s\s+broker-a\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)" % TOPIC, out, re.M)
    assert len(rows) == 4, out
    total = 0
    for queue_id, broker_offset, consumer_offset, diff in rows:
        assert broker_offset == consumer_offset and diff == "0", out
        total += int(broker_offset)
    assert total == 4 * COUNT
    assert re.search(r"Diff Total:\s+0", out), out


def test_mqadmin_broker_and_topic_status(cluster, produced):
    out = cluster.peers.mqadmin("brokerStatus", "-b", cluster.broker_addr, "-n", cluster.namesrv_addr)
    status = dict(re.findall(r"^(\w+)\s*:\s*(.*?)\s*$", out, re.M))
    assert status.get("brokerVersionDesc") == "V4_9_8", out
    assert int(status["msgPutTotalTodayNow"]) >= 4 * COUNT, out
    assert "commitLogDiskRatio" in status and "putTps" in status, out
    out = cluster.peers.mqadmin("topicStatus", "-t", TOPIC, "-n", cluster.namesrv_addr)
    rows = re.findall(r"^broker-a\s+(\d+)\s+(\d+)\s+(\d+)", out, re.M)
    assert sorted(int(q) for q, _, _ in rows) == [0, 1, 2, 3], out
    assert sum(int(high) for _, _, high in rows) == 4 * COUNT, out
    assert all(int(low) == 0 for _, low, _ in rows), out


def test_bad_pulls_get_java_codes_and_the_broker_keeps_serving(cluster, produced):
    high = cluster.max_offset(TOPIC, 0)
    moved = cluster.pull_answer("BadPuller", TOPIC, 0, offset=10 ** 12)
    assert (moved.code, moved.remark) == (R.PULL_OFFSET_MOVED, "OFFSET_OVERFLOW_BADLY")
    assert int(moved.ext_fields["nextBeginOffset"]) == high
    moved = cluster.pull_answer("BadPuller", TOPIC, 0, offset=-5)
    assert (moved.code, moved.remark) == (R.PULL_OFFSET_MOVED, "OFFSET_TOO_SMALL")
    assert int(moved.ext_fields["nextBeginOffset"]) == 0
    answer = cluster.pull_answer("BadPuller", TOPIC, 99)
    assert answer.code == R.SYSTEM_ERROR and answer.remark.startswith("queueId[99] is illegal")
    assert cluster.pull_answer("BadPuller", "NoSuchTopic", 0).code == R.TOPIC_NOT_EXIST
    assert cluster.pull_answer("BadPuller", "bad*topic", 0).code == R.TOPIC_NOT_EXIST
    for broken in (dict(queueOffset=None), dict(queueId="x"), dict(consumerGroup=None)):
        answer = cluster.pull_answer("BadPuller", TOPIC, 0, **broken)
        assert answer.code == R.SYSTEM_ERROR, broken
    records = cluster.pull_all("BadPuller", TOPIC, 0)
    assert [r.queue_offset for r in records] == list(range(high))


@pytest.mark.skipif(not cppclient.available(), reason="the rocketmq C++ client is not installed")
def test_cpp_client_produces_and_consumes(cluster):
    report = cppclient.run(cluster.namesrv_addr, "CppTopic", 10, "cpp_consume_group", timeout=60)
    assert report == {"sent": 10, "received": 10}


def test_consumer_offsets_survive_a_restart(cluster, produced):
    """Last: restarts the broker. The group consumed everything before; after a graceful
    stop and a restart a new consumer of the group gets only what is sent afterwards."""
    wait_until(lambda: all(cluster.consumer_offset("GroupConcurrently", TOPIC, q)
                           == cluster.max_offset(TOPIC, q) for q in range(4)), timeout=10)
    cluster.restart_broker()
    for queue_id in range(4):
        assert cluster.consumer_offset("GroupConcurrently", TOPIC, queue_id) == cluster.max_offset(TOPIC, queue_id)
    deliveries, sent = cluster.consume("concurrently", "GroupConcurrently", TOPIC, 5, "send=5",
                                       "linger=1500")
    assert [s["status"] for s in sent] == ["SEND_OK"] * 5
    assert sorted(d["keys"] for d in deliveries) == ["fresh-key-%d" % i for i in range(5)]
    # the consumer's parked pulls were woken by the arrivals, not by the 5 s check
    sent_at = {s["msgId"]: s["sendTime"] for s in sent}
    assert max(d["receivedAt"] - sent_at[d["msgId"]] for d in deliveries) < 4000
