"""The JSON bodies against the real RocketMQ 4.9.8 classes."""

import dataclasses
import json
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqproto.codec import bodies as B
from rmqproto.codec import fastjson
from rmqproto.codec.bodies import _bean
from rmqproto.errors import CodecError
from support.interop import load_vectors

#: vector kind -> (class, standard JSON?)
KINDS = {
    "body_data_version": (B.DataVersion, False),
    "body_topic_config": (B.TopicConfig, False),
    "body_topic_config_serialize_wrapper": (B.TopicConfigSerializeWrapper, False),
    "body_register_broker": (B.RegisterBrokerBody, False),
    "body_kv_table": (B.KVTable, False),
    "body_queue_data": (B.QueueData, False),
    "body_broker_data": (B.BrokerData, False),
    "body_topic_route": (B.TopicRouteData, False),
    "body_topic_route_standard": (B.TopicRouteData, True),
    "body_cluster_info": (B.ClusterInfo, False),
    "body_topic_list": (B.TopicList, False),
    "body_heartbeat": (B.HeartbeatData, False),
    "body_consumer_offset": (B.ConsumerOffsetSerializeWrapper, False),
    "body_delay_offset": (B.DelayOffsetSerializeWrapper, False),
    "body_subscription_group_config": (B.SubscriptionGroupConfig, False),
    "body_subscription_group_wrapper": (B.SubscriptionGroupWrapper, False),
    "body_lock_batch_request": (B.LockBatchRequestBody, False),
    "body_lock_batch_response": (B.LockBatchResponseBody, False),
    "body_unlock_batch_request": (B.UnlockBatchRequestBody, False),
    "body_consumer_list_by_group": (B.GetConsumerListByGroupResponseBody, False),
    "body_topic_stats_table": (B.TopicStatsTable, False),
    "body_consume_stats": (B.ConsumeStats, False),
}
COMPRESSED = "body_register_broker_compressed"
CLASSES = sorted({cls for cls, _ in KINDS.values()}, key=lambda cls: cls.__name__)


def fields_of(obj):
    """The object as the Java tool reports it: a JSON tree whose map keys are all strings."""
    return _string_keys(obj.to_value())


def _string_keys(value):
    if isinstance(value, dict):
        return {_key_text(k): _string_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_string_keys(v) for v in value]
    return value


def _key_text(key):
    if isinstance(key, fastjson.ObjectKey):
        return fastjson.dumps(key.members).decode("utf-8")
    return key if isinstance(key, str) else str(key)


def unordered(value):
    """Java re-orders sets and hash maps; compare lists as multisets."""
    if isinstance(value, dict):
        return {k: unordered(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted((unordered(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, float):
        return float(value)
    return value


# ------------------------------------------------------------ strategies

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


def strategy_for(java_type):
    if java_type is _bean.STRING:
        return _TEXT
    if java_type is _bean.INT:
        return st.integers(-(1 << 31), (1 << 31) - 1)
    if java_type is _bean.LONG:
        return st.integers(-(1 << 63), (1 << 63) - 1)
    if java_type is _bean.BOOL:
        return st.booleans()
    if java_type is _bean.DOUBLE:
        return st.floats(allow_nan=False, allow_infinity=False)
    if isinstance(java_type, _bean.EnumOf):
        return st.sampled_from(list(java_type.enum_class))
    if isinstance(java_type, _bean.ListOf):
        return st.lists(strategy_for(java_type.item), max_size=3, unique_by=repr)
    if isinstance(java_type, _bean.MapOf):
        return st.dictionaries(strategy_for(java_type.key), strategy_for(java_type.value), max_size=3)
    return bean_strategy(java_type.bean_class)


def bean_strategy(cls):
    """Objects of ``cls``: members that default to ``None`` are sometimes left unset."""
    kwargs = {}
    for field in dataclasses.fields(cls):
        spec = next(s for s in cls._specs if s.attr == field.name)
        value = strategy_for(spec.java_type)
        kwargs[field.name] = st.none() | value if field.default is None else value
    return st.builds(cls, **kwargs)


_TOPIC_NAME = st.text("abcXYZ019%_-|", min_size=1, max_size=10)
_REGISTER_BODIES = st.builds(
    B.RegisterBrokerBody,
    st.builds(
        B.TopicConfigSerializeWrapper,
        st.dictionaries(_TOPIC_NAME, st.builds(
            B.TopicConfig, st.just("x"), *(st.integers(-(1 << 31), (1 << 31) - 1) for _ in range(3)),
            st.sampled_from(list(B.TopicFilterType))), max_size=5).map(
                lambda table: {name: dataclasses.replace(tc, topic_name=name) for name, tc in table.items()}),
        bean_strategy(B.DataVersion)),
    st.lists(_TEXT, max_size=3))


# ------------------------------------------------------------ 1. checked-in vectors

@pytest.mark.parametrize("kind", sorted(KINDS))
def test_vectors_decode_and_reencode(kind):
    cls, standard = KINDS[kind]
    for vector in load_vectors(kind):
        data = bytes.fromhex(vector["hex"])
        obj = cls.from_json(data)
        assert fields_of(obj) == vector["fields"], vector["name"]
        assert obj.to_json(standard=standard) == data, vector["name"]


def test_compressed_vectors_decode_and_reencode_with_python_zlib():
    for vector in load_vectors(COMPRESSED):
        data = bytes.fromhex(vector["hex"])
        obj = B.RegisterBrokerBody.decode(data, compressed=True)
        assert fields_of(obj) == vector["fields"], vector["name"]
        assert obj.to_compressed() == data, vector["name"]  # zlib level 9 == Deflater(BEST_COMPRESSION)
        assert B.RegisterBrokerBody.decode(data) == obj


def test_default_and_standard_route_vectors_give_equal_objects():
    default = [B.TopicRouteData.from_json(bytes.fromhex(v["hex"])) for v in load_vectors("body_topic_route")]
    standard = [B.TopicRouteData.from_json(bytes.fromhex(v["hex"])) for v in load_vectors("body_topic_route_standard")]
    assert default == standard
    assert default[0].broker_datas[0].master_addr() == "10.0.0.1:10911"


def test_java_defaults():
    assert B.TopicConfig("t").to_json() == (
        b'{"order":false,"perm":6,"readQueueNums":16,"topicFilterType":"SINGLE_TAG","topicName":"t",'
        b'"topicSysFlag":0,"writeQueueNums":16}')
    group = B.SubscriptionGroupConfig("g")
    assert (group.retry_queue_nums, group.retry_max_times, group.which_broker_when_consume_slowly) == (1, 16, 1)
    assert B.perm_to_string(B.PERM_READ | B.PERM_WRITE) == "RW-"
    assert B.DataVersion(5, 1).next_version(9) == B.DataVersion(9, 2)


def test_subscription_for_expression_matches_the_java_client():
    vector = load_vectors("body_heartbeat")[1]
    beat = B.HeartbeatData.from_json(bytes.fromhex(vector["hex"]))
    subs = beat.consumer_data_set[0].subscription_data_set
    for sub in subs[:3]:
        assert B.SubscriptionData.for_expression(sub.topic, sub.sub_string, sub.sub_version) == sub
    sql = subs[3]
    assert B.SubscriptionData.for_expression(sql.topic, sql.sub_string, sql.sub_version, "SQL92") == sql


# ------------------------------------------------------------ 2. fresh vectors

@pytest.mark.java
@pytest.mark.parametrize("kind", sorted(KINDS) + [COMPRESSED])
def test_fresh_vectors_equal_checked_in(fresh_vectors, kind):
    assert fresh_vectors(kind) == load_vectors(kind)


# ------------------------------------------------------------ 3. Java decodes what we encode

def _samples(strategy, count):
    found = []

    @settings(max_examples=count, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(obj):
        found.append(obj)

    collect()
    return found


#: Members of RocketMQ 5's classes the 4.9.8 ones lack (fastjson skips them on reading).
ROCKETMQ5_MEMBERS = {"body_consume_stats": {"pullOffset"}}


def _without(value, names):
    if isinstance(value, dict):
        return {k: _without(v, names) for k, v in value.items() if k not in names}
    return value


@pytest.mark.java
def test_java_decodes_our_encoding(java_interop):
    for kind, (cls, standard) in sorted(KINDS.items()):
        objs = _samples(bean_strategy(cls), 8)
        answers = java_interop.decode(kind, [obj.to_json(standard=standard) for obj in objs])
        for obj, answer in zip(objs, answers):
            assert "error" not in answer, (kind, obj, answer)
            expected = _without(fields_of(obj), ROCKETMQ5_MEMBERS.get(kind, ()))
            assert unordered(answer["fields"]) == unordered(expected), kind


@pytest.mark.java
def test_java_decodes_our_compressed_register_body(java_interop):
    objs = _samples(_REGISTER_BODIES, 10)
    answers = java_interop.decode(COMPRESSED, [obj.to_compressed() for obj in objs])
    for obj, answer in zip(objs, answers):
        assert "error" not in answer, answer
        assert unordered(answer["fields"]) == unordered(fields_of(obj))


# ------------------------------------------------------------ 4. round trips

@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip(cls, data):
    obj = data.draw(bean_strategy(cls))
    for standard in (False, True):
        encoded = obj.to_json(standard=standard)
        decoded = cls.from_json(encoded)
        assert decoded == obj
        assert decoded.to_json(standard=standard) == encoded


@settings(max_examples=30, deadline=None)
@given(bean_strategy(B.TopicRouteData))
def test_fastjson_and_standard_json_give_equal_objects(route):
    assert B.TopicRouteData.from_json(route.to_json()) == B.TopicRouteData.from_json(route.to_json(standard=True))


@settings(max_examples=30, deadline=None)
@given(bean_strategy(B.ClusterInfo))
def test_cluster_info_in_both_encodings(info):
    assert B.ClusterInfo.from_json(info.to_json()) == B.ClusterInfo.from_json(info.to_json(standard=True)) == info


@settings(max_examples=30, deadline=None)
@given(_REGISTER_BODIES)
def test_compressed_round_trip(body):
    encoded = body.to_compressed()
    decoded = B.RegisterBrokerBody.decode(encoded)
    assert decoded == body
    assert decoded.to_compressed() == encoded
    assert B.RegisterBrokerBody.decode(body.to_json()) == body


# ------------------------------------------------------------ 5. fuzz

_VALID = [bytes.fromhex(v["hex"]) for kind in sorted(KINDS) for v in load_vectors(kind)]
_VALID_COMPRESSED = [bytes.fromhex(v["hex"]) for v in load_vectors(COMPRESSED)]


def _decode_all(data):
    for cls in CLASSES:
        try:
            cls.from_json(data)
        except CodecError:
            pass
    for compressed in (True, None):
        try:
            B.RegisterBrokerBody.decode(data, compressed)
        except CodecError:
            pass


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_raise_only_codec_errors(data):
    _decode_all(data)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(_VALID + _VALID_COMPRESSED), st.data())
def test_mutated_bodies_raise_only_codec_errors(valid, data):
    mutated = bytearray(valid)
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(mutated) - 1))
        mutated[position] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(mutated)))
    _decode_all(bytes(mutated[:cut]))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_VALID_COMPRESSED), st.data())
def test_mutated_inflated_register_bodies_raise_only_codec_errors(valid, data):
    inflated = bytearray(zlib.decompress(valid))
    position = data.draw(st.integers(0, len(inflated) - 1))
    inflated[position] = data.draw(st.integers(0, 255))
    try:
        B.RegisterBrokerBody.decode(zlib.compress(bytes(inflated)), compressed=True)
    except CodecError:
        pass


@pytest.mark.parametrize("document, message", [
    (b'{"topicName":5}', "expected a string"),
    (b'{"readQueueNums":8}', "lacks required member"),
    (b'{"topicName":"t","perm":4294967296}', "out of range"),
    (b'{"topicName":"t","topicFilterType":"NO_SUCH"}', "is not a TopicFilterType"),
    (b'{"topicName":"t"', "invalid JSON"),
    (b'[]', "expected an object"),
])
def test_decoder_errors_name_the_problem(document, message):
    with pytest.raises(CodecError, match=message):
        B.TopicConfig.from_json(document)
