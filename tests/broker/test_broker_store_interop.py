"""Whole-broker store interop: a store directory written by ``twistd rmq-master``
is served by a real Java 4.9.7 broker process, and one written by the Java broker is served by
``twistd rmq-master``; Java 4.9.8 clients and mqadmin see every message, intact.

The writer is filled by ``SendMix.java`` (four topics, tags, keys, user properties, a
compressed body, a batch, a delayed message); a lite pull consumer reads the whole of one
topic for ``GroupSeen``, UPDATE_CONSUMER_OFFSET commits it all for ``GroupSeen`` and half of
another for ``GroupHalf``.
After a graceful stop the directory passes ``support.storecheck`` (consume queues = commit
log, whichever broker wrote it) and the reader opens the same directory with the same brokerName, port and
file sizes (the offset msgIds name that address). The writer's delay level 3 is 1 h, so the
delayed message is still in ``SCHEDULE_TOPIC_XXXX`` when it stops; the reader's level 3 is
10 s and its schedule service brings the due time forward to now, as Java's
``correctDeliverTimestamp`` does, and delivers it.
"""

import collections
import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from rmqproto.codec.bodies.route import TopicRouteData
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from support.daemons import start_nameserver
from support.interop import java_available
from support.javapeers import JavaPeers, broker_port
from support.storecheck import check_store
from support.syncclient import call, wait_until
from brokerkit import start_broker

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

PREFIX = "Mix"
TOPICS = [PREFIX + name for name in ("Orders", "Events", "Batch", "Delayed")]
ORDERS, EVENTS, BATCH, DELAYED = TOPICS
SENT_COUNT = 40 + 20 + 8 + 1
QUEUES = 4  # the producer's defaultTopicQueueNums: topics are auto-created with 4 queues
#: the store layout both brokers must agree on (Java property names)
STORE = dict(brokerClusterName="DefaultCluster", brokerName="broker-a",
             mappedFileSizeCommitLog=16 * 1024 * 1024, mappedFileSizeConsumeQueue=6000,
             maxHashSlotNum=5000, maxIndexNum=20000)
DEFAULT_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
#: the writer's levels: level 3 waits an hour
WRITER_LEVELS = DEFAULT_LEVELS.replace("10s", "1h", 1)
DELAY_LEVEL = 3


class Site:
    """Our NameServer, the Java peers and one store directory served by one broker at a time
    (ours or Java's) on one port."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.root = workdir / "store"
        self.namesrv, self.namesrv_addr = start_nameserver(workdir)
        self.peers = JavaPeers(workdir)
        self.port = broker_port()
        self.broker_addr = "127.0.0.1:%d" % self.port
        self.broker = self.levels = None

    def start_ours(self, levels):
        self.levels = levels
        self.broker, _ = start_broker(self.workdir, self.namesrv_addr, listenPort=self.port,
                                      storePathRootDir=self.root, messageDelayLevel=levels, **STORE)
        self.wait_routed("TBW102")

    def start_java(self, levels):
        self.levels = levels
        self.broker = self.peers.broker("java", listenPort=self.port, namesrvAddr=self.namesrv_addr,
                                        storePathRootDir=self.root,
                                        storePathCommitLog=self.root / "commitlog",
                                        messageDelayLevel=levels, **STORE)
        self.wait_routed("TBW102")

    def stop_broker(self):
        """SIGTERM: a graceful stop, after which the store has no ``abort`` file and its
        consume queues match its commit log."""
        self.broker.stop()
        assert not (self.root / "abort").exists(), self.broker.output()[-3000:]
        wait_until(lambda: self.route("TBW102") is None, timeout=30)
        check = check_store(self.root, STORE["mappedFileSizeCommitLog"],
                            STORE["mappedFileSizeConsumeQueue"], self.levels)
        assert check.problems == []
        assert len(check.queue_records("SCHEDULE_TOPIC_XXXX", DELAY_LEVEL - 1)) == 1

    def route(self, topic):
        answer = call(self.namesrv_addr, RC.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        return TopicRouteData.from_json(answer.body) if answer.code == R.SUCCESS else None

    def wait_routed(self, topic):
        wait_until(lambda: self.route(topic) is not None, timeout=60)

    def java_client(self, main, *args):
        result = self.peers.run_client(main, self.namesrv_addr, *args)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout.splitlines()

    def consume(self, main, *args):
        """Run a consumer program; its deliveries, as dicts."""
        lines = self.java_client(main, *args)
        assert any(line.startswith("DONE ") for line in lines), lines
        return [json.loads(line[4:]) for line in lines if line.startswith("MSG ")]

    def max_offset(self, topic, queue_id):
        answer = call(self.broker_addr, RC.GET_MAX_OFFSET, {"topic": topic, "queueId": str(queue_id)})
        assert answer.code == R.SUCCESS, answer.remark
        return int(answer.ext_fields["offset"])

    def max_offsets(self):
        return {(t, q): self.max_offset(t, q) for t in TOPICS for q in range(QUEUES)}

    def consumer_offset(self, group, topic, queue_id):
        answer = call(self.broker_addr, RC.QUERY_CONSUMER_OFFSET, {
            "consumerGroup": group, "topic": topic, "queueId": str(queue_id)})
        return int(answer.ext_fields["offset"]) if answer.code == R.SUCCESS else None

    def commit_offset(self, group, topic, queue_id, offset):
        answer = call(self.broker_addr, RC.UPDATE_CONSUMER_OFFSET, {
            "consumerGroup": group, "topic": topic, "queueId": str(queue_id),
            "commitOffset": str(offset)})
        assert answer.code == R.SUCCESS, answer.remark

    def stop(self):
        self.peers.stop_all()
        if self.broker is not None:
            self.broker.kill()
        self.namesrv.stop()


def fill(site):
    """Fill the writer; what a reader must find: the messages sent, each queue's max offset
    and the committed consumer offsets."""
    lines = site.java_client("rmqproto.peers.SendMix", PREFIX, DELAY_LEVEL)
    sent = [json.loads(line[5:]) for line in lines if line.startswith("SENT ")]
    assert len(sent) == SENT_COUNT and {s["status"] for s in sent} == {"SEND_OK"}
    # GroupSeen reads all of ORDERS with the lite pull consumer; its offsets are then
    # committed with UPDATE_CONSUMER_OFFSET, since the client's own commits are oneway
    # requests that may be lost when a rebalance drops a queue (seen: one queue's missing)
    seen = site.consume("rmqproto.peers.ConsumeAll", "litepull", "GroupSeen", ORDERS, 40, 60,
                        "linger=1000")
    assert len({d["msgId"] for d in seen}) == 40
    max_offsets = site.max_offsets()
    offsets = {}
    for q in range(QUEUES):
        site.commit_offset("GroupSeen", ORDERS, q, max_offsets[ORDERS, q])
        offsets["GroupSeen", ORDERS, q] = max_offsets[ORDERS, q]
        # GroupHalf has read half of each EVENTS queue
        half = max_offsets[EVENTS, q] // 2
        site.commit_offset("GroupHalf", EVENTS, q, half)
        offsets["GroupHalf", EVENTS, q] = half
    # the delayed message waits in SCHEDULE_TOPIC_XXXX
    assert sum(max_offsets[DELAYED, q] for q in range(QUEUES)) == 0
    return sent, max_offsets, offsets


def check_served(site, sent, max_offsets, offsets):
    """The reader serves what the writer wrote: queues, consumer offsets, key and id queries,
    every message to a new group intact, and only unread messages to the groups that read."""
    for topic in TOPICS[:3]:
        site.wait_routed(topic)
    assert {k: v for k, v in site.max_offsets().items() if k[0] != DELAYED} == \
        {k: v for k, v in max_offsets.items() if k[0] != DELAYED}
    assert {k: site.consumer_offset(*k) for k in offsets} == offsets

    by_id = {s["msgId"]: s for s in sent}
    order = next(s for s in sent if s["keys"] == "order-7 customer-2")
    unread = sorted((q, o) for q in range(QUEUES)
                    for o in range(offsets["GroupHalf", EVENTS, q], max_offsets[EVENTS, q]))
    with ThreadPoolExecutor(3) as pool:  # the JVMs that only read, side by side
        queried = pool.submit(site.peers.mqadmin_batch,
                              ["queryMsgByKey", "-t", ORDERS, "-k", "customer-2",
                               "-n", site.namesrv_addr],
                              ["queryMsgById", "-i", order["offsetMsgId"], "-n", site.namesrv_addr])
        everything = pool.submit(site.consume, "rmqproto.peers.ConsumeTopics", "GroupAll",
                                 ",".join(TOPICS), SENT_COUNT, 90, 1500)
        half = pool.submit(site.consume, "rmqproto.peers.ConsumeTopics", "GroupHalf", EVENTS,
                           len(unread), 60, 1500)
    by_key, out = queried.result()
    customer_2 = {s["msgId"] for s in sent if s["topic"] == ORDERS and "customer-2" in s["keys"]}
    assert customer_2 <= set(re.findall(r"[0-9A-F]{32,}", by_key)), by_key
    assert re.search(r"Topic:\s+%s" % ORDERS, out), out
    assert re.search(r"Keys:\s+\[order-7 customer-2\]", out), out
    assert "note=%s" % order["userProperties"]["note"] in out, out
    assert re.search(r"Tags:\s+\[TagB\]", out), out
    assert re.search(r"Queue Offset:\s+%d" % order["queueOffset"], out), out

    # a new group gets every message once, intact; the delayed one too (delivered by the reader)
    deliveries = everything.result()
    assert collections.Counter(d["msgId"] for d in deliveries) == dict.fromkeys(by_id, 1)
    for d in deliveries:
        s = by_id[d["msgId"]]
        assert (d["topic"], d.get("tags"), d["keys"], d["body"]) == \
            (s["topic"], s.get("tags"), s["keys"], s["body"]), d["msgId"]
        assert {k: d["properties"][k] for k in s["userProperties"]} == s["userProperties"]
        if s["topic"] != DELAYED:
            assert (d["queueId"], d["queueOffset"]) == (s["queueId"], s["queueOffset"])
    # the groups that read on the writer go on from their committed offsets (GroupSeen sends
    # to ORDERS first, so only once GroupAll is done)
    assert sorted((d["queueId"], d["queueOffset"]) for d in half.result()) == unread
    seen = site.consume("rmqproto.peers.ConsumeAll", "concurrently", "GroupSeen", ORDERS, 3, 60,
                        "send=3", "linger=1500")
    assert sorted(d["keys"] for d in seen) == ["fresh-key-%d" % i for i in range(3)]


@pytest.fixture
def site(tmp_path):
    site = Site(tmp_path)
    yield site
    site.stop()


def test_java_broker_serves_a_store_our_broker_wrote(site):
    site.start_ours(WRITER_LEVELS)
    written = fill(site)
    site.stop_broker()
    site.start_java(DEFAULT_LEVELS)
    check_served(site, *written)


def test_our_broker_serves_a_store_the_java_broker_wrote(site):
    site.start_java(WRITER_LEVELS)
    written = fill(site)
    site.stop_broker()
    site.start_ours(DEFAULT_LEVELS)
    check_served(site, *written)
