"""The producer end to end, on both transports, against our NameServer and brokers and
against the Java 4.9.7 NameServer and brokers, in the same tests: every kind of send,
read back by the Java 4.9.8 push consumer with bodies, keys, tags and properties intact;
and a master killed while a producer keeps sending (the sends move to the other master,
none is lost)."""

import json
import threading

import pytest
from twisted.internet import defer

from rmqproto.client import ClientError, Message, SendStatus
from rmqproto.client import blocking, deferred
from support.realreactor import run_reactor
from support.syncclient import wait_until
from client.clusters import BROKERS, cluster_for, route_brokers

pytestmark = pytest.mark.java
TOPIC, FAILOVER_TOPIC, AUTO_TOPIC = "ClientTopic", "ClientFailover", "ClientAutoTopic"


@pytest.fixture(scope="module", params=["ours", "java"])
def cluster(request, tmp_path_factory):
    with cluster_for(request.param, tmp_path_factory, (TOPIC, FAILOVER_TOPIC)) as cluster:
        cluster.sent = {}  # body -> (message, SendResult or None)
        yield cluster


def messages(prefix, count, topic=TOPIC, **kw):
    return [Message(topic, "%s-%d" % (prefix, i), tags="Tag%d" % (i % 3), keys=["%s-k%d" % (prefix, i), "shared"],
                    properties={"origin": prefix, "index": str(i)}, **kw) for i in range(count)]


def record(cluster, sent, result):
    for message in sent:
        cluster.sent[message.body.decode()] = (message, result)


def test_blocking_producer_sends_every_kind(cluster):
    with blocking.Producer(namesrvAddr=cluster.namesrv_addr, producerGroup="pg_blocking") as producer:
        for message in messages("sync", 6):
            result = producer.send(message)
            assert result.status is SendStatus.SEND_OK
            record(cluster, [message], result)
        big = Message(TOPIC, "big-" + "z" * 9000, tags="Big", keys="big-key")
        record(cluster, [big], producer.send(big))
        batch = messages("batch", 4)
        result = producer.send_batch(batch)
        assert len(result.msg_id.split(",")) == 4
        record(cluster, batch, result)
        for message in messages("oneway", 2):
            assert producer.send_oneway(message) is None
            record(cluster, [message], None)
        delayed = messages("delayed", 1, delay_level=1)
        record(cluster, delayed, producer.send(delayed[0]))
        by_arg = lambda queues, message, arg: queues[arg % len(queues)]  # noqa: E731
        for i, message in enumerate(messages("ordered", 5)):
            result = producer.send(message, selector=by_arg, arg=i)
            assert result.queue.queue_id == i % 4  # broker-a's queues 0..3 come first
            record(cluster, [message], result)
        auto = messages("auto", 1, topic=AUTO_TOPIC)
        record(cluster, auto, producer.send(auto[0]))
        assert {r.queue.broker_name for _, r in cluster.sent.values() if r} == set(BROKERS)
        with pytest.raises(ClientError, match="illegal characters"):
            producer.send(Message("bad topic", b"x"))


def test_twisted_producer_sends_every_kind(cluster):
    async def scenario(reactor):
        producer = deferred.Producer(reactor, namesrvAddr=cluster.namesrv_addr,
                                     producerGroup="pg_twisted")
        try:
            for message in messages("tx-sync", 4):
                record(cluster, [message], await producer.send(message))
            async_messages = messages("tx-async", 8)
            results = await defer.gatherResults([producer.send_async(m) for m in async_messages])
            for message, result in zip(async_messages, results):
                record(cluster, [message], result)
            batch = messages("tx-batch", 3)
            record(cluster, batch, await producer.send_batch(batch))
            ordered = messages("tx-ordered", 3)
            for message in ordered:
                result = await producer.send(message, selector=lambda queues, m, arg: queues[-1])
                assert result.queue.broker_name == "broker-b" and result.queue.queue_id == 3
                record(cluster, [message], result)
            oneway = messages("tx-oneway", 2)
            for message in oneway:
                await producer.send_oneway(message)
            record(cluster, oneway, None)
        finally:
            await producer.close()

    run_reactor(lambda reactor: defer.Deferred.fromCoroutine(scenario(reactor)), timeout=60)
    assert all(r.status is SendStatus.SEND_OK for _, r in cluster.sent.values() if r)


def test_sends_move_to_the_other_master_when_one_is_killed(cluster):
    acked, errors = [], []
    producer = blocking.Producer(namesrvAddr=cluster.namesrv_addr, producerGroup="pg_failover")

    def keep_sending():
        try:
            for message in messages("failover", 150, topic=FAILOVER_TOPIC):
                acked.append((message, producer.send(message)))
        except ClientError as exc:  # pragma: no cover - reported below
            errors.append(exc)

    sender = threading.Thread(target=keep_sending)
    sender.start()
    try:
        wait_until(lambda: len(acked) >= 40 or errors, timeout=60, interval=0.01)
        cluster.kill("broker-b")
        killed_at = len(acked)
    finally:
        sender.join(120)
        producer.close()
    assert not errors and len(acked) == 150
    assert {r.queue.broker_name for _, r in acked[:killed_at]} == set(BROKERS)
    assert {r.queue.broker_name for _, r in acked[killed_at + 1:]} == {"broker-a"}
    for message, result in acked:
        record(cluster, [message], result)
    cluster.start("broker-b")  # to read back what it acknowledged before it was killed


def test_the_java_consumer_reads_back_everything_intact(cluster):
    wait_until(lambda: route_brokers(cluster, FAILOVER_TOPIC) == set(BROKERS), timeout=60)
    result = cluster.peers.run_client("rmqproto.peers.ConsumeTopics", cluster.namesrv_addr,
                                      "client_check", ",".join((TOPIC, FAILOVER_TOPIC, AUTO_TOPIC)),
                                      len(cluster.sent), 90, 1000)
    delivered = {}
    for line in result.stdout.splitlines():
        if line.startswith("MSG "):
            item = json.loads(line[4:])
            delivered[item["body"]] = item
    assert sorted(cluster.sent) == sorted(delivered), result.stderr[-2000:]
    for body, (message, send_result) in cluster.sent.items():
        item = delivered[body]
        assert (item["topic"], item["tags"], item["keys"]) == (
            message.topic, message.tags, " ".join(message.keys))
        assert {k: item["properties"].get(k) for k in message.properties} == message.properties
        if send_result is not None:
            assert item["msgId"] in send_result.msg_id.split(",")
            assert item["queueId"] == send_result.queue.queue_id
        if message.delay_level:  # level 1: stored again 1 s after it was born
            assert item["storeTimestamp"] - item["bornTimestamp"] >= 900
