"""Packaging for rmqproto."""
from glob import glob

from setuptools import Extension, find_packages, setup

# PySpark's Python data source API (pyspark.sql.datasource) with Arrow batches: Spark 4
SPARK = ["pyspark[sql]>=4.0", "pyarrow>=15"]
# what the unit tests of the pure layers need (.ci/newest-python installs only these);
# setuptools: tests build the speedups with setup.py (venvs of 3.12+ come without it)
UNIT = ["pytest>=7", "hypothesis>=6.80", "pytest-timeout>=2.1", "setuptools>=61"]

setup(
    name="rmqproto",
    version="0.1.0",
    description="Wire-compatible Apache RocketMQ replication core on Twisted",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    # plugins/ installs as rmqproto_plugins: a top-level "plugins" would clash with others'
    packages=find_packages(include=["rmqproto", "rmqproto.*"])
    + ["rmqproto_plugins", "twisted.plugins"],
    package_dir={"rmqproto_plugins": "plugins"},
    package_data={"twisted": ["plugins/*.py"], "rmqproto.console": ["static/*"]},
    # C versions of codec, store and broker hot paths in one module, a file a Python module
    # they speed up (docs/speedups.md); without a compiler the Python ones are used
    ext_modules=[Extension("rmqproto.codec._speedups",
                           sorted(glob("rmqproto/codec/speedups/*.c")),
                           depends=sorted(glob("rmqproto/codec/speedups/*.h")),
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
        "prometheus_client>=0.17",  # /metrics (docs/observability.md)
    ],
    extras_require={
        "unit": UNIT,
        "test": UNIT + ["rocketmq>=0.4.4",
                        # drives Debian's chromium in the console's browser tests (no browser
                        # download)
                        "playwright>=1.40"] + SPARK,
        "spark": SPARK,
    },
    entry_points={"console_scripts": [
        "rmqproto-spark-audit = rmqproto.spark.audit:main",  # docs/spark.md
        "rmqadmin = rmqproto.tools.rmqadmin:main",  # docs/client.md
    ]},
)
