"""Pulled messages as the ``rocketmq`` source's rows: Arrow record batches of :data:`COLUMNS`,
the first columns of the ``rocketmq-store`` format (:mod:`rmqproto.spark.storefiles`), so
that a DataFrame read from a broker and one read from its store line up."""

from rmqproto.codec import message as wire
from rmqproto.spark.storefiles import COLUMNS as STORE_COLUMNS, arrow_schema

__all__ = ["COLUMNS", "SCHEMA", "messages_batch"]

#: The source's columns: those of the store reader up to ``properties``.
COLUMNS = STORE_COLUMNS[:[name for name, _ in STORE_COLUMNS].index("properties") + 1]
#: The rows' schema as a Spark DDL string.
SCHEMA = ", ".join("`%s` %s" % column for column in COLUMNS)
#: What a pull adds to a message's properties (``PullAPIWrapper``); not stored, so not a column.
_PULL_PROPERTIES = (wire.PROPERTY_MIN_OFFSET, wire.PROPERTY_MAX_OFFSET)


def _commit_log_offset(offset_msg_id):
    """The commit-log offset an offset message id ends with (``MessageDecoder.createMessageId``)."""
    return int(offset_msg_id[-16:], 16)


def _properties(message):
    return [(name, value) for name, value in message.properties.items()
            if name not in _PULL_PROPERTIES]


def messages_batch(messages):
    """A ``pyarrow.RecordBatch`` of :data:`COLUMNS` holding ``messages``
    (:class:`~rmqproto.client.ReceivedMessage`)."""
    import pyarrow as pa
    schema = arrow_schema(COLUMNS)
    props = [m.properties for m in messages]
    columns = [
        [m.topic for m in messages],
        [m.queue.broker_name for m in messages],
        [m.queue.queue_id for m in messages],
        [m.queue_offset for m in messages],
        [_commit_log_offset(m.offset_msg_id) for m in messages],
        [m.offset_msg_id for m in messages],
        [p.get(wire.PROPERTY_KEYS) for p in props],
        [p.get(wire.PROPERTY_TAGS) for p in props],
        [m.body for m in messages],
        [m.born_timestamp * 1000 for m in messages],
        [m.store_timestamp * 1000 for m in messages],
        ["%s:%d" % m.born_host for m in messages],
        ["%s:%d" % m.store_host for m in messages],
        [m.reconsume_times for m in messages],
        [_properties(m) for m in messages],
    ]
    return pa.RecordBatch.from_arrays(
        [pa.array(column, type=field.type) for column, field in zip(columns, schema)],
        schema=schema)
