"""Store directories shared with Java's 4.9.8 DefaultMessageStore.

* the files of a real Java store run (``store_files`` vectors, written by StoreFamily.java)
  are opened and served by our store: same queues, offsets and key lookups as Java read;
* with Java present, StoreServe.java serves a directory our store wrote, and our store
  serves a directory StoreServe wrote.
"""

import pytest

from rmqproto.codec import message as msg
from store_support import StoreFactory, put, record, store_serve, write_java_files
from support.interop import load_vectors


def _serve_ours(store, topics, keys):
    """What our store answers, in the shape of StoreFamily/StoreServe's JSON."""
    queues = {}
    for topic in topics:
        for q in range(18):
            max_offset = store.get_max_offset_in_queue(topic, q)
            if max_offset <= 0:
                continue
            out, offset = [], 0
            while offset < max_offset:
                got = store.get_message("g", topic, q, offset, 32)
                for raw in got.messages:
                    r = msg.decode_record(raw)
                    out.append(dict(commit_log_offset=r.commit_log_offset,
                                    queue_offset=r.queue_offset, uniq_key=r.uniq_key))
                if got.next_begin_offset <= offset:
                    break
                offset = got.next_begin_offset
            queues["%s/%d" % (topic, q)] = out
    found = {}
    for full in keys:
        topic, key = full.split("#", 1)
        result = store.query_message(topic, key, 64, 0, 2 ** 63 - 1)
        found[full] = sorted(msg.decode_record(m).commit_log_offset for m in result.messages)
    return dict(queues=queues, keys=found)


def test_we_serve_the_files_java_wrote(tmp_path):
    root = tmp_path / "store"
    s = write_java_files(root, load_vectors("store_files"))
    factory = StoreFactory(root)
    store = factory.open(mappedFileSizeCommitLog=s["commitlog_file_size"],
                         mappedFileSizeConsumeQueue=s["cq_file_size"],
                         maxHashSlotNum=s["hash_slot_num"], maxIndexNum=s["index_num"])
    java = s["java_reads"]
    ours = _serve_ours(store, ["TopicA", "TopicB"], java["keys"])
    assert ours["queues"] == java["queues"]
    assert ours["keys"] == {k: sorted(v) for k, v in java["keys"].items()}
    last = s["puts"][-1]
    assert store.get_max_phy_offset() == last["wrote_offset"] + last["wrote_bytes"]
    # and we keep writing where Java stopped
    result = put(store, record("TopicA", 0))
    assert result.append_result.wrote_offset == store.get_max_phy_offset() - result.append_result.wrote_bytes
    assert result.append_result.logics_offset == len(java["queues"]["TopicA/0"])
    factory.close_all()


# ---------------------------------------------------------------- live Java (StoreServe.java)

def _our_directory(root):
    """Messages like StoreServe's: two topics, tags, keys, a delay message, IPv6 hosts, a batch."""
    factory = StoreFactory(root)
    store = factory.open(mappedFileSizeConsumeQueue=8 * 20, maxHashSlotNum=16, maxIndexNum=400)
    for i in range(120):
        props = {"UNIQ_KEY": "0A0102030000%020X" % i, "WAIT": "true", "KEYS": "key-%d order-%d" % (i % 10, i)}
        if i % 4:
            props["TAGS"] = ["TagA", "TagB", "标签😀"][i % 3]
        r = record("TopicA" if i % 3 else "TopicB", i % 2, bytes([i % 251]) * (200 + (i * 137) % 1300), **props)
        if i % 10 == 9:
            r.born_host = ("fd00::1", 50000)
        put(store, r)
        factory.clock.advance(0.003)
    put(store, record("TopicA", 1, b"later", DELAY="18", UNIQ_KEY="DELAYED0001"))
    batch = [record("TopicB", 1, b"b%d" % i, UNIQ_KEY="BATCH%04d" % i, KEYS="batch") for i in range(4)]
    store.put_messages(batch)
    expected = _serve_ours(store, ["TopicA", "TopicB", "SCHEDULE_TOPIC_XXXX"], [])
    schedule_tags = store.find_consume_queue("SCHEDULE_TOPIC_XXXX", 17, create=False).unit(0)[2]
    max_phy = store.get_max_phy_offset()
    factory.close_all()
    return expected, schedule_tags, max_phy


@pytest.mark.java
def test_java_serves_a_directory_we_wrote(java_interop, tmp_path):
    root = tmp_path / "ours"
    expected, schedule_tags, max_phy = _our_directory(root)
    java = store_serve(java_interop, "read", str(root),
                        "TopicA,TopicB,SCHEDULE_TOPIC_XXXX", "TopicA#order-7,TopicB#batch,TopicA#DELAYED0001")
    assert java["max_phy_offset"] == max_phy
    assert java["queues"] == expected["queues"]
    assert java["tags"]["SCHEDULE_TOPIC_XXXX/17"][0] == schedule_tags
    assert len(java["keys"]["TopicA#order-7"]) == 1
    assert len(java["keys"]["TopicB#batch"]) == 4


@pytest.mark.java
def test_we_serve_a_directory_java_wrote(java_interop, tmp_path):
    root = tmp_path / "java"
    java = store_serve(java_interop, "write", str(root), "TopicA,TopicB,SCHEDULE_TOPIC_XXXX",
                        "TopicA#order-8,TopicB#order-9,TopicA#key-3,TopicA#DELAYED0001,"
                        "TopicA#0A01020300002A9F0000000000000008")
    factory = StoreFactory(root)
    store = factory.open(mappedFileSizeConsumeQueue=8 * 20, maxHashSlotNum=16, maxIndexNum=400)
    ours = _serve_ours(store, ["TopicA", "TopicB", "SCHEDULE_TOPIC_XXXX"], java["keys"])
    assert ours["queues"] == java["queues"]
    assert ours["keys"] == {k: sorted(v) for k, v in java["keys"].items()}
    assert store.get_max_phy_offset() == java["max_phy_offset"]
    for name, codes in java["tags"].items():
        topic, q = name.split("/")
        cq = store.find_consume_queue(topic, int(q), create=False)
        assert [cq.unit(i)[2] for i in range(cq.max_offset_in_queue)] == codes
    factory.close_all()
