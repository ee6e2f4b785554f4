"""RocketMQ data on Spark through PySpark's Python data source API (docs/spark.md).

``register(spark)`` makes the formats of this package known to a ``SparkSession``:
``rocketmq`` (:mod:`rmqproto.spark.source`, :mod:`rmqproto.spark.sink`) reads topics of a
running cluster in batch and streaming queries and writes DataFrames to topics;
``rocketmq-store`` (:mod:`rmqproto.spark.store_source`) reads store directories copied off
brokers. The replication audit is :mod:`rmqproto.spark.audit`.
"""

__all__ = ["register", "FORMATS"]

#: The formats :func:`register` adds.
FORMATS = ("rocketmq", "rocketmq-store")


def register(spark):
    """Register every format of this package with the SparkSession ``spark``."""
    from rmqproto.spark.source import RocketMQDataSource
    from rmqproto.spark.store_source import StoreDataSource
    for source in (RocketMQDataSource, StoreDataSource):
        spark.dataSource.register(source)
