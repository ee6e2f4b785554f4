"""``python -m rmqproto.tools.decode`` on real Java store files, captures and DLedger files."""

import io
import json
import subprocess
import sys

import pytest

from rmqproto.codec import dledger
from rmqproto.codec.frame import RemotingCommand, encode_frame
from rmqproto.codec.message import MessageRecord, encode_record
from rmqproto.tools.decode import main
from support.interop import load_vectors


def run(*argv):
    out = io.StringIO()
    status = main(list(map(str, argv)), out=out)
    return status, [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.fixture
def java_store(tmp_path):
    """The commit log and consume queues a real Java DefaultMessageStore wrote (store vectors)."""
    for vector in load_vectors("store_files"):
        if "/" in vector["name"]:
            path = tmp_path / vector["name"]
            path.parent.mkdir(parents=True, exist_ok=True)
            data = bytes.fromhex(vector["hex"])
            if vector["name"].startswith("consumequeue/"):  # vectors trim trailing zeros
                data += bytes(-len(data) % 20)
            path.write_bytes(data)
    return tmp_path


def test_commit_log_segments_of_a_java_store(java_store):
    segments = sorted((java_store / "commitlog").iterdir())
    status, items = run("commitlog", *segments)
    assert status == 0
    records = [i for i in items if "topic" in i]
    ends = [i for i in items if i.get("type") == "end"]
    assert [e["stop"] for e in ends] == ["blank", "empty"]
    assert ends[0]["position"] + ends[0]["blank_size"] == 65536  # the blank fills segment one
    assert {r["topic"] for r in records} == {"TopicA", "TopicB"}
    assert all(r["position"] == r["commit_log_offset"] for r in records)
    assert records[-1]["position"] > 65536  # offsets of segment two carry its file name


def test_consume_queue_points_at_commit_log_records(java_store):
    _, items = run("commitlog", *sorted((java_store / "commitlog").iterdir()))
    positions = {r["position"]: r for r in items if "topic" in r}
    queue_dir = java_store / "consumequeue" / "TopicA" / "0"
    status, items = run("consumequeue", *sorted(queue_dir.iterdir()))
    units = [i for i in items if "queue_offset" in i]
    assert status == 0 and units
    assert [(i["type"], i["stop"]) for i in items if "queue_offset" not in i] == [
        ("end", "empty")] * len(list(queue_dir.iterdir()))
    assert [u["queue_offset"] for u in units] == list(range(len(units)))
    for unit in units:
        record = positions[unit["commit_log_offset"]]
        assert (record["topic"], record["queue_id"], record["store_size"]) == ("TopicA", 0, unit["size"])
        assert record["tags_code"] == unit["tags_code"]


def test_corruption_is_reported_with_its_position(java_store, tmp_path):
    segment = sorted((java_store / "commitlog").iterdir())[0]
    data = bytearray(segment.read_bytes())
    data[4] ^= 0xFF  # the first record's magic
    broken = tmp_path / "00000000000000000000"
    broken.write_bytes(bytes(data))
    status, items = run("commitlog", broken)
    assert status == 1
    assert items[-1]["stop"] == "corrupt" and items[-1]["position"] == 0


def test_frames_of_a_capture(tmp_path):
    capture = b"".join(encode_frame(c) for c in (
        RemotingCommand(105, opaque=1, ext_fields={"topic": "T"}, version=409),
        RemotingCommand(17, opaque=1, flag=1, remark="No topic route info", serialize_type=1),
    )) + b"\x00\x00\x01\x00partial"
    path = tmp_path / "capture.bin"
    path.write_bytes(capture)
    _, frames = run("frames", path)
    assert [(f["type"], f["name"]) for f in frames[:2]] == [
        ("request", "GET_ROUTEINFO_BY_TOPIC"), ("response", "TOPIC_NOT_EXIST")]
    assert frames[0]["ext_fields"] == {"topic": "T"} and frames[1]["serialize_type"] == 1
    assert frames[2] == {"type": "incomplete", "buffered_bytes": 11, "file": frames[2]["file"]}


def test_dledger_data_file_with_commit_log_bodies(tmp_path):
    record = encode_record(MessageRecord("T", body=b"hello", born_host=("127.0.0.1", 1),
                                         store_host=("127.0.0.1", 2)))
    first = dledger.DLedgerEntry(index=0, term=1, body=record, pos=0)
    second = dledger.DLedgerEntry(index=1, term=1, body=b"raw", pos=len(record) + 48)
    data = dledger.encode_entry(first) + dledger.encode_entry(second)
    data += dledger.encode_blank(64)
    path = tmp_path / "00000000000000000000"
    path.write_bytes(data)
    status, items = run("dledger", path)
    assert status == 0
    assert items[0]["record"]["topic"] == "T" and items[0]["record"]["body"] == {"text": "hello"}
    assert items[1]["body"] == {"text": "raw"}
    assert items[2] == {"type": "end", "stop": "blank", "position": len(data) - 64,
                        "blank_size": 64, "file": str(path)}


def test_every_decode_ends_with_why_it_stopped(tmp_path):
    """A consume queue whose unwritten tail holds garbage is reported as corrupt (exit 1)."""
    path = tmp_path / "00000000000000001000"
    unit = (1234).to_bytes(8, "big") + (96).to_bytes(4, "big") + (7).to_bytes(8, "big")
    path.write_bytes(unit + bytes(20) + b"\x01" + bytes(19))
    status, items = run("consumequeue", path)
    assert status == 1
    assert [i.get("queue_offset") for i in items[:-1]] == [50]
    assert items[-1]["stop"] == "corrupt" and items[-1]["position"] == 1020
    empty = tmp_path / "00000000000000000000"
    empty.write_bytes(bytes(64))
    for kind in ("consumequeue", "dledger", "commitlog"):
        assert run(kind, empty) == (0, [{"type": "end", "stop": "empty", "position": 0,
                                         "file": str(empty)}])


def test_runs_as_a_module(java_store):
    segment = sorted((java_store / "commitlog").iterdir())[0]
    result = subprocess.run([sys.executable, "-m", "rmqproto.tools.decode", "commitlog", str(segment)],
                            capture_output=True, text=True)
    assert result.returncode == 0 and '"topic": "TopicA"' in result.stdout
