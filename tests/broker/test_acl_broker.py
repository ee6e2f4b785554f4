"""ACL in the broker: every request with a processor is checked (``aclEnable=true``), refusals
are answered as a 4.9.7 broker answers them, the files are watched and the ACL admin requests
edit them (controller on a fake clock)."""

import json
import os

import pytest
import yaml
from zope.interface.verify import verifyObject

from rmqproto.acl.signature import signed_fields
from rmqproto.broker import acl as broker_acl
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.frame import RemotingCommand, decode_frame
from rmqproto.pluggable import IAccessValidator, IAccessValidatorFactory, find
from rmqproto.remoting import RequestContext
from rmqproto.remoting.dispatch import GuardedDispatcher, RequestDispatcher
from rmqproto.services.broker import Options, makeService
from brokerkit import call, make_controller

ADMIN = ("adminAccount", "adminSecret1")
USER = ("userAccount", "userSecret1")
PEER = "127.0.0.1:40000"

ACL = {
    "globalWhiteRemoteAddresses": ["10.10.103.*"],
    "accounts": [
        {"accessKey": ADMIN[0], "secretKey": ADMIN[1], "admin": True},
        {"accessKey": USER[0], "secretKey": USER[1], "defaultTopicPerm": "DENY",
         "defaultGroupPerm": "SUB", "topicPerms": ["allowed=PUB"]},
    ],
}


def write_acl(home, data, name="plain_acl.yml"):
    path = home / "conf" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def home(tmp_path):
    write_acl(tmp_path / "home", ACL)
    return tmp_path / "home"


@pytest.fixture
def controller(tmp_path, home):
    controller = make_controller(tmp_path, aclEnable=True, rocketmqHome=str(home))
    controller.access_validator.start()
    yield controller
    controller.access_validator.stop()


def signed(controller, code, fields, credentials=USER, body=b"", peer=PEER):
    return call(controller, code, signed_fields(fields, body, *credentials), body=body, peer=peer)


def send(controller, topic, credentials=USER, peer=PEER):
    return signed(controller, RC.SEND_MESSAGE_V2,
                  {"a": "pg", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0",
                   "g": "0", "h": "0", "i": "", "j": "0", "k": "false"},
                  credentials, body=b"body", peer=peer)


def test_disabled_by_default_costs_nothing(tmp_path):
    controller = make_controller(tmp_path)
    assert controller.access_validator is None
    assert type(controller.dispatcher) is RequestDispatcher
    answer = call(controller, RC.GET_BROKER_CLUSTER_ACL_CONFIG)
    assert answer.code == R.SYSTEM_ERROR and "aclEnable=false" in answer.remark
    answer = call(controller, RC.DELETE_ACL_CONFIG, {"accessKey": "someAccount"})
    assert answer.code == R.DELETE_ACL_CONFIG_FAILED


def test_requests_are_checked(controller):
    assert isinstance(controller.dispatcher, GuardedDispatcher)
    assert send(controller, "allowed").code == R.SUCCESS
    refused = send(controller, "other")
    assert refused.code == R.SYSTEM_ERROR
    assert refused.remark == ("org.apache.rocketmq.acl.common.AclException: No default "
                              "permission for topic:other")
    unsigned = call(controller, RC.GET_ALL_TOPIC_CONFIG, {}, peer=PEER)
    assert unsigned.remark.endswith("No accessKey is configured")
    assert call(controller, RC.GET_ALL_TOPIC_CONFIG, peer="10.10.103.5:1").code == R.SUCCESS
    # no processor: not supported, as Java answers before its hooks run
    assert call(controller, 9999, peer=PEER).code == R.REQUEST_CODE_NOT_SUPPORTED
    # an admin request from a non-admin account
    create = signed(controller, RC.UPDATE_AND_CREATE_TOPIC,
                    {"topic": "made", "defaultTopic": "TBW102", "readQueueNums": "1",
                     "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG"})
    assert "Need admin permission for request code=17" in create.remark


def test_hot_reload(controller, home):
    assert send(controller, "later").code == R.SYSTEM_ERROR
    data = json.loads(json.dumps(ACL))
    data["accounts"][1]["topicPerms"].append("later=PUB")
    path = write_acl(home, data)
    os.utime(path, ns=(1, 1))  # a new mtime even on a coarse clock
    controller.reactor.advance(broker_acl.WATCH_INTERVAL)
    assert send(controller, "later").code == R.SUCCESS
    # a file that does not load leaves the ACL as it was
    path.write_text("accounts: [{accessKey: x}]")
    controller.reactor.advance(broker_acl.WATCH_INTERVAL)
    assert send(controller, "later").code == R.SUCCESS
    # a file added under conf/acl counts too, once every file loads
    write_acl(home, {"accounts": [{"accessKey": "extraAccount", "secretKey": "extraSecret"}]},
              "acl/extra.yml")
    controller.reactor.advance(broker_acl.WATCH_INTERVAL)
    assert send(controller, "x", ("extraAccount", "extraSecret")).remark.endswith(
        "No acl config for extraAccount")  # not while the default file does not load
    write_acl(home, data)
    controller.reactor.advance(broker_acl.WATCH_INTERVAL)
    assert send(controller, "x", ("extraAccount", "extraSecret")).remark.endswith(
        "No default permission for topic:x")


def test_admin_requests_edit_the_file(controller, home):
    answer = signed(controller, RC.UPDATE_AND_CREATE_ACL_CONFIG,
                    {"accessKey": "newAccount", "secretKey": "newSecret1",
                     "topicPerms": "fresh=PUB,", "admin": "false"}, ADMIN)
    assert answer.code == R.SUCCESS, answer.remark
    assert send(controller, "fresh", ("newAccount", "newSecret1")).code == R.SUCCESS
    stored = yaml.safe_load((home / "conf" / "plain_acl.yml").read_text())
    assert stored["accounts"][-1]["topicPerms"] == ["fresh=PUB"]
    assert stored["dataVersion"][0]["counter"] == 1
    # only an admin may edit the ACL (4.9.7 lets any signed account do it)
    answer = signed(controller, RC.DELETE_ACL_CONFIG, {"accessKey": "newAccount"})
    assert "Need admin permission" in answer.remark
    answer = signed(controller, RC.UPDATE_AND_CREATE_ACL_CONFIG,
                    {"accessKey": "short", "secretKey": "newSecret1"}, ADMIN)
    assert answer.code == R.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
    assert "length should longer than 6" in answer.remark
    assert signed(controller, RC.DELETE_ACL_CONFIG, {"accessKey": "newAccount"},
                  ADMIN).code == R.SUCCESS
    assert send(controller, "fresh", ("newAccount", "newSecret1")).remark.endswith(
        "No acl config for newAccount")
    answer = signed(controller, RC.DELETE_ACL_CONFIG, {"accessKey": "newAccount"}, ADMIN)
    assert answer.code == R.DELETE_ACL_CONFIG_FAILED
    path = str(home / "conf" / "plain_acl.yml")
    answer = signed(controller, RC.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                    {"globalWhiteAddrs": "127.0.0.*", "aclFileFullPath": path}, ADMIN)
    assert answer.code == R.SUCCESS, answer.remark
    assert call(controller, RC.GET_ALL_TOPIC_CONFIG, peer=PEER).code == R.SUCCESS
    answer = signed(controller, RC.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                    {"globalWhiteAddrs": "1.1.1.1", "aclFileFullPath": "/etc/passwd"}, ADMIN)
    assert answer.code == R.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED


def test_admin_reports(controller, home):
    version = signed(controller, RC.GET_BROKER_CLUSTER_ACL_INFO, {})
    assert version.code == R.SUCCESS
    assert json.loads(version.ext_fields["version"]) == {"counter": 0, "timestamp": 0}
    path = str(home / "conf" / "plain_acl.yml")
    assert list(json.loads(version.ext_fields["allAclFileVersion"])) == [path]
    assert version.ext_fields["brokerName"] == "broker-a"
    config = signed(controller, RC.GET_BROKER_CLUSTER_ACL_CONFIG, {}, ADMIN)
    body = json.loads(config.body)
    assert body["globalWhiteAddrs"] == ["10.10.103.*"]
    assert body["plainAccessConfigs"][1] == {
        "accessKey": USER[0], "admin": False, "defaultGroupPerm": "SUB",
        "defaultTopicPerm": "DENY", "secretKey": USER[1], "topicPerms": ["allowed=PUB"]}


def test_missing_file_is_created_empty(tmp_path):
    home = tmp_path / "empty-home"
    controller = make_controller(tmp_path, aclEnable=True, rocketmqHome=str(home))
    assert (home / "conf" / "plain_acl.yml").exists()
    assert send(controller, "t").remark.endswith("No acl config for userAccount")


def test_vip_channel_is_checked_too(controller):
    vip = controller.dispatcher.excluding(RC.PULL_MESSAGE)
    request = RemotingCommand(int(RC.GET_ALL_TOPIC_CONFIG), opaque=1, ext_fields={})
    answer = decode_frame(vip.dispatch(request, RequestContext(None, PEER))[4:])
    assert answer.remark.endswith("No accessKey is configured")


def test_plain_validator_is_a_plugin(controller):
    assert find(IAccessValidatorFactory, "plain").name == "plain"
    assert verifyObject(IAccessValidator, controller.access_validator)


@pytest.mark.parametrize("text, error", [
    ("accounts: [{accessKey: x, secretKey: y}]", "longer than 6"),
    ("accounts: [", "plain_acl.yml: while parsing"),
    ("globalWhiteRemoteAddresses: [10.1.1.0/24]", "Netaddress examine"),
])
def test_a_bad_acl_stops_the_daemon_before_the_store(tmp_path, home, text, error):
    (home / "conf" / "plain_acl.yml").write_text(text)
    options = Options()
    options.parseOptions(["--aclEnable", "true", "--rocketmqHome", str(home),
                          "--storePathRootDir", str(tmp_path / "store")])
    with pytest.raises(SystemExit, match=error):
        makeService(options)
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("settings, error", [
    (["--rocketmqHome", ""], "needs rocketmqHome"),
    (["--aclValidator", "ldap"], "no IAccessValidatorFactory plugin named 'ldap'"),
])
def test_acl_settings_that_cannot_work_are_one_clear_error(tmp_path, home, settings, error):
    options = Options()
    options.parseOptions(["--aclEnable", "true", "--rocketmqHome", str(home),
                          "--storePathRootDir", str(tmp_path / "store"), *settings])
    with pytest.raises(SystemExit, match=error):
        makeService(options)
