"""Which queue a send goes to: round robin over the topic's write queues, avoiding the
broker that just failed, and with ``sendLatencyFaultEnable`` avoiding brokers that were
slow or failed for a while (``TopicPublishInfo#selectOneMessageQueue``, ``MQFaultStrategy``,
``LatencyFaultToleranceImpl``). Pure: ``now`` (ms) and a ``random.Random`` come in."""

#: ``MQFaultStrategy.latencyMax`` / ``notAvailableDuration``: a send that took at least
#: LATENCY_MAX[i] ms makes its broker unavailable for NOT_AVAILABLE_DURATION[i] ms.
LATENCY_MAX = (50, 100, 550, 1000, 2000, 3000, 15000)
NOT_AVAILABLE_DURATION = (0, 0, 30000, 60000, 120000, 180000, 600000)
#: The latency charged to a broker whose send failed (``updateFaultItem(..., isolation=true)``).
ISOLATION_LATENCY = 30000


def not_available_duration(latency_ms):
    """``computeNotAvailableDuration``: how long a broker is avoided after ``latency_ms``."""
    for limit, duration in zip(reversed(LATENCY_MAX), reversed(NOT_AVAILABLE_DURATION)):
        if latency_ms >= limit:
            return duration
    return 0


class FaultItem:
    __slots__ = ("name", "latency", "start")

    def __init__(self, name, latency, start):
        self.name, self.latency, self.start = name, latency, start


class LatencyFaultTolerance:
    """``LatencyFaultToleranceImpl``: per broker, its last latency and when it is usable again."""

    def __init__(self, rng):
        self.items = {}
        self.rng = rng
        self.which_item_worst = rng.randrange(1 << 16)

    def update(self, name, latency, duration, now):
        self.items[name] = FaultItem(name, latency, now + duration)

    def is_available(self, name, now):
        item = self.items.get(name)
        return item is None or now >= item.start

    def remove(self, name):
        self.items.pop(name, None)

    def pick_one_at_least(self, now):
        """A broker to try when none is available: shuffled, then sorted usable-first,
        fastest-first, soonest-usable-first, and one of the better half in turn."""
        items = list(self.items.values())
        if not items:
            return None
        self.rng.shuffle(items)
        items.sort(key=lambda i: (now < i.start, i.latency, i.start))
        half = len(items) // 2
        if half <= 0:
            return items[0].name
        self.which_item_worst += 1
        return items[self.which_item_worst % half].name


class QueueSelector:
    """The per-topic send index (``TopicPublishInfo.sendWhichQueue``, starting at random)
    and the fault strategy over it."""

    def __init__(self, rng, latency_fault_enable=False):
        self.rng = rng
        self.latency_fault_enable = latency_fault_enable
        self.faults = LatencyFaultTolerance(rng)
        self._index = {}

    def _next_index(self, topic):
        index = self._index.get(topic)
        index = self.rng.randrange(1 << 16) if index is None else index + 1
        self._index[topic] = index
        return index

    def _round_robin(self, route, last_broker=None):
        """``TopicPublishInfo#selectOneMessageQueue(lastBrokerName)``."""
        queues = route.queues
        if last_broker is not None:
            for _ in queues:
                queue = queues[self._next_index(route.topic) % len(queues)]
                if queue.broker_name != last_broker:
                    return queue
        return queues[self._next_index(route.topic) % len(queues)]

    def select(self, route, last_broker, now):
        """``MQFaultStrategy#selectOneMessageQueue``: the queue for the next attempt."""
        if not self.latency_fault_enable:
            return self._round_robin(route, last_broker)
        queues = route.queues
        index = self._next_index(route.topic)
        for i in range(len(queues)):
            queue = queues[(index + i) % len(queues)]
            if self.faults.is_available(queue.broker_name, now):
                return queue
        not_best = self.faults.pick_one_at_least(now)
        write_queues = route.write_queue_nums(not_best) if not_best is not None else 0
        if write_queues > 0:
            queue = self._round_robin(route)
            return queue._replace(broker_name=not_best,
                                  queue_id=self._next_index(route.topic) % write_queues)
        self.faults.remove(not_best)
        return self._round_robin(route)

    def update_fault(self, broker_name, latency, isolation, now):
        """``MQFaultStrategy#updateFaultItem``: record a send's latency (a failure counts
        as ``ISOLATION_LATENCY``); nothing when latency fault tolerance is off."""
        if self.latency_fault_enable:
            duration = not_available_duration(ISOLATION_LATENCY if isolation else latency)
            self.faults.update(broker_name, latency, duration, now)
