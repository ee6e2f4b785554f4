"""The group's queue allocation strategies give each member exactly the queues Java's
``AllocateMessageQueueStrategy`` implementations give it for the same input (the 4.9.8
client run on the same cases), and together cover each queue once."""

import pytest

from rmqproto.client.allocate import (
    allocate_averagely, allocate_by_circle, allocate_consistent_hash, by_config, by_machine_room,
    strategy)
from rmqproto.client.errors import ClientError
from rmqproto.client.route import MessageQueue

CASES = [
    "AVG/broker-a:4,broker-b:4/c1,c2,c3",
    "AVG/broker-a:3/c1,c2,c3,c4,c5",
    "AVG/broker-a:8,broker-b:5/10.0.0.1@1#2,10.0.0.2@3#4",
    "AVG_BY_CIRCLE/broker-a:4,broker-b:4/c1,c2,c3",
    "AVG_BY_CIRCLE/broker-a:2/c1,c2,c3",
    "CONSISTENT_HASH/broker-a:4,broker-b:4/c1,c2,c3",
    "CONSISTENT_HASH/broker-a:16,broker-b:16/127.0.0.1@100#5,127.0.0.1@200#6",
    "MACHINE_ROOM=hz+sh/hz@broker-a:4,sh@broker-b:3,bj@broker-c:4/c1,c2",
]


def parse(case):
    name, brokers, cids = case.split("/")
    queues = [MessageQueue("T", broker, i) for item in brokers.split(",")
              for broker, count in [item.split(":")] for i in range(int(count))]
    if name.startswith("MACHINE_ROOM="):
        allocate = by_machine_room(name.split("=")[1].split("+"))
    else:
        allocate = strategy(name)
    return allocate, queues, cids.split(",")


def ours(case):
    allocate, queues, cids = parse(case)
    return {cid: ["%s:%d" % (q.broker_name, q.queue_id) for q in allocate(queues, cids, cid)]
            for cid in cids}


def test_each_queue_once_and_strangers_get_nothing():
    for case in CASES:
        allocate, queues, cids = parse(case)
        shares = [q for cid in cids for q in allocate(list(reversed(queues)), cids, cid)]
        if not case.startswith("MACHINE_ROOM"):
            assert sorted(shares) == sorted(queues), case
        assert allocate(queues, cids, "stranger") == []
    assert allocate_by_circle([MessageQueue("T", "b", i) for i in range(5)], ["x", "y"], "y") == [
        MessageQueue("T", "b", 1), MessageQueue("T", "b", 3)]
    assert allocate_averagely([], ["x"], "x") == allocate_consistent_hash([], ["x"], "x") == []
    fixed = [MessageQueue("T", "b", 7)]
    assert by_config(fixed)([], ["x"], "anyone") == fixed
    with pytest.raises(ClientError):
        strategy("NEAREST")


def test_same_as_java(java_peers):
    result = java_peers.run_client("rmqproto.peers.Allocate", *CASES)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    java = {}
    for line in result.stdout.splitlines():
        case, cid, *queues = line.split(" ")
        java.setdefault(case, {})[cid] = queues
    assert java == {case: ours(case) for case in CASES}
