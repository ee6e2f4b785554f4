"""Consumer offsets: the table, Java's consumerOffset.json, QUERY/UPDATE_CONSUMER_OFFSET."""

from consume_support import Controller

from rmqproto.broker.offsets import ConsumerOffsetManager, consumer_offset_path
from rmqproto.codec import headers as h
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from support.interop import load_vectors


def test_commit_and_query():
    offsets = ConsumerOffsetManager()
    assert offsets.query_offset("g", "T", 0) == -1
    assert offsets.commit_offset("g", "T", 0, 5) is None
    assert offsets.commit_offset("g", "T", 0, 3) == 5  # smaller offsets are accepted, as in Java
    assert offsets.query_offset("g", "T", 0) == 3
    offsets.commit_offset("g", "U", 1, 9)
    offsets.commit_offset("h", "T", 1, 1)
    assert offsets.which_topic_by_consumer("g") == {"T", "U"}
    assert offsets.which_group_by_topic("T") == {"g", "h"}
    offsets.clone_offset("g", "k", "T")
    assert offsets.query_offsets("k", "T") == {0: 3}
    offsets.remove_offset("g")
    assert offsets.which_topic_by_consumer("g") == set()
    assert offsets.query_offset("h", "T", 1) == 1


def test_java_file_round_trip(tmp_path):
    for vector in load_vectors("body_consumer_offset"):
        offsets = ConsumerOffsetManager()
        offsets.decode(bytes.fromhex(vector["hex"]))
        assert offsets.encode() == bytes.fromhex(vector["hex"])


def test_persist_load_and_backup(tmp_path):
    path = consumer_offset_path(str(tmp_path))
    offsets = ConsumerOffsetManager(path)
    offsets.commit_offset("g", "T", 0, 5)
    offsets.persist()
    offsets.commit_offset("g", "T", 0, 6)
    offsets.persist()
    with open(path, "rb") as fh:
        assert fh.read() == b'{"offsetTable":{"T@g":{0:6}}}'
    with open(path + ".bak", "rb") as fh:
        assert fh.read() == b'{"offsetTable":{"T@g":{0:5}}}'
    with open(path, "wb") as fh:
        fh.write(b"{broken")
    loaded = ConsumerOffsetManager(path)
    assert loaded.load()
    assert loaded.query_offset("g", "T", 0) == 5
    assert not ConsumerOffsetManager(str(tmp_path / "none.json")).load()


def test_query_and_update_requests(tmp_path):
    broker = Controller(tmp_path)
    broker.topic("T")
    query = h.QueryConsumerOffsetRequestHeader(consumer_group="g", topic="T", queue_id=0)
    # nothing stored and the queue still starts at 0: Java answers 0
    response = broker.call(RC.QUERY_CONSUMER_OFFSET, query)
    assert (response.code, response.ext_fields["offset"]) == (R.SUCCESS, "0")
    broker.store.min_offsets[("T", 0)] = 10
    broker.store.queues[("T", 0)] = []
    response = broker.call(RC.QUERY_CONSUMER_OFFSET, query)
    assert response.code == R.QUERY_NOT_FOUND
    assert response.remark == "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
    update = h.UpdateConsumerOffsetRequestHeader(consumer_group="g", topic="T", queue_id=0,
                                                 commit_offset=42)
    assert broker.call(RC.UPDATE_CONSUMER_OFFSET, update).code == R.SUCCESS
    assert broker.call(RC.QUERY_CONSUMER_OFFSET, query).ext_fields["offset"] == "42"
    body = broker.call(RC.GET_ALL_CONSUMER_OFFSET).body
    assert body == b'{"offsetTable":{"T@g":{0:42}}}'


def test_missing_header_field_is_system_error(tmp_path):
    broker = Controller(tmp_path)
    response = broker.call(RC.UPDATE_CONSUMER_OFFSET, consumerGroup="g", topic="T", queueId="0")
    assert response.code == R.SYSTEM_ERROR
