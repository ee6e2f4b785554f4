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


#: Where each column's buffers are among :data:`~rmqproto.spark.columns.BUFFERS`.
_SOURCES = {"topic": "topic", "queueId": "queue_id", "queueOffset": "queue_offset",
            "commitLogOffset": "commit_log_offset", "msgId": "msg_id", "keys": "keys",
            "tags": "tags", "body": "body", "bornTimestamp": "born_timestamp",
            "storeTimestamp": "store_timestamp", "bornHost": "born_host",
            "storeHost": "store_host", "reconsumeTimes": "reconsume_times",
            "sysFlag": "sys_flag", "storeSize": "store_size", "bodyCrc": "body_crc",
            "crcOk": "crc_ok"}
_PLANS = {}


def _plan(schema):
    """``[(type, buffer indexes)]`` of each column of ``schema``, made once a schema: the
    indexes of its validity (or None), offsets and data buffers; for ``brokerName`` None,
    for ``properties`` the map's entries."""
    plan = _PLANS.get(schema)
    if plan is None:
        import pyarrow as pa
        index = {name: i for i, name in enumerate(BUFFERS)}
        plan = []
        for field in schema:
            source = _SOURCES.get(field.name)
            if source is None:
                plan.append((field.type, None))
            elif field.type in (pa.string(), pa.binary()):
                plan.append((field.type, (index.get(source + "_valid"),
                                          index[source + "_offsets"], index[source + "_data"])))
            else:
                plan.append((field.type, (None, index[source])))
        plan = _PLANS[schema] = plan
    return plan


_ENTRIES = [BUFFERS.index(name) for name in ("properties_offsets", "name_offsets", "name_data",
                                              "value_offsets", "value_data")]


def columns_batch(columns, schema, broker_name=None):
    """The ``pyarrow.RecordBatch`` of ``schema`` (:func:`arrow_schema`) holding the rows of
    ``columns`` (:class:`~rmqproto.spark.columns.Columns`), ``brokerName`` set to
    ``broker_name`` in every row."""
    import pyarrow as pa
    rows = columns.rows
    buffers = [pa.py_buffer(buffer) for buffer in columns.buffers]
    from_buffers = pa.Array.from_buffers
    arrays = []
    for kind, where in _plan(schema):
        if where is not None:
            arrays.append(from_buffers(kind, rows, [None if i is None else buffers[i]
                                                    for i in where]))
        elif pa.types.is_map(kind):
            entries, names, name_data, values, value_data = (buffers[i] for i in _ENTRIES)
            arrays.append(from_buffers(kind, rows, [None, entries], children=[
                pa.StructArray.from_arrays(
                    [from_buffers(pa.string(), len(names) // 4 - 1, [None, names, name_data]),
                     from_buffers(pa.string(), len(values) // 4 - 1,
                                  [None, values, value_data])],
                    fields=[kind.key_field, kind.item_field])]))
        else:
            arrays.append(pa.array([broker_name] * rows, kind))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
