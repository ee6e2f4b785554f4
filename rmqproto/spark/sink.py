"""The ``rocketmq`` sink: ``df.write.format("rocketmq")`` and ``df.writeStream.format("rocketmq")``.

Columns as Spark's Kafka sink where the idea is the same: ``body`` (required, binary or
string), ``topic`` (else the ``topic`` option), ``tags``, ``keys`` (a string, space-separated
as RocketMQ stores them, or an array of strings) and ``properties`` (map<string,string>;
names a producer may not set, such as ``KEYS`` or ``UNIQ_KEY``, are left out so that a
DataFrame read from a topic can be written back). Other columns are ignored.

Each task sends its rows with one blocking producer, in SEND_BATCH_MESSAGE batches of up to
``batchSize`` messages of one topic (the producer's retries and fault tolerance apply to
each batch). Delivery is at least once: a task whose send fails after the retries fails,
Spark runs it again, and the job fails if it keeps failing; a write is reported done only
when every one of its batches was stored.
"""

import logging
from dataclasses import dataclass

from pyspark.sql.datasource import (DataSourceArrowWriter, DataSourceStreamArrowWriter,
                                    WriterCommitMessage)
from pyspark.sql.types import ArrayType, BinaryType, MapType, StringType

from rmqproto.client.blocking import Producer, now_ms
from rmqproto.client.errors import ClientError
from rmqproto.client.lookup import run
from rmqproto.client.message import RESERVED_PROPERTIES, Message, check_topic

__all__ = ["BatchWriter", "StreamWriter", "check_columns", "SinkOptions"]

log = logging.getLogger(__name__)

#: The columns the sink reads and the Spark types each may have.
_COLUMN_TYPES = {
    "body": (BinaryType(), StringType()),
    "topic": (StringType(),),
    "tags": (StringType(),),
    "keys": (StringType(), ArrayType(StringType())),
    "properties": (MapType(StringType(), StringType()),),
}
#: Most bytes of message bodies in one batch (a batch must stay under ``maxMessageSize``).
BATCH_BYTES = 1024 * 1024


def _type_name(spark_type):
    return spark_type.simpleString()


def check_columns(schema, topic_option):
    """Raise ``ValueError`` unless ``schema`` (a Spark ``StructType``) can be written:
    a ``body``, a ``topic`` column or option, each known column of a type it may have."""
    fields = {field.name: field.dataType for field in schema.fields}
    if "body" not in fields:
        raise ValueError("the rocketmq sink needs a body column (binary or string); the "
                         "columns are %s" % ", ".join(fields))
    if "topic" not in fields and not topic_option:
        raise ValueError("the rocketmq sink needs a topic column or the topic option")
    for name, allowed in _COLUMN_TYPES.items():
        if name in fields and not any(_same_type(fields[name], t) for t in allowed):
            raise ValueError("column %s must be %s, not %s" % (
                name, " or ".join(_type_name(t) for t in allowed), _type_name(fields[name])))


def _same_type(actual, wanted):
    if isinstance(wanted, ArrayType):
        return isinstance(actual, ArrayType) and isinstance(actual.elementType, StringType)
    if isinstance(wanted, MapType):
        return (isinstance(actual, MapType) and isinstance(actual.keyType, StringType)
                and isinstance(actual.valueType, StringType))
    return type(actual) is type(wanted)


def _int(options, name, default, low):
    value = options.get(name)
    try:
        number = default if value is None else int(value)
    except ValueError:
        raise ValueError("%s must be a whole number, not %r" % (name, value)) from None
    if number < low:
        raise ValueError("%s must be at least %d, not %d" % (name, low, number))
    return number


class SinkOptions:
    """The sink's options: ``nameServer``, ``topic``, ``producerGroup``, ``batchSize``,
    ``sendMsgTimeout``, ``retryTimesWhenSendFailed``."""

    def __init__(self, options):
        self.name_server = options.get("nameServer")
        if not self.name_server:
            raise ValueError("the nameServer option is required (host:port, ';'-separated)")
        self.topic = options.get("topic")
        if self.topic:
            try:
                check_topic(self.topic)
            except ClientError as exc:
                raise ValueError(str(exc)) from None
        self.batch_size = _int(options, "batchSize", 256, 1)
        self.producer = dict(namesrvAddr=self.name_server,
                             producerGroup=options.get("producerGroup") or "spark-rocketmq-sink",
                             sendMsgTimeout=_int(options, "sendMsgTimeout", 10_000, 1),
                             retryTimesWhenSendFailed=_int(options, "retryTimesWhenSendFailed", 2, 0))


def check_name_server(options):
    """Raise ``ValueError`` when no NameServer of the option answers (asked on the driver,
    before any task runs)."""
    with Producer(**options.producer) as producer:
        try:
            run(producer.core.fetch_route(options.topic or "TBW102", now_ms()), producer._perform)
        except ClientError as exc:
            raise ValueError("the rocketmq sink cannot reach the NameServer %s: %s"
                             % (options.name_server, exc)) from None


def _messages(batch, topic_option):
    """The :class:`~rmqproto.client.Message` of each row of the Arrow ``batch``."""
    columns = {name: batch.column(name).to_pylist() for name in batch.schema.names
               if name in _COLUMN_TYPES}
    rows = batch.num_rows
    bodies = columns["body"]
    topics = columns.get("topic") or [None] * rows
    tags = columns.get("tags") or [None] * rows
    keys = columns.get("keys") or [None] * rows
    properties = columns.get("properties") or [None] * rows
    for i in range(rows):
        if bodies[i] is None:
            raise ValueError("row %d has a null body: every message needs one" % i)
        topic = topics[i] or topic_option
        if not topic:
            raise ValueError("row %d has a null topic and there is no topic option" % i)
        key = keys[i]
        if isinstance(key, str):
            key = key.split()
        user = {k: v for k, v in (properties[i] or ()) if k not in RESERVED_PROPERTIES and v is not None}
        yield Message(topic, bodies[i], tags=tags[i] or None, keys=key, properties=user)


@dataclass
class SentMessages(WriterCommitMessage):
    """What one task stored: how many messages in how many batches."""

    messages: int
    batches: int


def write_batches(options, batches):
    """Send the rows of the Arrow ``batches``; the :class:`SentMessages` of the task once
    every message is stored. A send that fails after the producer's retries raises."""
    sent = SentMessages(0, 0)
    pending, size, topic = [], 0, None
    with Producer(**options.producer) as producer:
        def flush():
            if pending:
                if len(pending) == 1:
                    producer.send(pending[0])
                else:
                    producer.send_batch(pending)
                sent.messages += len(pending)
                sent.batches += 1
                pending.clear()

        for batch in batches:
            for message in _messages(batch, options.topic):
                if pending and (message.topic != topic or len(pending) >= options.batch_size
                                or size + len(message.body) > BATCH_BYTES):
                    flush()
                    size = 0
                topic = message.topic
                pending.append(message)
                size += len(message.body)
        flush()
    return sent


class _Writer:
    def __init__(self, options, schema):
        self.options = SinkOptions(options)
        check_columns(schema, self.options.topic)
        check_name_server(self.options)

    def write(self, iterator):
        return write_batches(self.options, iterator)

    def _report(self, messages, what):
        sent = sum(m.messages for m in messages if m is not None)
        log.info("rocketmq sink %s: %d messages stored by %d of %d tasks", what, sent,
                 sum(m is not None for m in messages), len(messages))


class BatchWriter(_Writer, DataSourceArrowWriter):
    """``df.write.format("rocketmq")``."""

    def commit(self, messages):
        self._report(messages, "done")

    def abort(self, messages):
        self._report(messages, "failed")


class StreamWriter(_Writer, DataSourceStreamArrowWriter):
    """``df.writeStream.format("rocketmq")``: each micro-batch as a batch write."""

    def commit(self, messages, batchId):
        self._report(messages, "micro-batch %d done" % batchId)

    def abort(self, messages, batchId):
        self._report(messages, "micro-batch %d failed" % batchId)
