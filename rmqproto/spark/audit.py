"""Replication audit: did every message of a master's store reach its replicas' stores?

    python -m rmqproto.spark.audit MASTER_STORE REPLICA_STORE... [--output DIR] [--master URL]

Reads each store directory with the ``rocketmq-store`` format (copies taken off the
brokers, or directories on a shared file system) and matches the replicas' records to the
master's by commit-log offset: HA copies the master's commit log byte for byte
(``HAService``), so a record that reached a replica sits at the same offset there. It reports

* ``differences``: every master record missing on a replica (``missing``) or present there
  with other content (``different``: a field, the body or a property differs);
* ``counts``: messages and bytes (record sizes) per topic and queue, on the master and on
  each replica, with the number of differences (``queueId`` null: the topic's total;
  ``topic`` null: the store's);
* ``lag``: per replica, how far its last record's store time and commit-log end are
  behind the master's, and the store time of the oldest missing record.

Tables are printed; ``--output DIR`` also writes them as Parquet (``DIR/differences``,
``DIR/counts``, ``DIR/lag``). Exit status: 0 when the replicas hold every master record
as it is, 1 otherwise. Spark runs in local mode unless ``--master`` names a cluster.
"""

import argparse
import sys
from dataclasses import dataclass

__all__ = ["audit", "AuditResult", "main"]

#: The columns whose values a replica's copy of a record must share with the master's.
_COMPARED = ("topic", "queueId", "queueOffset", "msgId", "body", "bornTimestamp",
             "storeTimestamp", "bornHost", "storeHost", "reconsumeTimes", "storeSize", "bodyCrc")
_DIFFERENCE_COLUMNS = ("replica", "problem", "topic", "queueId", "queueOffset",
                       "commitLogOffset", "msgId", "storeTimestamp", "storeSize")


@dataclass
class AuditResult:
    """The audit's three tables as DataFrames (see the module docstring)."""

    differences: object
    counts: object
    lag: object


def read_store(spark, path, layout="auto"):
    """The records of the store at ``path`` (a ``rocketmq-store`` DataFrame)."""
    return spark.read.format("rocketmq-store").option("layout", layout).load(path)


def _compared(prefix):
    from pyspark.sql import functions as F
    return [F.col(name).alias(prefix + name) for name in _COMPARED] + [
        F.array_sort(F.map_entries("properties")).alias(prefix + "properties")]


def _differences(master, replica, name):
    """The master's records that ``replica`` lacks or holds otherwise."""
    from pyspark.sql import functions as F
    left = master.select("commitLogOffset", *_compared(""))
    right = replica.select("commitLogOffset", *_compared("r_"))
    joined = left.join(right, "commitLogOffset", "left")
    same = F.lit(True)
    for column in _COMPARED + ("properties",):
        same = same & F.col(column).eqNullSafe(F.col("r_" + column))
    problem = F.when(F.col("r_topic").isNull(), "missing").when(~same, "different")
    return (joined.withColumn("problem", problem).where(F.col("problem").isNotNull())
            .withColumn("replica", F.lit(name)).select(*_DIFFERENCE_COLUMNS))


def _store_counts(frame, prefix):
    from pyspark.sql import functions as F
    return frame.rollup("topic", "queueId").agg(
        F.count(F.lit(1)).alias(prefix + "Messages"), F.sum("storeSize").alias(prefix + "Bytes"))


def _on_keys(left, right):
    return [left[key].eqNullSafe(right[key]) for key in ("topic", "queueId")]


def _counts(master_counts, replica, differences, name):
    """``counts`` rows of one replica: the master's and the replica's totals side by side."""
    from pyspark.sql import functions as F
    replica_counts = _store_counts(replica, "replica")
    problems = differences.rollup("topic", "queueId").agg(
        F.count(F.lit(1)).alias("differences"))
    both = master_counts.join(replica_counts, _on_keys(master_counts, replica_counts), "full")
    keys = [F.coalesce(master_counts[key], replica_counts[key]).alias(key)
            for key in ("topic", "queueId")]
    both = both.select(*keys, "masterMessages", "masterBytes", "replicaMessages",
                       "replicaBytes")
    return (both.join(problems, _on_keys(both, problems), "left")
            .select(F.lit(name).alias("replica"), both["topic"], both["queueId"],
                    *[F.coalesce(F.col(c), F.lit(0)).alias(c) for c in (
                        "masterMessages", "masterBytes", "replicaMessages", "replicaBytes",
                        "differences")]))


def _ends(frame, prefix):
    from pyspark.sql import functions as F
    return frame.agg(F.max("storeTimestamp").alias(prefix + "LastStoreTimestamp"),
                     F.max(F.col("commitLogOffset") + F.col("storeSize"))
                     .alias(prefix + "EndOffset"))


def _lag(master, replica, differences, name):
    """The ``lag`` row of one replica."""
    from pyspark.sql import functions as F
    missing = differences.where(F.col("problem") == "missing").agg(
        F.min("storeTimestamp").alias("oldestMissingStoreTimestamp"))
    row = _ends(master, "master").crossJoin(_ends(replica, "replica")).crossJoin(missing)
    return row.select(
        F.lit(name).alias("replica"), "*",
        (F.unix_millis("masterLastStoreTimestamp")
         - F.unix_millis("replicaLastStoreTimestamp")).alias("lagMillis"),
        (F.coalesce("masterEndOffset", F.lit(0))
         - F.coalesce("replicaEndOffset", F.lit(0))).alias("bytesBehind"))


def audit(spark, master_path, replica_paths, layout="auto"):
    """Audit the replicas' stores against the master's (the formats must be registered)."""
    if not replica_paths:
        raise ValueError("an audit needs at least one replica store")
    master = read_store(spark, master_path, layout).cache()
    master_counts = _store_counts(master, "master").cache()
    differences, counts, lags = [], [], []
    for path in replica_paths:
        replica = read_store(spark, path, layout).cache()
        found = _differences(master, replica, path).cache()
        differences.append(found)
        counts.append(_counts(master_counts, replica, found, path))
        lags.append(_lag(master, replica, found, path))
    return AuditResult(*(_union(frames).cache() for frames in (differences, counts, lags)))


def _union(frames):
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


# ---------------------------------------------------------------- command line

def _table(title, rows, columns, out, total=None):
    """``rows`` (dicts) as a fixed-width text table under ``title``."""
    shown = [["" if row[c] is None else str(row[c]) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in shown]) for i, c in enumerate(columns)]
    line = "  ".join("%-*s" % (w, c) for w, c in zip(widths, columns))
    out.write("%s (%d)\n%s\n" % (title, len(rows) if total is None else total, line))
    for r in shown:
        out.write("  ".join("%-*s" % (w, v) for w, v in zip(widths, r)) + "\n")
    out.write("\n")


def report(result, out, show=20):
    """Print the three tables (at most ``show`` differences); True when all replicas agree."""
    total = result.differences.count()
    differences = [row.asDict() for row in result.differences.orderBy(
        "replica", "commitLogOffset").limit(show).collect()]
    _table("Differences", differences, _DIFFERENCE_COLUMNS, out, total)
    if total > len(differences):
        out.write("... %d more (all of them in --output)\n\n" % (total - len(differences)))
    counts = result.counts.orderBy("replica", "topic", "queueId").collect()
    _table("Counts", [row.asDict() for row in counts], result.counts.columns, out)
    _table("Lag", [row.asDict() for row in result.lag.orderBy("replica").collect()],
           result.lag.columns, out)
    return total == 0


def write_parquet(result, directory):
    for name in ("differences", "counts", "lag"):
        getattr(result, name).write.mode("overwrite").parquet("%s/%s" % (directory, name))


def main(argv=None, out=sys.stdout):
    parser = argparse.ArgumentParser(prog="python -m rmqproto.spark.audit",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("master_store", help="the master's store directory")
    parser.add_argument("replica_stores", nargs="+", metavar="replica_store",
                        help="a replica's store directory")
    parser.add_argument("--output", help="also write the tables as Parquet under this directory")
    parser.add_argument("--master", default="local[*]",
                        help="the Spark master URL (default: local[*])")
    parser.add_argument("--layout", default="auto", choices=("auto", "commitlog", "dledger"))
    parser.add_argument("--show", type=int, default=20, help="differences printed (default 20)")
    args = parser.parse_args(argv)
    from pyspark.sql import SparkSession

    from rmqproto.spark import register
    running = SparkSession.getActiveSession()  # a caller's (a test's, a notebook's) is kept
    spark = running or (SparkSession.builder.master(args.master)
                        .appName("rocketmq-replication-audit")
                        .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    try:
        register(spark)
        result = audit(spark, args.master_store, args.replica_stores, args.layout)
        agree = report(result, out, args.show)
        if args.output:
            write_parquet(result, args.output)
    finally:
        if running is None:
            spark.stop()
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
