"""A store directory written only by our codecs, read back by Java's DefaultMessageStore."""

import pytest

from rmqproto.codec import checkpoint, consumequeue, indexfile, message
from rmqproto.codec.storefile import offset_to_file_name, segment_start
from storefiles_support import store_files
from support.interop import load_vectors


def _write_store(root, files):
    """Re-encode every record, unit, index entry and the checkpoint from decoded values."""
    records, scans = files.commitlog_records()
    size = files.summary["commitlog_file_size"]
    segments = {}
    for record in records:
        start = segment_start(record.commit_log_offset, size)
        segment = segments.setdefault(start, bytearray(size))
        pos = record.commit_log_offset - start
        segment[pos:pos + record.store_size] = message.encode_record(
            message.MessageRecord(**record.fields()))
    for (path, scan) in scans:
        if scan.stop == "blank":
            segments[int(path.split("/")[1])][scan.position:scan.position + 8] = \
                message.encode_blank(size - scan.position)
    (root / "commitlog").mkdir(parents=True)
    for start, data in segments.items():
        (root / "commitlog" / offset_to_file_name(start)).write_bytes(bytes(data))

    cq_size = files.summary["cq_file_size"]
    by_queue = {}
    for record in records:
        if message.transaction_type(record.sys_flag) in (message.TRANSACTION_NOT_TYPE,
                                                         message.TRANSACTION_COMMIT_TYPE):
            by_queue.setdefault((record.topic, record.queue_id), []).append(
                consumequeue.ConsumeQueueUnit(record.commit_log_offset, record.store_size,
                                              record.tags_code))
    for (topic, queue_id), units in by_queue.items():
        directory = root / "consumequeue" / topic / str(queue_id)
        directory.mkdir(parents=True)
        data = consumequeue.encode_units(units)
        for start in range(0, len(data), cq_size):
            chunk = data[start:start + cq_size]
            (directory / offset_to_file_name(start)).write_bytes(chunk + bytes(cq_size - len(chunk)))

    slots, count = files.summary["hash_slot_num"], files.summary["index_num"]
    index = indexfile.IndexFile(bytearray(indexfile.index_file_size(slots, count)), slots, count)
    for record in records:
        for key in ([record.uniq_key] if record.uniq_key else []) + record.keys:
            index.put_key(indexfile.build_key(record.topic, key), record.commit_log_offset,
                          record.store_timestamp)
    (root / "index").mkdir()
    (root / "index" / files.index_file_name).write_bytes(bytes(index.buffer))

    last = max(r.store_timestamp for r in records)
    (root / "checkpoint").write_bytes(checkpoint.encode_checkpoint(
        checkpoint.Checkpoint(last, last, last)))


@pytest.mark.java
def test_java_reads_a_store_we_wrote(java_interop, tmp_path):
    files = store_files(load_vectors("store_files"))
    _write_store(tmp_path / "store", files)
    (answer,) = java_interop.decode("store_directory", [b""], dir=str(tmp_path / "store"),
                                    topics=["TopicA", "TopicB"])
    reads = answer["fields"]
    assert reads["queues"] == files.summary["java_reads"]["queues"]
    assert reads["keys"] == files.summary["java_reads"]["keys"]
    records, _ = files.commitlog_records()
    assert reads["max_phy_offset"] == records[-1].commit_log_offset + records[-1].store_size
