"""The lite pull consumer end to end against our NameServer and two masters and against
the Java 4.9.7 NameServer and two masters, in the same tests: what our producer sent is
consumed back intact (and what the Java 4.9.8 producer sent), committed, and a new consumer of the group resumes from there; two
consumers of a group share the queues; assign, seeks, offsets for times and tag filters."""

import time

import pytest

from twisted.internet import defer

from rmqproto.client import Message, deferred
from rmqproto.client.blocking import LitePullConsumer, Producer
from support.realreactor import run_reactor
from support.syncclient import wait_until
from client.clusters import cluster_for

pytestmark = pytest.mark.java
TOPIC, TAGGED, TWISTED, JAVA_SENT = "PullTopic", "PullTagged", "PullTwisted", "PullJavaSent"


@pytest.fixture(scope="module", params=["ours", "java"])
def cluster(request, tmp_path_factory):
    with cluster_for(request.param, tmp_path_factory, (TOPIC, TAGGED, TWISTED, JAVA_SENT)) as cluster:
        yield cluster


def send(cluster, prefix, count, topic=TOPIC):
    """``count`` messages of every shape from our producer; body -> (Message, SendResult)."""
    sent = {}
    with Producer(namesrvAddr=cluster.namesrv_addr, producerGroup="pg_pull") as producer:
        for i in range(count):
            body = "%s-%d" % (prefix, i) + ("z" * 6000 if i % 7 == 3 else "")  # some compressed
            message = Message(topic, body, tags="Tag%d" % (i % 3), keys=["%s-k%d" % (prefix, i), "both"],
                              properties={"origin": prefix, "index": str(i)})
            sent[body] = (message, producer.send(message))
    return sent


def consumer(cluster, group, kind=LitePullConsumer, *args, **settings):
    return kind(*args, namesrvAddr=cluster.namesrv_addr, consumerGroup=group,
                consumeFromWhere="CONSUME_FROM_FIRST_OFFSET", **settings)


def drain(consumer, count, timeout=30):
    """Poll until ``count`` messages came (and a short poll brings nothing more)."""
    got, deadline = [], time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        got += consumer.poll(1)
    got += consumer.poll(0.3)
    return got


def check_intact(received, sent):
    assert sorted(m.body.decode() for m in received) == sorted(sent)
    for item in received:
        message, result = sent[item.body.decode()]
        assert (item.topic, item.tags, item.keys) == (message.topic, message.tags, message.keys)
        assert item.user_properties == message.properties
        assert item.msg_id == result.msg_id and item.offset_msg_id == result.offset_msg_id
        assert (item.queue, item.queue_offset) == (result.queue, result.queue_offset)


def test_consume_everything_commit_and_resume(cluster):
    first = send(cluster, "first", 30)
    with consumer(cluster, "cg_resume", autoCommit=False) as c:
        c.subscribe(TOPIC)
        check_intact(drain(c, 30), first)
        assert len(c.assignment()) == 8  # alone in the group: every queue of both masters
        c.commit_sync()
        assert sum(c.committed(q) for q in c.assignment()) == 30
    second = send(cluster, "second", 20)
    with consumer(cluster, "cg_resume", autoCommit=False) as c:  # a new member: from the commits
        c.subscribe(TOPIC)
        check_intact(drain(c, 20), second)


def test_two_members_share_the_queues(cluster):
    sent = send(cluster, "shared", 24)
    settings = dict(rebalanceInterval=300, heartbeatBrokerInterval=300)
    with consumer(cluster, "cg_shared", **settings) as one, \
            consumer(cluster, "cg_shared", **settings) as two:
        one.subscribe(TOPIC)
        two.subscribe(TOPIC)

        def shared():
            one.poll(0.05), two.poll(0.05)
            a, b = set(one.assignment()), set(two.assignment())
            return len(a) == len(b) == 4 and not a & b

        wait_until(shared, timeout=30, interval=0.05)
        for c in (one, two):
            for queue in c.assignment():
                c.seek_to_begin(queue)
        got = []
        while True:  # everything in the topic, this test's messages among them
            more = one.poll(0.5) + two.poll(0.5)
            if not more:
                break
            got += more
    mine = [m for m in got if m.body.decode() in sent]
    check_intact(mine, sent)
    assert len(got) == len({(m.queue, m.queue_offset) for m in got})  # none twice


def test_assign_seek_offsets_for_times_and_tags(cluster):
    sent = send(cluster, "tagged", 18, topic=TAGGED)
    results = [result for _, result in sent.values()]
    with consumer(cluster, "cg_assign") as c:
        queues = c.fetch_message_queues(TAGGED)
        assert len(queues) == 8
        c.assign(queues)
        check_intact(drain(c, 18), sent)
        target = results[5]
        c.seek(target.queue, target.queue_offset)
        again = c.poll(5)
        assert again and again[0].queue == target.queue and again[0].queue_offset == target.queue_offset
        born = min(r.queue_offset for r in results if r.queue == target.queue)
        assert c.offset_for_timestamp(target.queue, 0) == born
        last = max(r.queue_offset for r in results if r.queue == target.queue)
        assert c.offset_for_timestamp(target.queue, int(time.time() * 1000) + 60_000) in (last, last + 1)
        c.seek_to_end(target.queue)
        assert c.poll(0.3) == []
    with consumer(cluster, "cg_tags") as c:
        c.subscribe(TAGGED, "Tag1 || Tag2")
        got = drain(c, 12)
        assert sorted(m.body.decode() for m in got) == sorted(
            body for body, (message, _) in sent.items() if message.tags != "Tag0")


def test_twisted_consumer(cluster):
    sent = send(cluster, "twisted", 16, topic=TWISTED)

    async def scenario(reactor):
        c = consumer(cluster, "cg_twisted", deferred.LitePullConsumer, reactor, autoCommit=False)
        try:
            c.subscribe(TWISTED)
            got = []
            while len(got) < 16:
                more = await c.poll(10)
                assert more
                got += more
            check_intact(got, sent)
            await c.commit_sync()
            committed = await defer.gatherResults([c.committed(q) for q in c.assignment()])
            assert sum(committed) == 16
            queue = got[0].queue
            await c.seek_to_begin(queue)
            again = await c.poll(5)
            assert again[0].queue == queue and again[0].queue_offset == 0
            assert await c.offset_for_timestamp(queue, 0) == 0
        finally:
            await c.close()

    run_reactor(lambda reactor: defer.Deferred.fromCoroutine(scenario(reactor)), timeout=60)


def test_consumes_what_the_java_producer_sent(cluster):
    result = cluster.peers.run_client("rmqproto.peers.SendAll", cluster.namesrv_addr, JAVA_SENT, 4)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    acked = {msg_id: line.split()[0] for line in result.stdout.splitlines()
             if line.split() and line.split()[0] in ("SYNC", "ASYNC", "BATCH")
             for msg_id in line.split()[2].split(",")}
    with consumer(cluster, "cg_java_sent") as c:
        c.subscribe(JAVA_SENT)
        got = drain(c, 16)
    assert len(got) == 16  # sync, async, oneway and one batch of 4 each
    assert set(acked) <= {m.msg_id for m in got}
    for m in got:
        kind, _, seq = m.keys[0].split("-")
        assert m.body.decode() == "%s body %s \u00e9\u4e2d" % (kind, seq)
        assert (m.tags, m.user_properties) == ("Tag" + kind, {"seq": seq})
