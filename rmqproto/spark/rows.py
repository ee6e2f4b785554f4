"""The rows of both Spark readers as Arrow record batches, built from the column buffers of
:mod:`rmqproto.spark.columns` with ``pyarrow.Array.from_buffers`` (no Python object a row).

:data:`STORE_COLUMNS` are the ``rocketmq-store`` format's columns; the ``rocketmq``
source's, :data:`COLUMNS`, are their first ones, so that a DataFrame read from a broker
and one read from its store line up.
"""

from rmqproto.spark.columns import BUFFERS

__all__ = ["COLUMNS", "SCHEMA", "STORE_COLUMNS", "STORE_SCHEMA", "arrow_schema",
           "columns_batch"]

#: The store reader's columns, in order, with their Spark SQL types.
STORE_COLUMNS = (("topic", "string"), ("brokerName", "string"), ("queueId", "int"),
                 ("queueOffset", "bigint"), ("commitLogOffset", "bigint"), ("msgId", "string"),
                 ("keys", "string"), ("tags", "string"), ("body", "binary"),
                 ("bornTimestamp", "timestamp"), ("storeTimestamp", "timestamp"),
                 ("bornHost", "string"), ("storeHost", "string"), ("reconsumeTimes", "int"),
                 ("properties", "map<string,string>"), ("sysFlag", "int"), ("storeSize", "int"),
                 ("bodyCrc", "int"), ("crcOk", "boolean"))
#: The source's columns: those of the store reader up to ``properties``.
COLUMNS = STORE_COLUMNS[:[name for name, _ in STORE_COLUMNS].index("properties") + 1]


def _ddl(columns):
    return ", ".join("`%s` %s" % column for column in columns)


#: The rows' schemas as Spark DDL strings.
SCHEMA, STORE_SCHEMA = _ddl(COLUMNS), _ddl(STORE_COLUMNS)


def arrow_schema(columns=STORE_COLUMNS):
    """The Arrow schema of ``columns`` (timestamps in microseconds, UTC, as Spark sends them)."""
    import pyarrow as pa
    types = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(),
             "binary": pa.binary(), "timestamp": pa.timestamp("us", tz="UTC"),
             "map<string,string>": pa.map_(pa.string(), pa.string()), "boolean": pa.bool_()}
    return pa.schema([(name, types[kind]) for name, kind in columns])


#: Where each column's buffers start among :data:`~rmqproto.spark.columns.BUFFERS`.
_SOURCES = {"topic": "topic", "queueId": "queue_id", "queueOffset": "queue_offset",
            "commitLogOffset": "commit_log_offset", "msgId": "msg_id", "keys": "keys",
            "tags": "tags", "body": "body", "bornTimestamp": "born_timestamp",
            "storeTimestamp": "store_timestamp", "bornHost": "born_host",
            "storeHost": "store_host", "reconsumeTimes": "reconsume_times",
            "sysFlag": "sys_flag", "storeSize": "store_size", "bodyCrc": "body_crc",
            "crcOk": "crc_ok"}


def columns_batch(columns, schema, broker_name=None):
    """The ``pyarrow.RecordBatch`` of ``schema`` (:func:`arrow_schema`) holding the rows of
    ``columns`` (:class:`~rmqproto.spark.columns.Columns`), ``brokerName`` set to
    ``broker_name`` in every row."""
    import pyarrow as pa
    rows = columns.rows
    buffers = dict(zip(BUFFERS, map(pa.py_buffer, columns.buffers)))

    def array(kind, count, *names):
        return pa.Array.from_buffers(kind, count, [buffers.get(name) for name in names])

    arrays = []
    for field in schema:
        name, kind = field.name, field.type
        if name == "brokerName":
            arrays.append(pa.array([broker_name] * rows, kind))
        elif name == "properties":
            entries = pa.StructArray.from_arrays(
                [array(pa.string(), len(buffers["name_offsets"]) // 4 - 1, None, "name_offsets",
                       "name_data"),
                 array(pa.string(), len(buffers["value_offsets"]) // 4 - 1, None,
                       "value_offsets", "value_data")],
                fields=[kind.key_field, kind.item_field])
            arrays.append(pa.Array.from_buffers(kind, rows,
                                                [None, buffers["properties_offsets"]],
                                                children=[entries]))
        else:
            source = _SOURCES[name]
            if kind in (pa.string(), pa.binary()):
                valid = source + "_valid" if source + "_valid" in buffers else None
                arrays.append(array(kind, rows, valid, source + "_offsets", source + "_data"))
            else:
                arrays.append(array(kind, rows, None, source))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
