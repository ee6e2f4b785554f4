"""The ``rocketmq`` format: ``spark.read`` / ``spark.readStream`` of topics on a running
cluster, and ``df.write`` / ``df.writeStream`` to topics (docs/spark.md).

A thin shell, as Spark's Kafka source: the driver plans offset ranges
(:mod:`rmqproto.spark.offsets`) from what the brokers answer, each executor pulls its
ranges with the blocking lite pull consumer (:class:`rmqproto.spark.brokers.Brokers`) and
hands Spark Arrow record batches made straight from the pulled bytes
(:mod:`rmqproto.spark.columns`, :mod:`rmqproto.spark.rows`). The sink is
:mod:`rmqproto.spark.sink`.
"""

import logging

from pyspark.sql.datasource import (DataSource, DataSourceReader, DataSourceStreamReader,
                                    InputPartition)
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadMaxRows,
                                              SupportsTriggerAvailableNow)

from rmqproto.spark.brokers import Brokers
from rmqproto.spark.offsets import (EARLIEST, LATEST, OffsetRange, SourceOptions,
                                    from_json_offsets, rate_limit, split_ranges, to_json_offsets)
from rmqproto.spark.rows import SCHEMA

__all__ = ["RocketMQDataSource"]

log = logging.getLogger(__name__)


class RocketMQDataSource(DataSource):
    """``rocketmq``: messages of topics on a cluster reached through ``nameServer``."""

    @classmethod
    def name(cls):
        return "rocketmq"

    def schema(self):
        return SCHEMA

    def reader(self, schema):
        return _BatchReader(SourceOptions(self.options, streaming=False))

    def streamReader(self, schema):
        return _StreamReader(SourceOptions(self.options, streaming=True))

    def writer(self, schema, overwrite):
        from rmqproto.spark.sink import BatchWriter
        return BatchWriter(self.options, schema)

    def streamWriter(self, schema, overwrite):
        from rmqproto.spark.sink import StreamWriter
        return StreamWriter(self.options, schema)


class _Planner:
    """What batch and streaming reads share: the driver's questions and the executors' reads."""

    def __init__(self, options):
        self.options = options

    def connect(self):
        options = self.options
        return Brokers(options.name_server, options.consumer_group, options.pull_batch_size,
                       options.pulls_in_flight)

    def queue_bounds(self, brokers):
        """``{queue: (min, max)}`` of every queue the ``topic`` option names now."""
        options = self.options
        return {queue: brokers.bounds(queue)
                for queue in brokers.queues(options.topics, options.pattern)}

    def resolve(self, brokers, spec, timestamp, bounds, unnamed=EARLIEST):
        """``{queue: offset}``: ``spec`` (``earliest``, ``latest`` or ``{queue: offset}``
        with -2/-1, a queue it does not name at ``unnamed``) or, when given, the offsets of
        ``timestamp`` searched on the brokers."""
        offsets = {}
        for queue, (low, high) in bounds.items():
            if timestamp is not None:
                offsets[queue] = brokers.offset_at(queue, timestamp, low, high)
                continue
            wanted = spec if isinstance(spec, str) else spec.get(queue, unnamed)
            if wanted in ("earliest", EARLIEST):
                offsets[queue] = low
            elif wanted in ("latest", LATEST):
                offsets[queue] = high
            else:
                offsets[queue] = wanted
        if not isinstance(spec, str):
            unknown = sorted(set(spec) - set(bounds))
            if unknown:
                raise ValueError("offsets given for queues the topic option does not name or "
                                 "that do not exist: %s" % ", ".join(map(str, unknown)))
        return offsets

    def read(self, partition):
        """Executor side: the Arrow batches of one :class:`OffsetRange`."""
        options = self.options
        with self.connect() as brokers:
            yield from brokers.read(partition.value, options.sub_expression,
                                    options.fail_on_data_loss)


class _BatchReader(_Planner, DataSourceReader):
    """``spark.read``: one partition per queue range (split further for ``minPartitions``)."""

    def partitions(self):
        options = self.options
        with self.connect() as brokers:
            bounds = self.queue_bounds(brokers)
            starts = self.resolve(brokers, options.starting, options.starting_timestamp, bounds)
            ends = self.resolve(brokers, options.ending, options.ending_timestamp, bounds, LATEST)
            ranges = []
            for queue, (low, high) in sorted(bounds.items()):
                start = brokers.check_start(queue, starts[queue], options.fail_on_data_loss, low)
                ranges.append(OffsetRange(queue, start, min(ends[queue], high)))
        return [InputPartition(r) for r in split_ranges(ranges, options.min_partitions)] or \
            [InputPartition(None)]

    def read(self, partition):
        if partition.value is None:  # no queue has messages in the ranges asked
            return iter(())
        return _Planner.read(self, partition)


class _StreamReader(_Planner, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream``: offsets are ``{"topic": {"broker": {"queueId": offset}}}`` in
    Spark's checkpoint; each micro-batch reads ``[start, end)`` of every queue."""

    def __init__(self, options):
        super().__init__(options)
        self.brokers = None
        self.target = None  # Trigger.AvailableNow: the offsets to stop at

    def __getstate__(self):  # sent to the executors without the driver's connections
        return dict(self.__dict__, brokers=None)

    def _brokers(self):
        if self.brokers is None:
            self.brokers = self.connect()
        return self.brokers

    def initialOffset(self):
        options = self.options
        brokers = self._brokers()
        bounds = self.queue_bounds(brokers)
        return to_json_offsets(self.resolve(brokers, options.starting,
                                            options.starting_timestamp, bounds))

    def getDefaultReadLimit(self):
        limit = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self):
        self.target = {queue: high for queue, (_, high) in self.queue_bounds(self._brokers()).items()}

    def latestOffset(self, start, limit):
        """The end of the next micro-batch: every queue's max offset (queues new since
        ``start`` included, from their first message), at most the AvailableNow target,
        at most ``limit`` messages more than ``start``."""
        begin = from_json_offsets(start)
        bounds = self.queue_bounds(self._brokers())
        latest = dict(begin)
        for queue, (low, high) in bounds.items():
            if self.target is not None:
                high = self.target.get(queue, begin.get(queue, low))
            latest[queue] = max(high, begin.get(queue, low))
        starts = {q: begin.get(q, bounds[q][0] if q in bounds else latest[q]) for q in latest}
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(starts, latest, limit.max_rows)
        for queue in set(latest) - set(begin):  # a new queue's range starts where it starts
            if latest[queue] == starts[queue]:
                del latest[queue]
        return to_json_offsets(latest)

    def reportLatestOffset(self):
        bounds = self.queue_bounds(self._brokers())
        return to_json_offsets({queue: high for queue, (_, high) in bounds.items()})

    def partitions(self, start, end):
        options = self.options
        begin, until = from_json_offsets(start), from_json_offsets(end)
        brokers = self._brokers()
        ranges = []
        for queue, stop in sorted(until.items()):
            first = begin.get(queue)
            if first is None:  # a queue new in this micro-batch: from its first message
                first = brokers.bounds(queue)[0]
            elif first < stop:
                first = brokers.check_start(queue, first, options.fail_on_data_loss)
            ranges.append(OffsetRange(queue, first, stop))
        return [InputPartition(r) for r in split_ranges(ranges, options.min_partitions)]

    def read(self, partition):
        return _Planner.read(self, partition)

    def commit(self, end):
        """Nothing to do: the offsets read are in Spark's checkpoint, not on the brokers."""

    def stop(self):
        if self.brokers is not None:
            self.brokers.close()
            self.brokers = None
