"""The lite pull consumer's core on a scripted world with a fake clock: where a queue
starts, pulls following ``suggestWhichBrokerId`` and falling back to the slave and back,
PULL_OFFSET_MOVED, tag filtering and decompression, seeks, auto-commit every 5 s, and
rebalancing with ``AllocateMessageQueueAveragely``."""

import json
import random
import zlib

import pytest

from rmqproto.client import ClientError, MessageQueue
from rmqproto.client.config import ConsumerConfig
from rmqproto.client.consumer import LitePullCore, allocate_averagely, client_id
from rmqproto.client.lookup import Reply, run
from rmqproto.codec import message as wire
from rmqproto.codec.bodies.client import GetConsumerListByGroupResponseBody, HeartbeatData
from rmqproto.codec.bodies.route import BrokerData, QueueData, TopicRouteData
from rmqproto.codec.codes import RequestCode, ResponseCode
from rmqproto.remoting.errors import RemotingConnectionError

NOW = 1_700_000_000_000
TOPIC = "PullTopic"
MASTER, SLAVE = "master:10911", "slave:10921"
ME = "10.0.0.1@1#1"


def route(with_master=True, queues=4):
    addrs = {1: SLAVE}
    if with_master:
        addrs[0] = MASTER
    return TopicRouteData(
        queue_datas=[QueueData(broker_name="broker-a", read_queue_nums=queues,
                               write_queue_nums=queues, perm=6)],
        broker_datas=[BrokerData(broker_name="broker-a", cluster="c", broker_addrs=addrs)])


def record(offset, tags="A", body=None, compressed=False, queue_id=0):
    body = body or ("msg-%d" % offset).encode()
    sys_flag = 0
    if compressed:
        body, sys_flag = zlib.compress(body), wire.COMPRESSED_FLAG
    return wire.MessageRecord(TOPIC, body, {"TAGS": tags, "KEYS": "k%d a" % offset, "u": "v",
                                            "UNIQ_KEY": "ID%d" % offset},
                              queue_id=queue_id, queue_offset=offset, sys_flag=sys_flag, store_timestamp=NOW + offset)


class World:
    """A NameServer serving ``routes`` and one broker name (master and slave) whose queues
    hold ``records``; ``suggest`` is the broker id each answer suggests, ``down`` the
    addresses that refuse connections; each call takes 1 ms."""

    def __init__(self, routes=None):
        self.routes = routes or {TOPIC: route()}
        self.records = {q: [record(i, queue_id=q) for i in range(20)] for q in range(4)}
        self.refused = set()  # queue ids whose pulls get SYSTEM_ERROR
        self.committed = {}
        self.suggest = {MASTER: 0, SLAVE: 0}
        self.down = set()
        self.members = [ME]
        self.now = NOW
        self.calls = []
        self.pull_code = None

    def answer(self, call):
        request = call.request
        self.calls.append((call.address, request))
        self.now += 1
        if call.address in self.down:
            return Reply(None, RemotingConnectionError("refused"), self.now)
        code, ext = request.code, request.ext_fields or {}
        if code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            data = self.routes.get(ext["topic"])
            if data is None:
                return self.reply(request, ResponseCode.TOPIC_NOT_EXIST)
            return self.reply(request, body=data.to_json())
        queue = int(ext.get("queueId", 0))
        if code == RequestCode.QUERY_CONSUMER_OFFSET:
            if queue not in self.committed:
                return self.reply(request, ResponseCode.QUERY_NOT_FOUND)
            return self.reply(request, offset=self.committed[queue])
        if code == RequestCode.UPDATE_CONSUMER_OFFSET:
            self.committed[queue] = int(ext["commitOffset"])
            return self.reply(request)
        if code == RequestCode.GET_MIN_OFFSET:
            return self.reply(request, offset=0)
        if code == RequestCode.GET_MAX_OFFSET:
            return self.reply(request, offset=len(self.records[queue]))
        if code == RequestCode.SEARCH_OFFSET_BY_TIMESTAMP:
            return self.reply(request, offset=int(ext["timestamp"]) - NOW)
        if code in (RequestCode.HEART_BEAT, RequestCode.UNREGISTER_CLIENT):
            return self.reply(request)
        if code == RequestCode.GET_CONSUMER_LIST_BY_GROUP:
            body = GetConsumerListByGroupResponseBody(consumer_id_list=self.members)
            return self.reply(request, body=body.to_json())
        assert code == RequestCode.PULL_MESSAGE
        offset, count = int(ext["queueOffset"]), int(ext["maxMsgNums"])
        found = self.records[queue][offset:offset + count]
        fields = {"suggestWhichBrokerId": self.suggest[call.address], "minOffset": 0,
                  "maxOffset": len(self.records[queue])}
        if queue in self.refused:
            return self.reply(request, ResponseCode.SYSTEM_ERROR)
        if self.pull_code is not None:
            return self.reply(request, self.pull_code, nextBeginOffset=7, **fields)
        if not found:
            return self.reply(request, ResponseCode.PULL_NOT_FOUND, nextBeginOffset=offset, **fields)
        body = b"".join(wire.encode_record(r) for r in found)
        return self.reply(request, body=body, nextBeginOffset=offset + len(found), **fields)

    def reply(self, request, code=ResponseCode.SUCCESS, body=None, **fields):
        ext = {name: str(value) for name, value in fields.items()}
        return Reply(request.response(code, "remark", ext_fields=ext, body=body), None, self.now)

    def run(self, steps):
        return run(steps, self.answer)

    def requests(self, code):
        return [(address, request) for address, request in self.calls if request.code == code]


def make(world, **settings):
    settings.setdefault("namesrvAddr", "ns:9876")
    return LitePullCore(ConsumerConfig(**settings), ME, random.Random(0))


def queue(queue_id=0):
    return MessageQueue(TOPIC, "broker-a", queue_id)


def poll(world, core):
    messages, world.now = world.run(core.poll(world.now))
    return messages


def test_allocate_averagely_as_java():
    queues = [queue(i) for i in range(8)]
    shares = [allocate_averagely(queues, ["c", "a", "b"], me) for me in "abc"]
    assert [[q.queue_id for q in share] for share in shares] == [[0, 1, 2], [3, 4, 5], [6, 7]]
    two = queues[:2]
    assert [len(allocate_averagely(two, ["a", "b", "c"], me)) for me in "abc"] == [1, 1, 0]
    assert allocate_averagely(queues, ["a"], "stranger") == []


def test_a_queue_starts_at_the_committed_offset_else_as_consume_from_where_says():
    world = World()
    world.committed[0] = 5
    core = make(world, consumeFromWhere="CONSUME_FROM_FIRST_OFFSET", pullBatchSize=4)
    core.assign([queue(0), queue(1)])
    assert [m.queue_offset for m in poll(world, core)] == [5, 6, 7, 8]
    assert [m.queue_offset for m in poll(world, core)] == [0, 1, 2, 3]  # queue 1: first offset
    last = make(world)  # CONSUME_FROM_LAST_OFFSET: only what comes after
    last.assign([queue(2)])
    assert poll(world, last) == []
    world.records[2].append(record(20))
    assert [m.queue_offset for m in poll(world, last)] == [20]
    with pytest.raises(ClientError, match="consumeFromWhere"):
        make(world, consumeFromWhere="CONSUME_FROM_TIMESTAMP")


def test_pulled_messages_are_decoded_decompressed_and_filtered_by_tag():
    world = World()
    world.records[0] = [record(0, "A"), record(1, "B", body=b"z" * 5000, compressed=True),
                        record(2, "C")]
    core = make(world, consumeFromWhere="CONSUME_FROM_FIRST_OFFSET")
    core.subscribe(TOPIC, "B || C", world.now)
    messages = poll(world, core)
    assert [(m.tags, m.body[:3]) for m in messages] == [("B", b"zzz"), ("C", b"msg")]
    assert len(messages[0].body) == 5000 and messages[0].keys == ["k1", "a"]
    assert messages[0].user_properties == {"u": "v"} and messages[0].msg_id == "ID1"
    assert messages[0].properties["MAX_OFFSET"] == "3"
    pull = world.requests(RequestCode.PULL_MESSAGE)[0][1].ext_fields
    assert (pull["subscription"], pull["expressionType"], pull["sysFlag"]) == ("B || C", "TAG", "4")
    assert core.positions[queue(0)] == 3  # moved past the filtered message too


def test_pulls_follow_the_suggested_broker_and_fall_back_to_the_slave_and_back():
    world = World()
    core = make(world, consumeFromWhere="CONSUME_FROM_FIRST_OFFSET", pullBatchSize=2,
                pollNameServerInterval=1000)
    core.assign([queue(0)])
    world.suggest[MASTER] = 1  # the master says: read from the slave
    poll(world, core)
    world.suggest[MASTER] = 0
    poll(world, core)  # from the slave, which says: back to the master
    poll(world, core)
    world.down.add(MASTER)  # the master dies, the NameServer forgets it
    world.routes[TOPIC] = route(with_master=False)
    assert poll(world, core) == []  # the pull fails: the route is fetched again next time
    poll(world, core)
    poll(world, core)
    world.down.clear()
    world.routes[TOPIC] = route()
    world.now += 1000  # the route is old: fetched again, the master is back
    messages = poll(world, core)
    pulls = [address for address, _ in world.requests(RequestCode.PULL_MESSAGE)]
    assert pulls == [MASTER, SLAVE, MASTER, MASTER, SLAVE, SLAVE, MASTER]
    assert [m.queue_offset for m in messages] == [10, 11]  # nothing lost, nothing twice


def test_a_pull_that_fails_moves_on_to_the_other_queues():
    world = World()
    core = make(world, consumeFromWhere="CONSUME_FROM_FIRST_OFFSET")
    core.assign([queue(0), queue(1)])
    world.refused.add(0)
    assert [m.queue.queue_id for m in poll(world, core)] == [1] * 10
    world.refused.clear()
    assert [m.queue_offset for m in poll(world, core)] == list(range(10))


def test_offset_moved_takes_the_next_begin_offset():
    world = World()
    core = make(world, consumeFromWhere="CONSUME_FROM_FIRST_OFFSET")
    core.assign([queue(0)])
    world.pull_code = ResponseCode.PULL_OFFSET_MOVED
    assert poll(world, core) == []
    assert core.positions[queue(0)] == 7
    world.pull_code = None
    assert poll(world, core)[0].queue_offset == 7


def test_seeks_and_offsets_for_times():
    world = World()
    core = make(world)
    core.assign([queue(0)])
    world.now = world.run(core.seek(queue(0), 12, world.now))
    assert poll(world, core)[0].queue_offset == 12
    with pytest.raises(ClientError, match="Seek offset illegal"):
        world.run(core.seek(queue(0), 21, world.now))
    with pytest.raises(ClientError, match="not in assigned list"):
        world.run(core.seek(queue(3), 0, world.now))
    world.run(core.seek_to(queue(0), False, world.now))
    assert core.positions[queue(0)] == 0
    world.run(core.seek_to(queue(0), True, world.now))
    assert core.positions[queue(0)] == 20
    assert world.run(core.offset_for_timestamp(queue(0), NOW + 4, world.now))[0] == 4


def test_auto_commit_every_five_seconds_and_on_shutdown():
    world = World()
    core = make(world, consumeFromWhere="CONSUME_FROM_FIRST_OFFSET", pullBatchSize=3)
    core.assign([queue(0)])
    poll(world, core)
    world.now += 4990
    poll(world, core)
    assert world.committed == {}
    world.now += 10
    poll(world, core)  # commits 6 (what the first two polls gave), then pulls 6..8
    assert world.committed == {0: 6}
    world.now += 5000
    world.records[0] = world.records[0][:9]
    poll(world, core)
    commits = len(world.requests(RequestCode.UPDATE_CONSUMER_OFFSET))
    world.now += 5000
    poll(world, core)  # nothing moved: nothing sent
    assert world.committed == {0: 9} and len(world.requests(RequestCode.UPDATE_CONSUMER_OFFSET)) == commits
    world.run(core.seek(queue(0), 2, world.now))
    world.run(core.shutdown(world.now))
    assert world.committed == {0: 2}
    assert world.requests(RequestCode.UNREGISTER_CLIENT)[0][1].ext_fields["clientID"] == ME


def test_without_auto_commit_only_commit_stores_offsets():
    world = World()
    core = make(world, consumeFromWhere="CONSUME_FROM_FIRST_OFFSET", autoCommit=False)
    core.assign([queue(0)])
    poll(world, core)
    world.now += 60_000
    poll(world, core)
    world.run(core.shutdown(world.now))
    assert world.committed == {}
    world.run(core.commit(world.now))
    assert world.committed == {0: 20}
    world.down.add(MASTER)
    world.down.add(SLAVE)
    core.positions[queue(0)] = 3
    with pytest.raises(ClientError, match="commit failed"):
        world.run(core.commit(world.now))


def test_subscribe_rebalances_across_the_group_with_heartbeats():
    world = World()
    world.members = [ME, "10.0.0.2@1#1"]
    core = make(world, consumeFromWhere="CONSUME_FROM_FIRST_OFFSET", rebalanceInterval=20_000)
    core.subscribe(TOPIC, "*", world.now)
    poll(world, core)
    assert core.assigned == [queue(0), queue(1)]
    beat = world.requests(RequestCode.HEART_BEAT)
    assert {address for address, _ in beat} == {MASTER, SLAVE}
    data = HeartbeatData.from_json(beat[0][1].body)
    consumer = data.consumer_data_set[0]
    assert (data.client_id, consumer.consume_type.value, consumer.message_model.value) == (
        ME, "CONSUME_ACTIVELY", "CLUSTERING")
    assert consumer.subscription_data_set[0].topic == TOPIC
    world.members = ["10.0.0.0@9#9", ME, "10.0.0.2@1#1"]  # one more: 2, 1, 1 queues
    world.now += 20_000
    poll(world, core)
    assert core.assigned == [queue(2)]
    assert world.committed == {0: 10}  # queue 0 was given up: its position committed first
    world.members = [ME]
    world.now += 20_000
    poll(world, core)
    assert core.assigned == [queue(i) for i in range(4)]
    with pytest.raises(ClientError, match="mutually exclusive"):
        core.assign([queue(0)])


def test_client_ids_are_distinct_per_consumer():
    config = ConsumerConfig()
    assert client_id(config, "10.0.0.1", 42, 7) == "10.0.0.1@42#7"
    assert client_id(ConsumerConfig(instanceName="x"), "10.0.0.1", 42, 7) == "10.0.0.1@x"
    assert json.loads(HeartbeatData(client_id="a").to_json())["clientID"] == "a"
