"""The replication audit (rmqproto/spark/audit.py) on a master's store and copies of it."""

import io
import shutil

import pytest

from rmqproto.spark.audit import audit, main
from rmqproto.spark.storefiles import find_segments
from stores import our_store, sample_records


def _overwrite(replica, offset, data):
    """Write ``data`` at commit-log offset ``offset`` of the replica's copy."""
    path = [p for p, _ in find_segments(str(replica)) if int(p.rsplit("/", 1)[1]) <= offset][-1]
    with open(path, "r+b") as fh:
        fh.seek(offset - int(path.rsplit("/", 1)[1]))
        fh.write(data)


@pytest.fixture(scope="module")
def audited(spark, tmp_path_factory):
    """One audit run of a master and three copies: identical, behind by its last record, and
    with one record's queue offset and another's body changed."""
    base = tmp_path_factory.mktemp("audit")
    records = sample_records(90, seed=11)
    results = our_store(base / "master", records)
    for name in ("identical", "behind", "changed"):
        shutil.copytree(base / "master", base / name)
    last = results[-1]
    _overwrite(base / "behind", last.wrote_offset, bytes(last.wrote_bytes))  # never received
    changed, corrupt = results[7], next(p for m, p in zip(records, results) if len(m.body) > 2000)
    _overwrite(base / "changed", changed.wrote_offset + 20, (12345).to_bytes(8, "big"))
    _overwrite(base / "changed", corrupt.wrote_offset + 1000, b"\x00\xff")  # in the body
    out = io.StringIO()
    status = main([str(base / name) for name in ("master", "identical", "behind", "changed")]
                  + ["--output", str(base / "out")], out)
    agreeing = io.StringIO()
    status_identical = main([str(base / "master"), str(base / "identical")], agreeing)
    tables = {name: [r.asDict() for r in spark.read.parquet(str(base / "out" / name)).collect()]
              for name in ("differences", "counts", "lag")}
    return dict(base=base, records=records, results=results, status=status,
                printed=out.getvalue(), changed=(changed, corrupt), **tables,
                identical=(status_identical, agreeing.getvalue()))


def _of(rows, replica):
    return [r for r in rows if r["replica"].endswith("/" + replica)]


def test_identical_stores_report_nothing(audited):
    status, printed = audited["identical"]
    assert status == 0 and "Differences (0)" in printed
    assert _of(audited["differences"], "identical") == []
    lag, = _of(audited["lag"], "identical")
    assert (lag["lagMillis"], lag["bytesBehind"], lag["oldestMissingStoreTimestamp"]) \
        == (0, 0, None)
    totals, = [r for r in _of(audited["counts"], "identical") if r["topic"] is None]
    assert (totals["masterMessages"], totals["replicaMessages"], totals["differences"]) \
        == (90, 90, 0)
    assert totals["masterBytes"] == totals["replicaBytes"] \
        == sum(p.wrote_bytes for p in audited["results"])


def test_a_record_missing_on_a_slave_is_found(audited):
    records, results = audited["records"], audited["results"]
    last, record = results[-1], records[-1]
    assert audited["status"] == 1
    assert [(d["problem"], d["commitLogOffset"], d["topic"], d["queueId"], d["queueOffset"])
            for d in _of(audited["differences"], "behind")] == [
        ("missing", last.wrote_offset, record.topic, record.queue_id, last.logics_offset)]
    queue, = [r for r in _of(audited["counts"], "behind")
              if (r["topic"], r["queueId"]) == (record.topic, record.queue_id)]
    assert (queue["masterMessages"] - queue["replicaMessages"], queue["differences"]) == (1, 1)
    assert queue["masterBytes"] - queue["replicaBytes"] == last.wrote_bytes
    lag, = _of(audited["lag"], "behind")
    assert lag["bytesBehind"] == last.wrote_bytes
    assert lag["lagMillis"] == last.store_timestamp - results[-2].store_timestamp
    assert lag["oldestMissingStoreTimestamp"].timestamp() * 1000 == last.store_timestamp
    assert "missing" in audited["printed"] and "Differences (3)" in audited["printed"]


def test_changed_records_are_found(audited):
    changed, corrupt = audited["changed"]
    assert sorted((d["problem"], d["commitLogOffset"], d["queueOffset"])
                  for d in _of(audited["differences"], "changed")) == sorted([
        ("different", changed.wrote_offset, changed.logics_offset),
        ("different", corrupt.wrote_offset, corrupt.logics_offset)])
    lag, = _of(audited["lag"], "changed")
    assert lag["bytesBehind"] == 0 and lag["oldestMissingStoreTimestamp"] is None


def test_an_audit_needs_a_replica(spark):
    with pytest.raises(ValueError, match="at least one replica"):
        audit(spark, "/nonexistent", [])
