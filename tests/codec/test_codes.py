"""The code tables of rmqproto.codec.codes against the constants of the 4.9.8 Java classes."""

import pytest

from rmqproto.codec import frame
from rmqproto.codec.codes import (
    CURRENT_VERSION, VERSION_NAMES, LanguageCode, MQVersion, RequestCode, ResponseCode,
    SerializeType, coerce, version_desc)
from support.interop import load_vectors


@pytest.fixture(scope="module")
def tables():
    return load_vectors("frame_codes")[0]["fields"]


#: Codes of the 4.9.7 broker's ``RequestCode`` that the 4.9.8 classes no longer declare.
ONLY_IN_4_9_7 = {"GET_BROKER_CLUSTER_ACL_CONFIG": 54}


def test_request_codes_are_the_java_constants(tables):
    assert {m.name: int(m) for m in RequestCode} == dict(tables["requestCodes"], **ONLY_IN_4_9_7)


def test_response_codes_are_the_java_constants(tables):
    assert {m.name: int(m) for m in ResponseCode} == tables["responseCodes"]


def test_language_codes(tables):
    ours = {m.name: int(m) for m in LanguageCode}
    assert ours.pop("NODE_JS") == 13  # RMQ5 only
    assert ours == tables["languageCodes"]
    assert frame.LANGUAGE_CODES == {m.name: int(m) for m in LanguageCode}


def test_versions(tables):
    assert list(VERSION_NAMES) == tables["names"]
    assert CURRENT_VERSION == tables["currentVersion"] == MQVersion.V4_9_8 == 409
    assert MQVersion.V3_0_11 == 37 and MQVersion.V4_9_4 == 401 and MQVersion.V5_0_0 == 413
    assert MQVersion(409).name == "V4_9_8"


def test_version_desc_clamps_like_java():
    assert version_desc(409) == "V4_9_8"
    assert version_desc(10 ** 6) == "HIGHER_VERSION"
    with pytest.raises(ValueError):
        version_desc(-1)


def test_unknown_codes_stay_plain_ints():
    assert coerce(RequestCode, 105) is RequestCode.GET_ROUTEINFO_BY_TOPIC
    assert coerce(RequestCode, 50001) == 50001 and type(coerce(RequestCode, 50001)) is int
    assert RequestCode.SEND_MESSAGE_V2 == 310 and {310: "x"}[RequestCode.SEND_MESSAGE_V2] == "x"
    assert SerializeType.ROCKETMQ == frame.SERIALIZE_ROCKETMQ


def test_fresh_tables_match(fresh_vectors):
    assert fresh_vectors("frame_codes") == load_vectors("frame_codes")
