"""How a consumer group shares a topic's queues: Java's ``AllocateMessageQueueStrategy``
implementations (``org.apache.rocketmq.client.consumer.rebalance``), each a function
``strategy(queues, client_ids, me) -> me's queues``. Every member computes the same
split from the same sorted inputs, as ``RebalanceImpl#rebalanceByTopic`` sorts both."""

import bisect
import hashlib

from rmqproto.client.errors import ClientError

#: ``AllocateMessageQueueConsistentHash``'s default number of virtual nodes a client.
VIRTUAL_NODES = 10


def _prepared(queues, client_ids, me):
    queues, client_ids = sorted(queues), sorted(client_ids)
    if me not in client_ids or not queues:
        return None, None
    return queues, client_ids


def allocate_averagely(queues, client_ids, me):
    """``AllocateMessageQueueAveragely`` ("AVG"): consecutive blocks, the first
    ``len % count`` clients one queue more."""
    queues, client_ids = _prepared(queues, client_ids, me)
    if queues is None:
        return []
    index, count = client_ids.index(me), len(client_ids)
    mod = len(queues) % count
    if len(queues) <= count:
        size = 1
    else:
        size = len(queues) // count + (1 if mod and index < mod else 0)
    start = index * size if mod and index < mod else index * size + mod
    return [queues[(start + i) % len(queues)] for i in range(min(size, len(queues) - start))]


def allocate_by_circle(queues, client_ids, me):
    """``AllocateMessageQueueAveragelyByCircle`` ("AVG_BY_CIRCLE"): queues dealt to the
    clients in turn."""
    queues, client_ids = _prepared(queues, client_ids, me)
    if queues is None:
        return []
    index, count = client_ids.index(me), len(client_ids)
    return queues[index::count]


def md5_hash(key):
    """``ConsistentHashRouter.MD5Hash#hash``: the first four bytes of the key's MD5, big-endian."""
    return int.from_bytes(hashlib.md5(key.encode()).digest()[:4], "big")


def queue_key(queue):
    """``MessageQueue#toString``, the key a queue is hashed by."""
    return "MessageQueue [topic=%s, brokerName=%s, queueId=%d]" % queue


def allocate_consistent_hash(queues, client_ids, me, virtual_nodes=VIRTUAL_NODES):
    """``AllocateMessageQueueConsistentHash`` ("CONSISTENT_HASH"): each client put on an
    MD5 ring ``virtual_nodes`` times (``<clientId>-<i>``); a queue belongs to the first
    node at or after its own hash, wrapping round."""
    queues, client_ids = _prepared(queues, client_ids, me)
    if queues is None:
        return []
    ring = {}
    for client in client_ids:
        for i in range(virtual_nodes):
            ring[md5_hash("%s-%d" % (client, i))] = client  # a later equal hash wins, as in TreeMap#put
    points = sorted(ring)
    mine = []
    for queue in queues:
        at = bisect.bisect_left(points, md5_hash(queue_key(queue)))
        if ring[points[at % len(points)]] == me:
            mine.append(queue)
    return mine


def by_config(configured):
    """``AllocateMessageQueueByConfig`` ("CONFIG"): always ``configured``, whoever asks."""
    configured = list(configured)
    return lambda queues, client_ids, me: list(configured)


def by_machine_room(rooms):
    """``AllocateMessageQueueByMachineRoom`` ("MACHINE_ROOM"): only queues of brokers named
    ``<room>@<name>`` with ``room`` in ``rooms``, split in blocks, the remainder dealt one
    each to the first clients."""
    rooms = set(rooms)

    def allocate(queues, client_ids, me):
        queues, client_ids = _prepared(queues, client_ids, me)
        if queues is None:
            return []
        index, count = client_ids.index(me), len(client_ids)
        room_queues = [q for q in queues if len(q.broker_name.split("@")) == 2
                       and q.broker_name.split("@")[0] in rooms]
        size, rest = divmod(len(room_queues), count)
        mine = room_queues[index * size:index * size + size]
        if rest > index:
            mine.append(room_queues[index + size * count])
        return mine

    return allocate


#: Strategies by ``getName()``, for ``allocateMessageQueueStrategy`` given as a name.
STRATEGIES = {"AVG": allocate_averagely, "AVG_BY_CIRCLE": allocate_by_circle,
              "CONSISTENT_HASH": allocate_consistent_hash}


def strategy(named):
    """The strategy ``named`` (a key of :data:`STRATEGIES`) or ``named`` itself when callable
    (for example :func:`by_config` or :func:`by_machine_room`)."""
    if callable(named):
        return named
    try:
        return STRATEGIES[named]
    except KeyError:
        raise ClientError("unknown allocateMessageQueueStrategy %r (one of %s, or a callable)"
                          % (named, ", ".join(STRATEGIES))) from None
