"""The ``rocketmq-store`` format: ``spark.read.format("rocketmq-store").load(STORE_DIR)``.

A PySpark Python data source over :mod:`rmqproto.spark.storefiles`: one input partition per
region of a segment file, rows sent as Arrow record batches. Options (docs/spark.md):
``brokerName`` (the ``brokerName`` column, else null), ``layout`` (``auto``, ``commitlog`` or
``dledger``), ``maxRegionBytes`` (the largest region of a partition, default 128 MiB).
"""

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from rmqproto.spark.rows import STORE_SCHEMA as SCHEMA
from rmqproto.spark.storefiles import (DEFAULT_REGION_BYTES, find_segments, plan_regions,
                                       region_batches)

__all__ = ["StoreDataSource", "SCHEMA"]


class StoreDataSource(DataSource):
    """``rocketmq-store``: the messages of a commit-log or DLedger directory, no broker needed."""

    @classmethod
    def name(cls):
        return "rocketmq-store"

    def schema(self):
        return SCHEMA

    def reader(self, schema):
        return _StoreReader(self.options)


class _StoreReader(DataSourceReader):
    def __init__(self, options):
        path = options.get("path")
        if not path:
            raise ValueError("rocketmq-store needs a store directory: .load(PATH)")
        self.segments = find_segments(path, options.get("layout", "auto"))
        try:
            self.region_bytes = int(options.get("maxRegionBytes", DEFAULT_REGION_BYTES))
        except ValueError:
            raise ValueError("maxRegionBytes must be a number of bytes, not %r"
                             % options.get("maxRegionBytes")) from None
        self.broker_name = options.get("brokerName")

    def partitions(self):
        return [InputPartition(region) for region in plan_regions(self.segments,
                                                                   self.region_bytes)]

    def read(self, partition):
        if partition.value is None:  # Spark's one partition when there are none: no rows
            return
        yield from region_batches(partition.value, self.broker_name)
