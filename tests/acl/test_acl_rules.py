"""The pure ACL layer against Java 4.9.7's rules (``PlainAccessValidator``,
``PlainPermissionManager``, ``RemoteAddressStrategyFactory``, ``AclSigner``)."""

import base64
import hashlib
import hmac

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from rmqproto.acl import AclConfigError, AclError
from rmqproto.acl.address import address_matcher, expand_ipv6
from rmqproto.acl.edits import AccessConfig, delete_account, set_global_white, update_account
from rmqproto.acl.permission import DENY, PUB, SUB, check_permission, parse_perm
from rmqproto.acl.plain import AclFile, PlainAcl
from rmqproto.acl.request import access_request
from rmqproto.acl.signature import content_of, sign, signed_fields
from rmqproto.codec.bodies.client import ConsumerData, HeartbeatData, SubscriptionData
from rmqproto.codec.codes import RequestCode as RC
from rmqproto.codec.frame import RemotingCommand

ACL = yaml.safe_load("""
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
""")

HOST = "127.0.0.1"


def acl(data=ACL):
    return PlainAcl([AclFile("/home/conf/plain_acl.yml", data)])


def command(code, fields, body=b"", key="RocketMQ", secret="12345678", token=None):
    if key is not None:
        fields = signed_fields(fields, body, key, secret, token)
    return RemotingCommand(int(code), ext_fields=fields, body=body)


def verdict(cmd, host=HOST, data=ACL):
    try:
        acl(data).check(access_request(cmd, host))
    except AclError as exc:
        return str(exc)
    return "OK"


def send(topic, **kw):
    return command(RC.SEND_MESSAGE_V2, {"a": "producerGroup", "b": topic, "c": "TBW102"}, b"hi",
                   **kw)


def test_signature_is_base64_hmac_sha1_of_sorted_values_and_body():
    fields = {"b": "2", "a": "1", "Signature": "x", "AccessKey": "ak"}
    assert content_of(fields, b"body") == b"ak12body"
    expected = base64.b64encode(hmac.new(b"secret", b"ak12body", hashlib.sha1).digest()).decode()
    assert sign(b"ak12body", "secret") == expected
    # Java's TreeMap orders by UTF-16 code units: U+FF5E sorts after U+1F600's surrogates
    assert content_of({"\uff5e": "b", "\U0001f600": "a"}, b"") == b"ab"
    assert content_of({"k": None}, None) == b"null"


def test_topic_perms_defaults_and_denials():
    assert verdict(send("topicB")) == "OK"
    assert verdict(send("topicC")) == "No default permission for topic:topicC"
    assert verdict(send("topicA")) == "No default permission for topic:topicA"
    assert verdict(send("other")) == "No default permission for topic:other"  # default DENY


def test_credentials_and_signature():
    assert verdict(send("topicB", secret="wrong-secret")) == \
        "Check signature failed for accessKey=RocketMQ"
    assert verdict(send("topicB", key="unknown-ak")) == "No acl config for unknown-ak"
    assert verdict(send("topicB", key=None)) == "No accessKey is configured"
    assert verdict(send("topicB", token="a-token")) == "OK"  # the token is signed too
    tampered = send("topicB")
    tampered.ext_fields["b"] = "topicC"
    assert verdict(tampered) == "Check signature failed for accessKey=RocketMQ"


def test_white_addresses():
    unsigned = RemotingCommand(int(RC.SEND_MESSAGE_V2), ext_fields=None)
    assert verdict(unsigned) == "No accessKey is configured"
    assert verdict(unsigned, host="10.10.103.7") == "OK"  # global white: anything goes
    # an account's own white address lets its requests in unsigned, without a perm check
    assert verdict(send("topicA", key="rocketmq2", secret="bad-secret"), host="192.168.1.9") == "OK"
    assert verdict(send("topicA", key="rocketmq2", secret="bad-secret")) == \
        "Check signature failed for accessKey=rocketmq2"


def test_admin_codes_and_admin_accounts():
    create = command(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "t"})
    assert verdict(create) == ("Need admin permission for request code=17, but accessKey="
                               "RocketMQ is not")
    assert verdict(command(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "t"}, key="rocketmq2")) == "OK"
    # an admin without resource perms may do anything; with DENY defaults it still may
    assert verdict(send("topicA", key="rocketmq2")) == "OK"
    # ours, not Java's: reading or editing the ACL needs the admin flag too
    for code in (RC.UPDATE_AND_CREATE_ACL_CONFIG, RC.GET_BROKER_CLUSTER_ACL_CONFIG):
        assert verdict(command(code, {"accessKey": "x"})).startswith("Need admin permission")
    assert verdict(command(RC.GET_BROKER_CLUSTER_ACL_INFO, {})) == "OK"


def test_pull_and_groups_as_retry_topics():
    def pull(topic, group):
        return command(RC.PULL_MESSAGE, {"topic": topic, "consumerGroup": group, "queueId": "0"})
    assert verdict(pull("topicB", "groupB")) == "OK"
    assert verdict(pull("topicB", "groupA")) == "No default permission for group:groupA"
    assert verdict(pull("topicB", "anyGroup")) == "OK"  # default group perm SUB
    assert verdict(pull("topicA", "groupB")) == "No default permission for topic:topicA"
    # a send to a retry topic needs SUB on the producer group, not PUB on the topic
    assert verdict(send("%RETRY%groupB")) == "OK"
    assert verdict(send("%RETRY%x", key="RocketMQ")) == "OK"  # group "producerGroup": SUB
    back = command(RC.CONSUMER_SEND_MSG_BACK, {"group": "groupA", "offset": "1"})
    assert verdict(back) == "No default permission for group:groupA"


def test_heartbeat_and_consumer_headers():
    def heartbeat(group, topic):
        body = HeartbeatData("c1", [], [ConsumerData(group, subscription_data_set=[
            SubscriptionData(topic, "*")])]).to_json()
        return command(RC.HEART_BEAT, {}, body)
    assert verdict(heartbeat("groupB", "topicB")) == "OK"
    assert verdict(heartbeat("groupB", "topicA")) == "No default permission for topic:topicA"
    assert verdict(heartbeat("groupA", "topicB")) == "No default permission for group:groupA"
    bad = command(RC.HEART_BEAT, {}, b"{not json")
    assert verdict(bad) != "OK"
    offset = command(RC.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "groupB", "topic": "topicA",
                                                 "queueId": "0", "commitOffset": "5"})
    assert verdict(offset) == "No default permission for topic:topicA"
    missing = command(RC.GET_CONSUMER_LIST_BY_GROUP, {})
    assert "consumerGroup" in verdict(missing)
    assert verdict(command(RC.UNREGISTER_CLIENT, {"clientID": "c", "producerGroup": "p"})) == "OK"


def test_trace_topic_and_batch_sends():
    assert verdict(send("RMQ_SYS_TRACE_TOPIC")) == "OK"  # Java skips the check for traces
    batch = command(RC.SEND_BATCH_MESSAGE, {"a": "g", "b": "topicA", "c": "TBW102"})
    # ours, not Java's: 4.9.7 checks no permission for a batch
    assert verdict(batch) == "No default permission for topic:topicA"


def test_permissions():
    assert parse_perm(None) == DENY and parse_perm(" PUB|SUB ") == PUB | SUB
    assert parse_perm("nonsense") == DENY
    assert check_permission(PUB, PUB | SUB) and not check_permission(SUB, PUB)
    assert not check_permission(PUB, DENY | PUB)


@pytest.mark.parametrize("pattern, host, expected", [
    ("*", "1.2.3.4", True), ("", "1.2.3.4", False), ("192.168.0.*", "192.168.0.255", True),
    ("192.168.0.*", "192.168.1.1", False), ("192.168.1-3.*", "192.168.3.1", True),
    ("192.168.1-3.*", "192.168.4.1", False), ("192.168.*.*", "192.168.9.9", True),
    ("192.168.1.{1,2}", "192.168.1.2", True), ("192.168.1.{1,2}", "192.168.1.3", False),
    ("1.1.1.1,2.2.2.2", "2.2.2.2", True), ("127.0.0.1", "127.0.0.1", True),
    ("::1", "0:0:0:0:0:0:0:1", True), ("1:2:3:4:5:6:7:*", "1:2:3:4:5:6:7:9", True),
    ("1:2:3:4:5:6:7:*", "1:2:3:4:5:6:8:9", False), ("1:2:3:4:5:6:7:{1,2}", "1:2:3:4:5:6:7:2", True),
])
def test_white_address_patterns(pattern, host, expected):
    assert address_matcher(pattern)(host) is expected


@pytest.mark.parametrize("pattern", ["1.2.3", "300.1.1.1", "1.2.3.-4", "1.2.3.5-1", "10.1.1.0/24",
                                     "1.2.3.{4,x}", "zz:1:2:3:4:5:6:*", "1:2:3:4:5:6:*:7"])
def test_bad_white_address_patterns(pattern):
    with pytest.raises(AclConfigError):
        address_matcher(pattern)


def test_expand_ipv6():
    assert expand_ipv6("::1") == "0000:0000:0000:0000:0000:0000:0000:0001"


def test_bad_files_are_refused():
    with pytest.raises(AclConfigError, match="longer than 6"):
        AclFile("f", {"accounts": [{"accessKey": "short", "secretKey": "12345678"}]})
    with pytest.raises(AclConfigError, match="Parse resource permission failed"):
        AclFile("f", {"accounts": [{"accessKey": "longkey1", "secretKey": "12345678",
                                    "topicPerms": ["a=b=c"]}]})
    with pytest.raises(AclConfigError):
        AclFile("f", {"globalWhiteRemoteAddresses": ["nonsense"]})
    assert AclFile("f", None).accounts == []


def test_first_file_naming_a_key_wins_and_whites_add_up():
    first = AclFile("a.yml", {"globalWhiteRemoteAddresses": ["1.1.1.1"], "accounts": [
        {"accessKey": "account1", "secretKey": "secret-one", "admin": True}]})
    second = AclFile("b.yml", {"globalWhiteRemoteAddresses": ["2.2.2.2"], "accounts": [
        {"accessKey": "account1", "secretKey": "secret-two"}]})
    merged = PlainAcl([first, second])
    assert merged.file_of("account1") == "a.yml"
    assert merged.accounts["account1"][0].secret_key == "secret-one"
    assert len(merged.whites) == 2


def test_edits():
    data = yaml.safe_load(yaml.safe_dump(ACL))
    config = AccessConfig("RocketMQ", "87654321", topic_perms=["topicZ=PUB"])
    update_account(data, config, 1000)
    entry = data["accounts"][-1]  # moved to the end, as Java does
    assert entry["accessKey"] == "RocketMQ" and entry["secretKey"] == "87654321"
    assert entry["topicPerms"] == ["topicZ=PUB"] and entry["groupPerms"][0] == "groupA=DENY"
    assert entry["admin"] is False
    assert data["dataVersion"] == [{"counter": 1, "timestamp": 1000}]
    update_account(data, AccessConfig("newAccount", "newSecret1"), 2000)
    assert data["accounts"][-1]["accessKey"] == "newAccount"
    assert data["dataVersion"] == [{"counter": 2, "timestamp": 2000}]
    with pytest.raises(AclConfigError, match="cannot be null"):
        update_account(data, AccessConfig("newAccount", None), 3000)
    with pytest.raises(AclConfigError, match="Parse resource permission error"):
        update_account(data, AccessConfig("newAccount", "newSecret1", topic_perms=["t=ALL"]), 3000)
    with pytest.raises(AclConfigError):
        update_account(data, AccessConfig("newAccount", "newSecret1",
                                          white_remote_address="bad"), 3000)
    assert delete_account(data, "absent-key", 3000) is None
    assert delete_account(data, "newAccount", 3000) is data
    assert [a["accessKey"] for a in data["accounts"]] == ["rocketmq2", "RocketMQ"]
    set_global_white(data, ["1.2.3.*"], 4000)
    assert data["globalWhiteRemoteAddresses"] == ["1.2.3.*"]
    with pytest.raises(AclConfigError):
        set_global_white(data, ["bad"], 5000)


_TEXT = st.one_of(st.none(), st.text(max_size=12), st.sampled_from(
    ["topicB", "%RETRY%groupA", "RocketMQ", "0", "-1", "groupB"]))


@settings(max_examples=300)
@given(code=st.sampled_from([int(c) for c in RC] + [9999]),
       fields=st.one_of(st.none(), st.dictionaries(
           st.sampled_from(["a", "b", "topic", "group", "consumerGroup", "clientID", "queueId",
                            "commitOffset", "AccessKey", "Signature", "SecurityToken"]),
           _TEXT, max_size=8)),
       body=st.binary(max_size=40), host=st.sampled_from(["127.0.0.1", "10.10.103.1", "::1"]))
def test_any_request_is_allowed_or_refused_with_a_reason(code, fields, body, host):
    try:
        acl().check(access_request(RemotingCommand(code, ext_fields=fields, body=body), host))
    except AclError as exc:
        assert str(exc)
