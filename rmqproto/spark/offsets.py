"""The ``rocketmq`` source's options and offset arithmetic, without Spark or sockets.

Offsets travel as Spark's Kafka source writes them, one level deeper for the broker:
``{"topic": {"brokerName": {"queueId": offset}}}`` (JSON keys are strings). In a
``startingOffsets`` / ``endingOffsets`` option, ``-2`` stands for a queue's earliest offset
and ``-1`` for its latest, as in Kafka's JSON. Everything here is a function of the queues
and their bounds, which the caller (:mod:`rmqproto.spark.brokers`) asks the brokers for.
"""

import json
import re
from collections import namedtuple

from rmqproto.client.route import MessageQueue

__all__ = ["EARLIEST", "LATEST", "OffsetRange", "SourceOptions", "topic_selector",
           "parse_offsets", "to_json_offsets", "from_json_offsets", "split_ranges",
           "rate_limit", "DataLoss"]

#: The JSON offsets that stand for a queue's first and next-new offset (Kafka's -2 and -1).
EARLIEST, LATEST = -2, -1
#: Characters a RocketMQ topic may hold (``Validators``); any other makes ``topic`` a pattern.
_TOPIC_CHARS = re.compile(r"[%|a-zA-Z0-9_-]+")
#: Topics no application reads: the broker's own and the per-group retry and dead-letter ones.
_SYSTEM_TOPIC = re.compile(r"(RMQ_SYS_|rmq_sys_|%RETRY%|%DLQ%|SCHEDULE_TOPIC_XXXX$|TBW102$"
                           r"|BenchmarkTest$|OFFSET_MOVED_EVENT$|SELF_TEST_TOPIC$)")

#: Messages ``[start, end)`` of one queue: one input partition of a read.
OffsetRange = namedtuple("OffsetRange", "queue start end")


class DataLoss(Exception):
    """Offsets that were wanted are gone from the queue (retention deleted them)."""


def topic_selector(value):
    """``(topics, pattern)`` of the ``topic`` option: a comma-separated list of names, or,
    when it holds a character no topic name may hold (``.``, ``*``, ``^``, ...), a regular
    expression a whole topic name must match (system, retry and dead-letter topics never do)."""
    if not value or not value.strip():
        raise ValueError("the topic option is required: a topic, a comma-separated list or a pattern")
    names = [part.strip() for part in value.split(",")]
    if all(_TOPIC_CHARS.fullmatch(name) for name in names):
        return sorted(set(names)), None
    try:
        return None, re.compile(value)
    except re.error as exc:
        raise ValueError("topic %r is neither topic names nor a regular expression: %s"
                         % (value, exc)) from None


def matching_topics(pattern, topics):
    """The names of ``topics`` that ``pattern`` matches whole, system topics left out."""
    return sorted(t for t in topics if pattern.fullmatch(t) and not _SYSTEM_TOPIC.match(t))


def _int_option(options, name, default, low=0):
    value = options.get(name)
    if value is None:
        return default
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError("%s must be a whole number, not %r" % (name, value)) from None
    if number < low:
        raise ValueError("%s must be at least %d, not %d" % (name, low, number))
    return number


def _bool_option(options, name, default):
    value = options.get(name)
    if value is None:
        return default
    if str(value).lower() not in ("true", "false"):
        raise ValueError("%s must be true or false, not %r" % (name, value))
    return str(value).lower() == "true"


def parse_offsets(name, value, default):
    """An offsets option: ``"earliest"``, ``"latest"`` or the JSON of :func:`from_json_offsets`."""
    value = (value or default).strip()
    if value in ("earliest", "latest"):
        return value
    try:
        return from_json_offsets(json.loads(value))
    except (ValueError, TypeError, AttributeError) as exc:
        raise ValueError('%s must be earliest, latest or JSON {"topic": {"broker": '
                         '{"queueId": offset}}}, not %r (%s)' % (name, value, exc)) from None


def from_json_offsets(data):
    """``{MessageQueue: offset}`` of ``{"topic": {"broker": {"queueId": offset}}}``."""
    offsets = {}
    for topic, brokers in data.items():
        for broker, queues in brokers.items():
            for queue_id, offset in queues.items():
                if type(offset) is not int or offset < EARLIEST:
                    raise ValueError("offset of %s/%s/%s is %r" % (topic, broker, queue_id, offset))
                offsets[MessageQueue(topic, broker, int(queue_id))] = offset
    return offsets


def to_json_offsets(offsets):
    """The JSON-ready dict of ``{MessageQueue: offset}``, keys sorted (Spark compares
    offsets by their JSON text)."""
    data = {}
    for queue in sorted(offsets):
        data.setdefault(queue.topic, {}).setdefault(queue.broker_name, {})[
            str(queue.queue_id)] = offsets[queue]
    return data


class SourceOptions:
    """The options of a ``rocketmq`` read (names as Spark's Kafka source), checked at once."""

    def __init__(self, options, streaming):
        self.name_server = options.get("nameServer")
        if not self.name_server:
            raise ValueError("the nameServer option is required (host:port, ';'-separated)")
        self.topics, self.pattern = topic_selector(options.get("topic"))
        self.starting = parse_offsets("startingOffsets", options.get("startingOffsets"),
                                      "latest" if streaming else "earliest")
        self.ending = parse_offsets("endingOffsets", options.get("endingOffsets"), "latest")
        if streaming and options.get("endingOffsets") is not None:
            raise ValueError("endingOffsets is for batch reads only")
        if not streaming and self.starting == "latest":
            raise ValueError("startingOffsets latest is for streaming reads only")
        if not streaming and self.ending == "earliest":
            raise ValueError("endingOffsets earliest is for streaming reads only")
        self.starting_timestamp = _int_option(options, "startingTimestamp", None)
        self.ending_timestamp = _int_option(options, "endingTimestamp", None)
        if streaming and self.ending_timestamp is not None:
            raise ValueError("endingTimestamp is for batch reads only")
        self.sub_expression = options.get("subExpression") or "*"
        self.pull_batch_size = _int_option(options, "pullBatchSize", 32, low=1)
        self.pulls_in_flight = _int_option(options, "pullsInFlight", 8, low=1)
        self.min_partitions = _int_option(options, "minPartitions", None, low=1)
        self.max_offsets_per_trigger = _int_option(options, "maxOffsetsPerTrigger", None, low=1)
        self.fail_on_data_loss = _bool_option(options, "failOnDataLoss", True)
        self.consumer_group = options.get("consumerGroup") or "spark-rocketmq-source"


def split_ranges(ranges, min_partitions=None):
    """``ranges`` with messages, cut further while there are fewer than ``min_partitions``
    (as Kafka's ``KafkaOffsetRangeCalculator``: a range of ``size`` messages becomes
    ``ceil(size / (total / min_partitions))`` parts of near-equal size)."""
    ranges = [r for r in ranges if r.end > r.start]
    if not min_partitions or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.end - r.start for r in ranges)
    ideal = total / min_partitions
    parts = []
    for r in ranges:
        size = r.end - r.start
        count = max(1, -(-size // max(1, int(ideal)))) if size > ideal else 1
        bounds = [r.start + size * i // count for i in range(count + 1)]
        parts += [OffsetRange(r.queue, a, b) for a, b in zip(bounds, bounds[1:]) if b > a]
    return parts


def rate_limit(start, latest, limit):
    """The end offsets of a micro-batch that reads at most ``limit`` messages from ``start``
    towards ``latest`` (both ``{queue: offset}``), shared in proportion to what each queue
    has (Kafka's ``rateLimit``: a share under one message is rounded up, else down)."""
    sizes = {q: latest[q] - start.get(q, latest[q]) for q in latest}
    total = sum(size for size in sizes.values() if size > 0)
    if total <= limit:
        return dict(latest)
    ends = {}
    for queue, end in latest.items():
        begin = start.get(queue, end)
        size = sizes[queue]
        if size <= 0:
            ends[queue] = end
            continue
        share = limit * size / total
        ends[queue] = min(end, begin + (int(-(-share // 1)) if share < 1 else int(share)))
    return ends
