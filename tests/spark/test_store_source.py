"""The ``rocketmq-store`` format (docs/spark.md) on stores written by Java, by our store and
by our DLedger log; the region walk of rmqproto/spark/storefiles.py without Spark."""

import os
import shutil

import pytest

from rmqproto.codec.javalang import masked_crc32
from rmqproto.codec.message import (TRANSACTION_PREPARED_TYPE, transaction_type,
                                    uncompressed_body)
from rmqproto.spark.storefiles import find_segments, plan_regions, region_batches
from stores import dledger_store, java_store, java_written_store, our_store, sample_records


def _read(spark, path, **options):
    reader = spark.read.format("rocketmq-store")
    for key, value in options.items():
        reader = reader.option(key, value)
    return [row.asDict() for row in reader.load(str(path)).orderBy("commitLogOffset").collect()]


def _millis(timestamp):
    return int(timestamp.timestamp() * 1000)


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    root = tmp_path_factory.mktemp("ours") / "store"
    records = sample_records(150)
    return root, records, our_store(root, records)


def _queues(rows):
    """The rows a consumer sees, in Java's shape: ``{"topic/queueId": [units]}``."""
    queues = {}
    for row in rows:
        if transaction_type(row["sysFlag"]) == TRANSACTION_PREPARED_TYPE:
            continue  # in the commit log, not in a queue until committed
        queues.setdefault("%s/%d" % (row["topic"], row["queueId"]), []).append(dict(
            commit_log_offset=row["commitLogOffset"], queue_offset=row["queueOffset"],
            uniq_key=row["properties"].get("UNIQ_KEY")))
    return {q: sorted(v, key=lambda u: u["queue_offset"]) for q, v in queues.items()}


def test_a_java_store_reads_as_java_read_it(spark, tmp_path):
    summary = java_store(tmp_path / "store")
    rows = _read(spark, tmp_path / "store", maxRegionBytes=40000, brokerName="broker-a")
    assert _queues(rows) == summary["java_reads"]["queues"]
    assert [(r["msgId"], _millis(r["storeTimestamp"]), r["storeSize"]) for r in rows] \
        == [(p["msg_id"], p["store_timestamp"], p["wrote_bytes"]) for p in summary["puts"]]
    assert all(r["crcOk"] and r["brokerName"] == "broker-a" for r in rows)


@pytest.mark.java
def test_a_store_the_java_store_writes_now_reads_as_java_reads_it(spark, java_interop, tmp_path):
    java = java_written_store(java_interop, tmp_path / "java")
    rows = _read(spark, tmp_path / "java", maxRegionBytes=8192)
    assert _queues(rows) == java["queues"]
    assert max(r["commitLogOffset"] + r["storeSize"] for r in rows) == java["max_phy_offset"]
    assert all(r["crcOk"] for r in rows)


def test_our_store_reads_back_exactly_what_was_put(spark, ours):
    root, records, results = ours
    rows = _read(spark, root, maxRegionBytes=50000)
    assert len(find_segments(str(root))) > 2  # the records rolled over several segments
    assert [(r["topic"], r["queueId"], r["queueOffset"], r["commitLogOffset"], r["msgId"],
             r["body"], r["keys"], r["tags"], r["properties"], _millis(r["bornTimestamp"]),
             _millis(r["storeTimestamp"]), r["bornHost"], r["storeHost"], r["reconsumeTimes"],
             r["sysFlag"], r["storeSize"], r["bodyCrc"], r["crcOk"]) for r in rows] == [
        (m.topic, m.queue_id, p.logics_offset, p.wrote_offset, p.msg_id, uncompressed_body(m),
         m.properties["KEYS"], m.properties["TAGS"], m.properties, m.born_timestamp,
         p.store_timestamp, "10.1.2.3:50000", "10.9.8.7:10911", 0, m.sys_flag, p.wrote_bytes,
         masked_crc32(m.body), True) for m, p in zip(records, results)]
    assert rows[0]["brokerName"] is None
    assert rows[5]["body"] == b"compressed 5 " * 300  # inflated, as a consumer gets it


def test_a_dledger_store_reads_its_records(spark, tmp_path):
    records = sample_records(60, seed=3)
    dledger_store(tmp_path, records)
    rows = _read(spark, tmp_path, maxRegionBytes=30000)
    assert [(r["topic"], r["body"], r["properties"]) for r in rows] \
        == [(m.topic, uncompressed_body(m), m.properties) for m in records]
    # the record's PHYSICALOFFSET is where its body sits in the data files
    data = sorted((tmp_path / "dledger-n0" / "data").iterdir())
    assert rows[0]["commitLogOffset"] == 48 and rows[-1]["commitLogOffset"] < \
        int(data[-1].name) + data[-1].stat().st_size


def test_a_flipped_body_byte_fails_the_crc_check(spark, ours, tmp_path):
    root, records, results = ours
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    target = next(p for m, p in zip(records, results) if len(m.body) > 2000)
    segment = find_segments(str(copy))[0][0]
    with open(segment, "r+b") as fh:
        fh.seek(target.wrote_offset + 1000)
        byte = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([byte[0] ^ 0xFF]))
    rows = _read(spark, copy)
    assert [r["commitLogOffset"] for r in rows if not r["crcOk"]] == [target.wrote_offset]
    assert len(rows) == len(records)


@pytest.mark.parametrize("region_bytes", [1000, 4096, 65536, 1 << 30])
def test_regions_hold_every_record_once(ours, region_bytes):
    root, records, results = ours
    offsets = [offset for region in plan_regions(find_segments(str(root)), region_bytes)
               for batch in region_batches(region)
               for offset in batch.column("commitLogOffset").to_pylist()]
    assert offsets == [p.wrote_offset for p in results]


def test_bytes_that_are_not_utf8_become_replacement_characters(ours, tmp_path):
    root, records, results = ours
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    target = results[0]
    with open(find_segments(str(copy))[0][0], "r+b") as fh:
        raw = fh.read(target.wrote_bytes)
        fh.seek(raw.index(b"TAGS\x01tag0") + 7)
        fh.write(b"\x96")
    region = plan_regions(find_segments(str(copy)), 1000)[0]
    batch = next(region_batches(region))
    assert dict(batch.column("properties")[0].as_py())["TAGS"] == "ta\ufffd0"
    assert batch.column("crcOk")[0].as_py()  # the body is intact


def test_a_root_with_both_logs_needs_the_layout_option(ours, tmp_path):
    root, records, results = ours
    dledger_store(tmp_path, sample_records(3))
    shutil.copytree(root / "commitlog", tmp_path / "commitlog")
    with pytest.raises(ValueError, match="set the layout option"):
        find_segments(str(tmp_path))
    assert {kind for _, kind in find_segments(str(tmp_path), "dledger")} == {"dledger"}
    assert [(os.path.basename(p), kind) for p, kind in find_segments(str(tmp_path), "commitlog")] \
        == [(os.path.basename(p), kind) for p, kind in find_segments(str(root))]


def test_a_root_with_an_empty_commit_log_has_no_rows(spark, tmp_path):
    (tmp_path / "commitlog").mkdir()  # a new slave's
    assert find_segments(str(tmp_path)) == [] and plan_regions([]) == []
    assert _read(spark, tmp_path) == []


def test_a_directory_without_segments_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no commit-log or DLedger segment"):
        find_segments(str(tmp_path))
    with pytest.raises(ValueError, match="no store directory"):
        find_segments(str(tmp_path / "absent"))
