"""Store directories for the Spark tests: Java's recorded files, ours, a DLedger data log."""

import random
import zlib

from rmqproto.codec.message import COMPRESSED_FLAG, MessageRecord, encode_record
from rmqproto.dledger.store import DLedgerStore, StoreSettings
from store.store_support import StoreFactory, put, store_serve, write_java_files
from support.interop import load_vectors

STORE_HOST = ("10.9.8.7", 10911)


def java_store(root):
    """The commit log and queues StoreFamily.java wrote; the summary of what Java read."""
    return write_java_files(root, load_vectors("store_files"))


def java_written_store(java_interop, root):
    """A store StoreServe.java writes with Java's DefaultMessageStore (two topics, tags,
    keys, a delay message, IPv6 hosts, a batch); what Java then read of it."""
    return store_serve(java_interop, "write", str(root), "TopicA,TopicB,SCHEDULE_TOPIC_XXXX",
                       "TopicA#order-8")


def sample_records(count, seed=7):
    """``count`` records of two topics, bodies of 1 to 3000 bytes (every tenth one
    ZLIB-compressed, as a producer compresses a large body), keys, tags, properties."""
    rng = random.Random(seed)
    records = []
    for i in range(count):
        props = {"KEYS": "key%d order%d" % (i, i % 5), "TAGS": "tag%d" % (i % 3),
                 "UNIQ_KEY": "U%06d" % i, "color": rng.choice(["red", "blue"])}
        body, flag = rng.randbytes(rng.randint(1, 3000)), 0
        if i % 10 == 5:
            body, flag = zlib.compress(b"compressed %d " % i * 300), COMPRESSED_FLAG
        records.append(MessageRecord(
            "TopicA" if i % 3 else "TopicB", body, props, queue_id=i % 4, sys_flag=flag,
            born_host=("10.1.2.3", 50000), store_host=STORE_HOST,
            born_timestamp=1700000000000 + i))
    return records


def our_store(root, records):
    """Our store with ``records`` put into segments of 64 KiB; the put results in order."""
    factory = StoreFactory(root)
    store = factory.open()
    try:
        return [put(store, record).append_result for record in records]
    finally:
        factory.close_all()


def dledger_store(root, records, self_id="n0"):
    """A DLedger log of ``records`` (segments of 64 KiB) as ``DLedgerCommitLog`` writes them:
    each entry's body a commit-log record whose PHYSICALOFFSET is the body's position."""
    ledger = DLedgerStore(StoreSettings(str(root), self_id,
                                        mapped_file_size_for_entry_data=64 * 1024)).open()

    def at_position(position, body):
        record.commit_log_offset = position
        return encode_record(record)

    ledger.append_hooks.append(at_position)
    try:
        for record in records:
            ledger.append_as_leader(encode_record(record), 1)
    finally:
        ledger.close()
