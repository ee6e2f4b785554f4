"""The push consumer end to end against our NameServer and two masters and against the
Java 4.9.7 ones, in the same tests: concurrent and orderly listeners, blocking and
Twisted, retries through the group's retry topic up to its DLQ, tag (and, on the Java
broker, SQL92) filters, two members splitting the queues as Java's strategy does and
one taking over when the other leaves, broadcasting with a local offset file."""

import collections
import re
import threading
import time

import pytest

from twisted.internet import defer

from rmqproto.client import Message, deferred
from rmqproto.client.allocate import allocate_by_circle
from rmqproto.client.blocking import Producer, PushConsumer
from rmqproto.client.offsetfile import read_local_offsets
from rmqproto.client.push import ConsumeStatus
from rmqproto.codec.codes import RequestCode, ResponseCode
from support.realreactor import run_reactor
from support.syncclient import call, wait_until
from client.clusters import cluster_for

pytestmark = pytest.mark.java
TOPICS = ("PushTopic", "PushSplit", "PushOrderly", "PushBroadcast", "PushSql", "PushMore")
#: short delay levels so that a message sent back comes again at once
SETTINGS = dict(messageDelayLevel=" ".join(["1s"] * 18), enablePropertyFilter="true")


@pytest.fixture(scope="module", params=["ours", "java"])
def cluster(request, tmp_path_factory):
    with cluster_for(request.param, tmp_path_factory, TOPICS, **SETTINGS) as cluster:
        cluster.kind = request.param
        yield cluster


def send(cluster, topic, count, prefix="m", selector=None):
    with Producer(namesrvAddr=cluster.namesrv_addr, producerGroup="pg_push") as producer:
        return [producer.send(Message(topic, "%s-%d" % (prefix, i), tags="Tag%d" % (i % 3),
                                      keys="k%d" % i, properties={"index": str(i)}),
                              selector, i) for i in range(count)]


def consumer(cluster, group, kind=PushConsumer, *args, **settings):
    return kind(*args, namesrvAddr=cluster.namesrv_addr, consumerGroup=group,
                consumeFromWhere="CONSUME_FROM_FIRST_OFFSET", **settings)


class Recorder:
    """A listener that records what it got; messages whose body is in ``fail`` fail
    (only the first time with ``once``)."""

    def __init__(self, fail=(), once=False):
        self.got, self.fail, self.once = [], set(fail), once
        self.lock = threading.Lock()

    def __call__(self, messages):
        with self.lock:
            self.got += messages
            failed = {m.body.decode() for m in messages} & self.fail
            if self.once:
                self.fail -= failed
        return ConsumeStatus.RECONSUME_LATER if failed else ConsumeStatus.CONSUME_SUCCESS

    def bodies(self):
        with self.lock:
            return collections.Counter(m.body.decode() for m in self.got)


def max_offset(cluster, topic):
    total = 0
    for address in cluster.addresses.values():
        answer = call(address, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": "0"})
        total += int(answer.ext_fields["offset"]) if answer.code == ResponseCode.SUCCESS else 0
    return total


def test_concurrent_with_tags_retries_and_dlq(cluster):
    results = send(cluster, TOPICS[0], 30)
    listener = Recorder(fail={"m-4", "m-7"})
    # the retry topic's route comes broker by broker: asked for again every second
    with consumer(cluster, "cg_push", maxReconsumeTimes=1, persistConsumerOffsetInterval=300,
                  pollNameServerInterval=1000, rebalanceInterval=1000) as c:
        c.subscribe(TOPICS[0], "Tag1 || Tag2")
        c.register_message_listener(listener)
        c.start()
        wanted = {"m-%d" % i for i in range(30) if i % 3}
        # m-4 and m-7 fail every time: once more from the retry topic, then to the DLQ
        wait_until(lambda: set(listener.bodies()) == wanted and listener.bodies()["m-4"] == 2
                   and listener.bodies()["m-7"] == 2, timeout=40)
        wait_until(lambda: max_offset(cluster, "%DLQ%cg_push") == 2, timeout=20)
    again = [m for m in listener.got if m.body.decode() == "m-4"]
    assert [m.reconsume_times for m in again] == [0, 1]
    assert again[1].topic == TOPICS[0] and again[1].msg_id == again[0].msg_id
    assert all(m.tags in ("Tag1", "Tag2") for m in listener.got)
    assert max(listener.bodies()[b] for b in wanted - {"m-4", "m-7"}) == 1
    ids = {m.msg_id for m in listener.got}
    assert ids == {r.msg_id for i, r in enumerate(results) if i % 3}


def test_two_members_split_by_circle_and_take_over(cluster):
    settings = dict(allocateMessageQueueStrategy="AVG_BY_CIRCLE", rebalanceInterval=1000)
    one_got, two_got = Recorder(), Recorder()
    one = consumer(cluster, "cg_split", **settings)
    two = consumer(cluster, "cg_split", **settings)
    for c, listener in ((one, one_got), (two, two_got)):
        c.subscribe(TOPICS[1])
        c.register_message_listener(listener)
        c.start()
    try:
        ids = sorted([one.core.client_id, two.core.client_id])

        def split_as_java():
            queues = [q for q in one.core.routes[TOPICS[1]][0].read_queues]
            return all(set(q for q in c.core.assigned if q.topic == TOPICS[1])
                       == set(allocate_by_circle(queues, ids, c.core.client_id)) for c in (one, two))

        wait_until(split_as_java, timeout=30)
        send(cluster, TOPICS[1], 24, "before")
        wait_until(lambda: len(one_got.bodies()) + len(two_got.bodies()) == 24, timeout=30)
        assert one_got.bodies() and two_got.bodies()
        assert not set(one_got.bodies()) & set(two_got.bodies())
    finally:
        two.shutdown()
    wait_until(lambda: len([q for q in one.core.assigned if q.topic == TOPICS[1]]) == 8, timeout=30)
    send(cluster, TOPICS[1], 12, "after")
    try:
        wait_until(lambda: {"after-%d" % i for i in range(12)} <= set(one_got.bodies()), timeout=30)
    finally:
        one.shutdown()


def test_orderly_twisted(cluster):
    by_key = lambda queues, message, arg: queues[arg % 2]  # noqa: E731: two queues, in order
    send(cluster, TOPICS[2], 20, "o", selector=by_key)
    got, busy, overlaps = collections.defaultdict(list), set(), []

    async def scenario(reactor):
        c = consumer(cluster, "cg_orderly", deferred.PushConsumer, reactor)
        c.subscribe(TOPICS[2])

        async def listener(messages):
            queue = messages[0].queue
            if queue in busy:
                overlaps.append(queue)
            busy.add(queue)
            await deferred.task.deferLater(reactor, 0.01)
            busy.discard(queue)
            body = messages[0].body.decode()
            if body == "o-6" and not got[queue].count(body):
                got[queue].append(body)
                return "SUSPEND_CURRENT_QUEUE_A_MOMENT"  # consumed again after a second, in order
            got[queue].append(body)
            return ConsumeStatus.SUCCESS

        c.register_message_listener(lambda m: defer.Deferred.fromCoroutine(listener(m)), orderly=True)
        try:
            await c.start()
            while sum(len(v) for v in got.values()) < 21:
                await deferred.task.deferLater(reactor, 0.1)
            assert all(c.core.process_queues[q].locked for q in got)
        finally:
            await c.shutdown()

    run_reactor(lambda reactor: defer.Deferred.fromCoroutine(scenario(reactor)), timeout=50)
    assert not overlaps and len(got) == 2
    for bodies in got.values():
        numbers = [int(b.split("-")[1]) for b in bodies]
        if 6 in numbers:  # suspended once: consumed again before anything after it
            at = numbers.index(6)
            assert numbers[at + 1] == 6
            del numbers[at]
        assert numbers == sorted(set(numbers))


def test_twisted_concurrent_and_blocking_orderly(cluster):
    send(cluster, TOPICS[5], 12, "x", selector=lambda queues, message, arg: queues[arg % 3])
    twisted_got = Recorder(fail={"x-5"}, once=True)
    orderly_got, overlaps, busy = Recorder(), [], set()

    def orderly(messages):  # on the pool's threads, one queue at a time
        queue = messages[0].queue
        if queue in busy:
            overlaps.append(queue)
        busy.add(queue)
        time.sleep(0.01)
        busy.discard(queue)
        return orderly_got(messages) and "SUCCESS"

    with consumer(cluster, "cg_more_orderly") as blocking_orderly:
        blocking_orderly.subscribe(TOPICS[5])
        blocking_orderly.register_message_listener(orderly, orderly=True)
        blocking_orderly.start()

        async def scenario(reactor):
            c = consumer(cluster, "cg_more_twisted", deferred.PushConsumer, reactor,
                         pollNameServerInterval=1000, rebalanceInterval=1000)
            c.subscribe(TOPICS[5], "*")
            c.register_message_listener(twisted_got)
            try:
                await c.start()
                while twisted_got.bodies()["x-5"] < 2 or len(twisted_got.bodies()) < 12:
                    await deferred.task.deferLater(reactor, 0.1)
            finally:
                await c.shutdown()

        run_reactor(lambda reactor: defer.Deferred.fromCoroutine(scenario(reactor)), timeout=50)
        wait_until(lambda: len(orderly_got.bodies()) == 12, timeout=30)
    assert [m.reconsume_times for m in twisted_got.got if m.body == b"x-5"] == [0, 1]
    assert not overlaps and set(orderly_got.bodies().values()) == {1}
    by_queue = collections.defaultdict(list)
    for m in orderly_got.got:
        by_queue[m.queue].append(m.queue_offset)
    assert len(by_queue) == 3 and all(offsets == sorted(offsets) for offsets in by_queue.values())


def test_broadcasting_with_a_local_offset_file(cluster, tmp_path):
    send(cluster, TOPICS[3], 10, "first")
    settings = dict(messageModel="BROADCASTING", offsetStoreDir=str(tmp_path),
                    persistConsumerOffsetInterval=300)
    listeners = [Recorder(), Recorder()]
    members = [consumer(cluster, "cg_broadcast", instanceName="member%d" % i, **settings)
               for i in range(2)]
    for c, listener in zip(members, listeners):
        c.subscribe(TOPICS[3])
        c.register_message_listener(listener)
        c.start()
    try:
        for listener in listeners:  # each member gets everything
            wait_until(lambda: len(listener.bodies()) == 10, timeout=30)
    finally:
        for c in members:
            c.shutdown()
    path = members[0].offsets_path
    assert path.startswith(str(tmp_path)) and path.endswith("member0/cg_broadcast/offsets.json")
    assert sum(read_local_offsets(path).values()) == 10
    send(cluster, TOPICS[3], 5, "second")
    listener = Recorder()
    with consumer(cluster, "cg_broadcast", instanceName="member0", **settings) as c:
        c.subscribe(TOPICS[3])
        c.register_message_listener(listener)
        c.start()
        wait_until(lambda: len(listener.bodies()) == 5, timeout=30)
        time.sleep(0.5)  # nothing more comes
    assert set(listener.bodies()) == {"second-%d" % i for i in range(5)}


def test_sql92_filter_where_the_broker_has_it(cluster):
    if cluster.kind == "ours":
        return  # our broker has no SQL92 filtering (enablePropertyFilter is not implemented)
    send(cluster, TOPICS[4], 12)
    listener = Recorder()
    with consumer(cluster, "cg_sql") as c:
        c.subscribe(TOPICS[4], "index BETWEEN 3 AND 6", "SQL92")
        c.register_message_listener(listener)
        c.start()
        wait_until(lambda: len(listener.bodies()) == 4, timeout=30)
    assert set(listener.bodies()) == {"m-3", "m-4", "m-5", "m-6"}


def mqadmin_batch(cluster, commands):
    """The outputs of the mqadmin 4.9.8 ``commands`` run in one JVM (``MQAdminBatch``)."""
    args = [str(a) for command in commands
            for a in ("--next", *command, "-n", cluster.namesrv_addr)][1:]
    result = cluster.peers.run_client("rmqproto.peers.MQAdminBatch", *args)
    parts = re.split(r"^=== mqadmin .*$", result.stdout + result.stderr, flags=re.M)
    assert len(parts) == len(commands) + 1, result.stdout + result.stderr
    return parts[1:]


def test_mqadmin_consumer_connection_status_and_reset(cluster):
    sent = {r.msg_id for r in send(cluster, TOPICS[0], 6, "status")}
    listener = Recorder()
    mine = lambda: collections.Counter(m.msg_id for m in listener.got if m.msg_id in sent)  # noqa: E731
    with consumer(cluster, "cg_status", persistConsumerOffsetInterval=300) as c:
        c.subscribe(TOPICS[0], "Tag0 || Tag1 || Tag2")
        c.register_message_listener(listener)
        c.start()
        wait_until(lambda: set(mine()) == sent, timeout=30)
        # a broker resets only a group whose offsets it holds
        wait_until(lambda: all(c.core.committed.get(q) for q in c.core.assigned if q.topic == TOPICS[0]
                               and c.core.offsets.get(q)), timeout=10)
        connection, status, reset = mqadmin_batch(cluster, [
            ("consumerConnection", "-g", "cg_status"), ("consumerStatus", "-g", "cg_status"),
            ("resetOffsetByTime", "-g", "cg_status", "-t", TOPICS[0], "-s", "0")])
        wait_until(lambda: set(mine().values()) == {2}, timeout=30)  # everything once more
    assert c.core.client_id in connection and "CONSUME_PASSIVELY" in connection, connection
    assert "Tag0 || Tag1 || Tag2" in connection and "%RETRY%cg_status" in connection, connection
    assert re.search(r"^\d+\s+%s\s" % re.escape(c.core.client_id), status, re.M), status
    assert "Same subscription in the same group of consumer" in status, status
    assert "Exception" not in status + reset, status + reset
