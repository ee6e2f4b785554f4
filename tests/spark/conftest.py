"""One small local SparkSession for the Spark tests (Spark starts once), formats registered."""

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    from rmqproto.spark import register
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (SparkSession.builder.master("local[2]").appName("rmqproto-tests")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", "512m").config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    register(session)
    yield session
    session.stop()
