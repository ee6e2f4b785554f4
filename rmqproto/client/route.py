"""Route tables: a topic's ``TopicRouteData`` as the queues to write and to read
(``MQClientInstance#topicRouteData2TopicPublishInfo`` / ``topicRouteData2TopicSubscribeInfo``,
``TopicPublishInfo``, ``findBrokerAddressInPublish`` / ``findBrokerAddressInSubscribe``)."""

import copy
from collections import namedtuple

from rmqproto.codec.bodies.route import MASTER_ID
from rmqproto.codec.bodies.topic import PERM_READ, PERM_WRITE

#: ``MessageQueue``: one queue of a topic on one broker.
MessageQueue = namedtuple("MessageQueue", "topic broker_name queue_id")


def _ordered_queues(topic, order_conf):
    """``orderTopicConf`` ``"broker-a:4;broker-b:4"``: that many queues per broker, in order."""
    queues = []
    for item in order_conf.split(";"):
        name, _, count = item.partition(":")
        queues += [MessageQueue(topic, name, i) for i in range(int(count))]
    return queues


class TopicRoute:
    """One topic's route: the writable queues (:attr:`queues`, with masters only), the
    readable ones (:attr:`read_queues`) and each broker's addresses by broker id."""

    def __init__(self, topic, data):
        self.topic = topic
        self.data = data
        self.addresses = {b.broker_name: dict(b.broker_addrs or {}) for b in data.broker_datas or ()}
        queue_datas = sorted(data.queue_datas or (), key=lambda q: q.broker_name)
        self.ordered = bool(data.order_topic_conf)
        if self.ordered:
            self.queues = _ordered_queues(topic, data.order_topic_conf)
        else:
            self.queues = [MessageQueue(topic, q.broker_name, i) for q in queue_datas
                           if q.perm & PERM_WRITE and self.master(q.broker_name)
                           for i in range(q.write_queue_nums)]
        self.read_queues = [MessageQueue(topic, q.broker_name, i) for q in queue_datas
                            if q.perm & PERM_READ for i in range(q.read_queue_nums)]

    def master(self, broker_name):
        """``findBrokerAddressInPublish``: the master's address, or ``None``."""
        return self.addresses.get(broker_name, {}).get(MASTER_ID)

    def subscribe_address(self, broker_name, broker_id=MASTER_ID, only_this=False):
        """``findBrokerAddressInSubscribe``: ``(address, is_slave)`` of ``broker_id``, else
        (unless ``only_this``) of any other broker of that name; ``(None, False)`` if none."""
        addrs = self.addresses.get(broker_name, {})
        address = addrs.get(broker_id)
        if address is None and not only_this and addrs:
            broker_id, address = next(iter(sorted(addrs.items())))
        return address, address is not None and broker_id != MASTER_ID

    def broker_names(self):
        return sorted({q.broker_name for q in self.queues})

    def write_queue_nums(self, broker_name):
        """``getQueueIdByBroker``: how many write queues ``broker_name`` has (0: none)."""
        return sum(1 for q in self.queues if q.broker_name == broker_name)


def borrowed_route(default_data, default_queue_nums):
    """``updateTopicRouteInfoFromNameServer(topic, isDefault=true)``: the route of the
    auto-create topic with each broker's queues cut to ``defaultTopicQueueNums``, so that
    the first send creates the topic there."""
    data = copy.deepcopy(default_data)
    for queue_data in data.queue_datas or ():
        queue_data.read_queue_nums = queue_data.write_queue_nums = min(
            default_queue_nums, queue_data.read_queue_nums)
    return data
