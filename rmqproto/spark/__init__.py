"""RocketMQ data on Spark through PySpark's Python data source API (docs/spark.md).

``register(spark)`` makes the formats of this package known to a ``SparkSession``:
``rocketmq-store`` (:mod:`rmqproto.spark.store_source`) reads store directories copied
off brokers. The replication audit is :mod:`rmqproto.spark.audit`.
"""

__all__ = ["register", "FORMATS"]

#: The formats :func:`register` adds.
FORMATS = ("rocketmq-store",)


def register(spark):
    """Register every format of this package with the SparkSession ``spark``."""
    from rmqproto.spark.store_source import StoreDataSource
    spark.dataSource.register(StoreDataSource)
