"""kill -9 in the middle of SYNC_FLUSH puts: every acknowledged message survives.

A child process puts messages with several in flight and prints each acknowledgement;
it is killed with SIGKILL mid-stream, a torn record is added at the end of the commit
log (a write cut short), and the store is reopened: every acknowledged message is
readable at its offset and queue offset, the torn tail is gone, and the consume queues
match the commit log.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

from rmqproto.codec import message as msg
from rmqproto.store import recovery
from store_support import StoreFactory

ROOT = Path(__file__).resolve().parents[2]


def _run_and_kill(root, acks_wanted):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen([sys.executable, str(Path(__file__).with_name("sync_writer.py")),
                              str(root), "8"], stdout=subprocess.PIPE, env=env)
    acks = []
    try:
        for line in child.stdout:
            if line.startswith(b"ACK "):
                _, offset, queue_id, queue_offset, uniq = line.split()
                acks.append((int(offset), int(queue_id), int(queue_offset), uniq.decode()))
                if len(acks) >= acks_wanted:
                    break
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    return acks


def _tear_the_tail(root):
    """Append the first 60 bytes of a record after the last valid one, as a cut-short write."""
    directory = root / "commitlog"
    names = sorted(os.listdir(directory))
    segments = [(int(n), bytearray((directory / n).read_bytes())) for n in names]
    end = recovery.walk_commit_log(segments, 0, True)
    start, data = segments[-1]
    pos = end - start
    if pos + 200 > len(data):
        return end
    torn = msg.encode_record(msg.MessageRecord("KillTopic", b"x" * 100, {"UNIQ_KEY": "TORN"}))[:60]
    with open(directory / names[-1], "r+b") as fh:
        fh.seek(pos)
        fh.write(torn)
    return end


def test_acknowledged_sync_flush_messages_survive_kill_9(tmp_path):
    root = tmp_path / "store"
    acks = _run_and_kill(root, 600)
    assert len(acks) >= 600
    assert (root / "abort").exists()
    end = _tear_the_tail(root)
    factory = StoreFactory(root)
    store = factory.open(mappedFileSizeConsumeQueue=10 * 20, maxHashSlotNum=64, maxIndexNum=400)
    assert not store.last_exit_ok
    assert store.get_max_phy_offset() == end  # the torn record is gone
    assert len(store.commit_log.queue.files) >= 2  # segments rolled during the run
    for offset, queue_id, queue_offset, uniq in acks:
        record = store.look_message_by_offset(offset)
        assert record is not None and record.uniq_key == uniq
        assert (record.queue_id, record.queue_offset) == (queue_id, queue_offset)
        assert store.get_commit_log_offset_in_queue("KillTopic", queue_id, queue_offset) == offset
    # consume queues = commit log: every record, in order, and nothing else
    for queue_id in range(3):
        offsets, next_offset = [], 0
        while next_offset < store.get_max_offset_in_queue("KillTopic", queue_id):
            got = store.get_message("g", "KillTopic", queue_id, next_offset, 32)
            offsets += [msg.decode_record(m).commit_log_offset for m in got.messages]
            next_offset = got.next_begin_offset
        in_log = [r.commit_log_offset for f in store.commit_log.queue.files
                  for r in msg.iter_records(f.mm[:f.wrote_position], 0, True)
                  if r.queue_id == queue_id]
        assert offsets == in_log
    assert len(store.query_message("KillTopic", acks[-1][3], 32, 0, 2 ** 62).messages) == 1
    factory.close_all()
