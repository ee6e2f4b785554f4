"""Packaging for rmqproto."""
from setuptools import Extension, find_packages, setup

# PySpark's Python data source API (pyspark.sql.datasource) with Arrow batches: Spark 4
SPARK = ["pyspark[sql]>=4.0", "pyarrow>=15"]

setup(
    name="rmqproto",
    version="0.1.0",
    description="Wire-compatible Apache RocketMQ replication core on Twisted",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["rmqproto", "rmqproto.*", "plugins", "plugins.*"])
    + ["twisted.plugins"],
    package_data={"twisted": ["plugins/*.py"]},
    # C versions of codec hot paths; without a compiler the Python ones are used
    ext_modules=[Extension("rmqproto.codec._speedups",
                           ["rmqproto/codec/_speedups.c", "rmqproto/codec/crc32.c",
                            "rmqproto/codec/hareceiver.c", "rmqproto/codec/jsonheader.c"],
                           depends=["rmqproto/codec/crc32.h", "rmqproto/codec/hareceiver.h",
                                    "rmqproto/codec/jsonheader.h"],
                           optional=True)],
    install_requires=[
        "twisted>=23.8",
        "zope.interface>=6",
        "construct>=2.10,<2.11",
        "orjson>=3.8",
        "treq>=23.8",
        "pyyaml>=5.4",
        "pyOpenSSL>=24.3",  # TLS on the remoting ports (docs/security.md)
        "cryptography>=42",
    ],
    extras_require={
        "test": ["pytest>=7", "hypothesis>=6.80", "pytest-timeout>=2.1",
                 "rocketmq>=0.4.4"] + SPARK,
        "spark": SPARK,
    },
    entry_points={"console_scripts": [
        "rmqproto-spark-audit = rmqproto.spark.audit:main",  # docs/spark.md
    ]},
)
