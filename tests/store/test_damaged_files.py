"""A store reopened after one of its files was damaged from outside (truncated, zeroed,
overwritten, grown, deleted, or a stray file put beside it): it either refuses to start
with a StoreError naming the file and having changed nothing, or it starts, serves every
queue, takes new messages and stops and starts again. It never raises anything else.

Java refuses a segment of the wrong size the same way; a consume queue damaged inside is
served as it reads, by both (the commit log itself is never rewritten from it)."""

import hashlib
import os
import random

import pytest

from rmqproto.store.mappedfile import StoreError
from store_support import StoreFactory, put, record

DAMAGES = ("truncate", "zero", "overwrite", "flip", "grow", "delete", "stray", "empty")
KINDS = ("commitlog", "consumequeue", "index", "checkpoint")
STRAY_NAMES = ("00000000000000000999", "junk", "x.tmp", "%020d" % 10 ** 12)


def fill(factory, rnd):
    """A store of a few hundred messages in three topics, stopped cleanly or crashed."""
    store = factory.open()
    for i in range(rnd.randint(100, 500)):
        topic = rnd.choice(("TopicA", "TopicB", "%RETRY%g"))
        put(store, record(topic, rnd.randrange(3), rnd.randbytes(rnd.randint(0, 600)),
                          KEYS="k%d" % i, UNIQ_KEY="U%032d" % i))
        factory.clock.advance(0.01)
    if rnd.random() < 0.5:
        store.shutdown()
        factory.stores.remove(store)
    else:
        factory.crash(store)


def store_files(root):
    return sorted(os.path.join(d, n) for d, _, names in os.walk(root) for n in names
                  if n != "lock")


def snapshot(root):
    return {path: hashlib.sha1(open(path, "rb").read()).hexdigest() for path in store_files(root)}


def damage(rnd, root, kind):
    """Damage one file of ``kind`` at random; the path damaged (or added)."""
    path = rnd.choice([p for p in store_files(root) if kind in os.path.relpath(p, root)])
    how = rnd.choice(DAMAGES)
    if how == "delete":
        os.unlink(path)
        return path
    if how == "stray":
        path = os.path.join(os.path.dirname(path), rnd.choice(STRAY_NAMES))
        data = rnd.randbytes(rnd.randint(0, 100))
    else:
        data = bytearray(open(path, "rb").read())
        size = len(data)
        start = rnd.randrange(size) if size else 0
        end = min(size, start + rnd.choice((1, 4, 20, 100, 5000)))
        if how == "truncate":
            del data[start:]
        elif how == "zero":
            data[start:end] = bytes(end - start)
        elif how == "overwrite":
            data[start:end] = rnd.randbytes(end - start)
        elif how == "flip" and size:
            data[start] ^= 1 << rnd.randrange(8)
        elif how == "grow":
            data += rnd.randbytes(rnd.randint(1, 300))
        elif how == "empty":
            data = b""
    with open(path, "wb") as f:
        f.write(data)
    return path


def serve_everything(store):
    """Pull every queue from its first offset to its last, and look a key up."""
    for topic, queues in list(store.consume_queue_table.items()):
        for queue_id in list(queues):
            offset = store.get_min_offset_in_queue(topic, queue_id)
            end = store.get_max_offset_in_queue(topic, queue_id)
            while offset < end:
                result = store.get_message("g", topic, queue_id, offset, 32)
                if result.next_begin_offset <= offset:
                    break
                offset = result.next_begin_offset
    store.query_message("TopicA", "k1", 32, 0, 2 ** 62)


@pytest.mark.parametrize("seed", range(32))
def test_a_damaged_file_is_refused_clearly_or_served(tmp_path, seed):
    rnd = random.Random(seed)
    root = tmp_path / "store"
    factory = StoreFactory(root)
    try:
        fill(factory, rnd)
        damaged = damage(rnd, root, KINDS[seed % len(KINDS)])
        before = snapshot(root)
        try:
            store = factory.open()
        except StoreError as exc:
            assert os.path.basename(damaged) in str(exc)
            assert snapshot(root) == before  # refused before writing anything
            return
        serve_everything(store)
        for i in range(20):
            assert put(store, record("TopicA", i % 3, b"after")).status.stored
        store.shutdown()
        factory.stores.remove(store)
        factory.open().shutdown()
    finally:
        factory.close_all()
