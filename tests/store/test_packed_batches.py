"""A batch the broker hands over packed (``PackedBatch``) against the same batch as records
(``CommitLog.MessageExtBatchEncoder``): two stores fed the same batches, one each way, answer the same, write
the same commit log and consume queues, find the same keys, and refuse the same batches."""

import itertools

import pytest

from rmqproto.codec import message as msg
from rmqproto.store.results import PutMessageStatus as S
from store_support import STORE_HOST
from support.speedups import require_speedups
from test_defaultstore import check_consistent

require_speedups()  # a batch is packed only with the C speedups


def _prototype(topic="TopicA", queue_id=0):
    return msg.MessageRecord(topic, queue_id=queue_id, born_host=("10.1.2.3", 50000),
                             store_host=STORE_HOST, born_timestamp=1700000000000, body_crc=0)


def _body(count, size, start=0):
    """A batch body as the Java client encodes it: keys, tags and a unique key each."""
    items = []
    for i in range(start, start + count):
        own = msg.properties_to_string({"KEYS": "key-%d order-%d" % (i % 5, i),
                                        "TAGS": "T%d" % (i % 3),
                                        "UNIQ_KEY": "UNIQ%08d" % i}).encode()
        body = bytes([i % 256]) * size
        items.append(b"".join([(20 + len(body) + 2 + len(own)).to_bytes(4, "big"),
                               bytes(8), (i % 4).to_bytes(4, "big"),
                               len(body).to_bytes(4, "big"), body,
                               len(own).to_bytes(2, "big"), own]))
    return b"".join(items)


def _put(store, batch):
    results = []
    store.put_messages(batch).addCallback(results.append)
    (result,) = results
    return result


def _answer(result):
    a = result.append_result
    return (result.status, a and (a.wrote_offset, a.wrote_bytes, a.msg_id, a.logics_offset,
                                  a.msg_num, a.store_timestamp))


def _log_bytes(store):
    return b"".join(bytes(f.mm[:f.wrote_position]) for f in store.commit_log.queue.files)


def test_packed_and_record_batches_store_the_same(stores, tmp_path):
    packed_store = stores.open()
    records_store = stores.open(storePathRootDir=str(tmp_path / "records"))
    batch_properties = {"WAIT": "true", "CLUSTER": "DefaultCluster", "MSG_REGION": "r"}
    start = 0
    # sizes that roll segments of 64 KiB, with an end-of-file blank, over both queues
    for count, size, queue_id in itertools.islice(
            itertools.cycle([(32, 128, 0), (16, 1024, 1), (1, 0, 0), (7, 3000, 1)]), 40):
        data = _body(count, size, start)
        start += count
        packed = msg.pack_batch(data, batch_properties, _prototype(queue_id=queue_id))
        assert isinstance(packed, msg.PackedBatch)
        for _ in range(2):  # a packed batch can be put again
            records = msg.decode_batch_records(data, batch_properties,
                                               _prototype(queue_id=queue_id))
            answer = _answer(_put(packed_store, packed))
            assert answer[0] is S.PUT_OK and answer == _answer(_put(records_store, records))
            stores.clock.advance(0.003)
    assert len(packed_store.commit_log.queue.files) > 3
    assert _log_bytes(packed_store) == _log_bytes(records_store)
    for store in (packed_store, records_store):
        store.reput.do_reput()
        check_consistent(store)
    for queue_id in (0, 1):
        cqs = [s.find_consume_queue("TopicA", queue_id, create=False)
               for s in (packed_store, records_store)]
        assert [[cq.unit(i) for i in range(cq.max_offset_in_queue)] for cq in cqs][0] \
            == [cqs[1].unit(i) for i in range(cqs[1].max_offset_in_queue)]
    for key in ("key-3", "UNIQ00000040"):
        found = [s.query_message("TopicA", key, 64, 0, 1 << 62) for s in (packed_store,
                                                                          records_store)]
        assert found[0].messages and [bytes(m) for m in found[0].messages] \
            == [bytes(m) for m in found[1].messages]


@pytest.mark.parametrize("topic, batch_properties, max_message_size, status", [
    ("a/b", {}, None, S.MESSAGE_ILLEGAL),
    ("TopicA", {"DELAY": "3"}, None, S.MESSAGE_ILLEGAL),
    ("TopicA", {}, 100, S.MESSAGE_ILLEGAL),
])
def test_packed_batches_are_refused_as_records_are(stores, tmp_path, topic, batch_properties,
                                                   max_message_size, status):
    config = {} if max_message_size is None else {"maxMessageSize": max_message_size}
    packed_store = stores.open(**config)
    records_store = stores.open(storePathRootDir=str(tmp_path / "records"), **config)
    data = _body(3, 64)
    packed = msg.pack_batch(data, batch_properties, _prototype(topic))
    assert isinstance(packed, msg.PackedBatch)
    records = msg.decode_batch_records(data, batch_properties, _prototype(topic))
    assert _answer(_put(packed_store, packed)) == _answer(_put(records_store, records)) \
        == (status, None)
    assert _log_bytes(packed_store) == b""


def test_a_packed_batch_with_a_delay_in_its_properties_fails_as_records_do(stores):
    """A batch ``DELAY`` that is no int: Java's encoder throws; the put's Deferred fails."""
    store = stores.open()
    packed = msg.pack_batch(_body(2, 10), {"DELAY": "soon"}, _prototype())
    failures = []
    store.put_messages(packed).addErrback(failures.append)
    assert len(failures) == 1 and _log_bytes(store) == b""


def test_a_slave_refuses_a_packed_batch(stores):
    store = stores.open(brokerRole="SLAVE")
    packed = msg.pack_batch(_body(2, 10), {}, _prototype())
    assert _answer(_put(store, packed)) == (S.SERVICE_NOT_AVAILABLE, None)
