"""Fixtures of the store tests: small segments so that rolls, blanks and new CQ files happen."""

import json
import subprocess

import pytest
from twisted.internet import defer, task

from rmqproto.codec.message import MessageRecord
from rmqproto.store.defaultstore import DefaultMessageStore
from support.interop import JAVA_FLAGS

SMALL = dict(mappedFileSizeCommitLog=64 * 1024, mappedFileSizeConsumeQueue=10 * 20,
             maxHashSlotNum=64, maxIndexNum=200, flushIntervalCommitLog=100,
             flushIntervalConsumeQueue=100)
STORE_HOST = ("10.9.8.7", 10911)


def record(topic="TopicA", queue_id=0, body=b"hello", **properties):
    return MessageRecord(topic, body, dict(properties), queue_id=queue_id,
                         born_host=("10.1.2.3", 50000), store_host=STORE_HOST,
                         born_timestamp=1700000000000)


class StoreFactory:
    """Opens stores on one directory with a fake clock; every store is shut down at the end."""

    def __init__(self, root):
        self.root = root
        self.clock = task.Clock()
        self.clock.advance(1700000000)
        self.stores = []

    def open(self, start=True, **config):
        settings = dict(SMALL, storePathRootDir=str(self.root))
        settings.update(config)
        store = DefaultMessageStore(settings, self.clock)
        store.load()
        if start:
            store.start()
        self.stores.append(store)
        return store

    def crash(self, store):
        """Drop a running store as kill -9 would: nothing flushed or removed, lock released."""
        import os
        store.flusher.stop()
        store.cq_flusher.stop()
        store._sampler.stop()
        store._close_files()
        os.close(store._lock_fd)
        store._lock_fd = None
        store.is_shutdown = True
        self.stores.remove(store)

    def close_all(self):
        for store in self.stores:
            store.shutdown()


@pytest.fixture
def stores(tmp_path):
    factory = StoreFactory(tmp_path / "store")
    yield factory
    factory.close_all()


def put(store, rec):
    """Put and return the PutMessageResult (the fake reactor fires Deferreds at once)."""
    results = []
    store.put_message(rec).addCallback(results.append)
    assert results, "put did not complete"
    return results[0]


class ManualRunner:
    """Blocking jobs wait until the test runs them."""

    def __init__(self):
        self.jobs = []

    def __call__(self, f, *args):
        d = defer.Deferred()
        self.jobs.append((f, args, d))
        return d

    def run_next(self):
        f, args, d = self.jobs.pop(0)
        d.callback(f(*args))


def write_java_files(root, vectors):
    """The recorded files (stored with trailing zeros trimmed) back on disk; the summary."""
    for v in vectors[1:]:
        fields = v["fields"]
        raw = bytes.fromhex(v["hex"])
        path = "index/" + fields["file_name"] if fields["path"] == "index" else fields["path"]
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(raw + bytes(fields["file_size"] - len(raw)))
    return vectors[0]["fields"]


def store_serve(java_interop, *args):
    """Run StoreServe.java (``write DIR ...`` or ``read DIR ...``); the JSON it prints."""
    out = subprocess.run(
        ["java", *JAVA_FLAGS, "-cp", java_interop.classpath, "rmqproto.interop.StoreServe", *args],
        capture_output=True, check=False, timeout=300)
    assert out.returncode == 0, out.stderr.decode(errors="replace")[-3000:]
    return json.loads(out.stdout.decode().strip().splitlines()[-1])
