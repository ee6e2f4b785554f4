"""ACL against the real thing: the same ``plain_acl.yml`` and the same steps, run by the Java
4.9.8 client with ``AclClientRPCHook`` and by ``mqadmin`` (credentials from
``conf/tools.yml``), against ``twistd rmq-master`` and against a Java 4.9.7 broker, both with
``aclEnable=true``: every step is allowed or refused alike, with the same reason. The file is
also edited by ``mqadmin updateAclConfig`` and by hand (hot reload), the ACL admin requests
(signed here) get the same answers but where docs/security.md says we differ, and the C++
client signs with session credentials."""

import json
import re
import threading

import pytest
import yaml

from rmqproto.acl.signature import signed_fields
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from support import cppclient
from support.daemons import start_nameserver
from support.interop import java_available
from support.javapeers import JavaPeers, broker_port
from support.syncclient import call, wait_until
from brokerkit import start_broker

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

ADMIN = ("adminAccount", "adminSecret1")
USER = ("userAccount", "userSecret1")
RELOADED = ("reloadAccount", "reloadSecret1")
ACL = {
    "globalWhiteRemoteAddresses": ["10.10.103.*"],
    "accounts": [
        {"accessKey": ADMIN[0], "secretKey": ADMIN[1], "admin": True},
        {"accessKey": USER[0], "secretKey": USER[1], "admin": False, "defaultTopicPerm": "DENY",
         "defaultGroupPerm": "SUB",
         "topicPerms": ["topicPub=PUB", "topicSub=SUB", "topicBoth=PUB|SUB", "topicDeny=DENY"],
         "groupPerms": ["groupDeny=DENY", "groupOk=SUB"]},
        {"accessKey": "whiteAccount", "secretKey": "whiteSecret1",
         "whiteRemoteAddress": "127.0.0.*"},
    ],
}

# label, action, access key, secret key, security token, topic[, group]
STEPS = """
pub-allowed send userAccount userSecret1 - topicPub
pub-sub-only send userAccount userSecret1 - topicSub
pub-both send userAccount userSecret1 - topicBoth
pub-denied send userAccount userSecret1 - topicDeny
pub-default-deny send userAccount userSecret1 - topicOther
bad-secret send userAccount wrongSecret1 - topicPub
unknown-key send unknownAccount unknownSecret - topicPub
no-credentials send - - - topicPub
admin-anything send adminAccount adminSecret1 - topicDeny
admin-creates send adminAccount adminSecret1 - topicSub
white-address send whiteAccount wrongSecret1 - topicDeny
with-token send userAccount userSecret1 a-security-token topicPub
mqadmin-made send mqadminAccount mqadminSecret1 - topicBoth
mqadmin-made-default send mqadminAccount mqadminSecret1 - topicPub
hot-reloaded send reloadAccount reloadSecret1 - topicBoth
pull-allowed pull userAccount userSecret1 - topicBoth groupOk
pull-group-denied pull userAccount userSecret1 - topicBoth groupDeny
pull-topic-denied pull userAccount userSecret1 - topicPub groupOk
pull-default-group pull userAccount userSecret1 - topicSub groupOther
pull-no-credentials pull - - - topicBoth groupOk
"""

#: What both brokers must answer: "OK" or the reason of a refusal.
EXPECTED = {
    "pub-allowed": "OK", "pub-sub-only": "No default permission for topic:topicSub",
    "pub-both": "OK", "pub-denied": "No default permission for topic:topicDeny",
    "pub-default-deny": "No default permission for topic:topicOther",
    "bad-secret": "Check signature failed for accessKey=userAccount",
    "unknown-key": "No acl config for unknownAccount",
    "no-credentials": "No accessKey is configured", "admin-anything": "OK", "admin-creates": "OK",
    "white-address": "OK", "with-token": "OK", "mqadmin-made": "OK",
    "mqadmin-made-default": "No default permission for topic:topicPub", "hot-reloaded": "OK",
    "pull-allowed": "OK", "pull-group-denied": "No default permission for group:groupDeny",
    "pull-topic-denied": "No default permission for topic:topicPub", "pull-default-group": "OK",
    "pull-no-credentials": "No accessKey is configured",
}

_REASON = re.compile(r"(\d+) \S*AclException: (.*?)(?:, org\.apache\.rocketmq\S*\(\S+\))?$")


def reason(text):
    """``"<code> <message>"`` of a refusal (Java adds the top stack frame to its remark)."""
    for line in text.splitlines():
        found = _REASON.search(line.replace("CODE: ", "").replace("  DESC:", ""))
        if found:
            return "%s %s" % found.groups()
    return None


def probe_outcomes(peers, namesrv_addr, workdir):
    steps = workdir / "acl-steps.txt"
    steps.write_text(STEPS)
    result = peers.run_client("rmqproto.peers.AclProbe", namesrv_addr, "broker-a", steps,
                              timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    outcomes = {}
    for line in result.stdout.splitlines():
        label, _, answer = line.partition(" ")
        if label in EXPECTED:
            found = reason(answer) if answer.startswith("REFUSED") else None
            outcomes[label] = "OK" if answer == "OK" else (found or answer)
    return outcomes


def mqadmin(peers, credentials, *args):
    peers.home.joinpath("conf", "tools.yml").write_text(
        "accessKey: %s\nsecretKey: %s\n" % credentials)
    return peers.mqadmin(*args)


def signed_call(broker_addr, credentials, code, fields=None):
    return call(broker_addr, code, signed_fields(fields or {}, b"", *credentials))


def run_scenario(peers, namesrv_addr, broker_addr, acl_path, workdir):
    """Every step against one broker; ``{step: outcome}``."""
    outcomes = {}
    out = mqadmin(peers, USER, "updateTopic", "-b", broker_addr, "-t", "userMadeTopic",
                  "-n", namesrv_addr)
    outcomes["mqadmin-user-update-topic"] = reason(out) or out
    out = mqadmin(peers, ADMIN, "updateAclConfig", "-b", broker_addr, "-a", "mqadminAccount",
                  "-s", "mqadminSecret1", "-t", "topicBoth=PUB", "-n", namesrv_addr)
    outcomes["mqadmin-update-acl"] = "OK" if "success" in out else out
    # edited by hand: the broker notices (Java within 5 s, ours within 0.5 s)
    data = yaml.safe_load(acl_path.read_text())
    data["accounts"].append({"accessKey": RELOADED[0], "secretKey": RELOADED[1],
                             "topicPerms": ["topicBoth=PUB"]})
    acl_path.write_text(yaml.safe_dump(data))
    wait_until(lambda: signed_call(broker_addr, RELOADED, RC.GET_BROKER_CLUSTER_ACL_INFO)
               .code == R.SUCCESS, timeout=20)
    outcomes.update(probe_outcomes(peers, namesrv_addr, workdir))
    outcomes.update(admin_requests(broker_addr))
    return outcomes


def admin_requests(broker_addr):
    """The ACL admin requests, signed here: ``{step: (code, remark or reason)}``."""
    def answer(credentials, code, fields=None):
        response = signed_call(broker_addr, credentials, code, fields)
        return response.code, reason(" ".join((str(response.code), response.remark or ""))) \
            or response.remark, response
    report = {}
    report["info-by-user"] = answer(USER, RC.GET_BROKER_CLUSTER_ACL_INFO)[:2]
    report["delete"] = answer(ADMIN, RC.DELETE_ACL_CONFIG, {"accessKey": "mqadminAccount"})[:2]
    report["delete-unknown"] = answer(ADMIN, RC.DELETE_ACL_CONFIG,
                                      {"accessKey": "mqadminAccount"})[:2]
    report["update-short-key"] = answer(ADMIN, RC.UPDATE_AND_CREATE_ACL_CONFIG,
                                        {"accessKey": "short", "secretKey": "longSecret1"})[:2]
    report["update-bad-perm"] = answer(ADMIN, RC.UPDATE_AND_CREATE_ACL_CONFIG, {
        "accessKey": "someAccount", "secretKey": "someSecret1", "topicPerms": "t=ALL"})[:2]
    code, _, response = answer(ADMIN, RC.GET_BROKER_CLUSTER_ACL_CONFIG)
    body = json.loads(response.body)
    report["config"] = (code, body["globalWhiteAddrs"],
                        sorted(body["plainAccessConfigs"], key=lambda a: a["accessKey"]))
    code, _, response = answer(ADMIN, RC.GET_BROKER_CLUSTER_ACL_INFO)
    # each file's version (Java's "version" field follows the default file's only once its
    # watcher has reloaded it, up to 5 s later)
    report["version-counter"] = (code, [version["counter"] for version in json.loads(
        response.ext_fields["allAclFileVersion"]).values()])
    # where we differ on purpose: only an admin may edit the ACL
    report["update-by-user"] = answer(USER, RC.UPDATE_AND_CREATE_ACL_CONFIG, {
        "accessKey": "userMadeAccount", "secretKey": "userMadeSecret1", "admin": "true"})[:2]
    return report


def write_acl(home):
    path = home / "conf" / "plain_acl.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(ACL))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The steps against our broker and, side by side, against the Java broker: each side
    with Java peers of its own (``mqadmin`` reads its credentials from its home)."""
    workdir = tmp_path_factory.mktemp("acl-java")
    peers, our_peers = JavaPeers(workdir / "java"), JavaPeers(workdir / "ours")
    daemons = []
    try:
        namesrv, namesrv_addr = start_nameserver(workdir)
        java_namesrv, java_namesrv_addr = start_nameserver(workdir / "java")
        daemons += [namesrv, java_namesrv]
        java_acl, java_port = write_acl(peers.home), broker_port()
        java_side = {}

        def java_steps():
            try:
                peers.broker("acl", listenPort=java_port, namesrvAddr=java_namesrv_addr,
                             aclEnable="true")
                java_side["outcomes"] = run_scenario(
                    peers, java_namesrv_addr, "127.0.0.1:%d" % java_port, java_acl,
                    workdir / "java")
            except BaseException as exc:  # raised once joined
                java_side["failure"] = exc
        java_run = threading.Thread(target=java_steps)
        java_run.start()
        try:
            our_acl = write_acl(workdir / "ours-home")
            broker, broker_addr = start_broker(workdir, namesrv_addr, aclEnable="true",
                                               rocketmqHome=workdir / "ours-home")
            daemons.append(broker)
            ours = run_scenario(our_peers, namesrv_addr, broker_addr, our_acl, workdir / "ours")
            cpp = (cppclient.run(namesrv_addr, "topicBoth", 5, "groupOk", timeout=60,
                                 credentials=USER) if cppclient.available() else None)
        finally:
            java_run.join()
        if "failure" in java_side:
            raise java_side["failure"]
        yield {"ours": ours, "java": java_side["outcomes"], "cpp": cpp}
    finally:
        peers.stop_all()
        our_peers.stop_all()
        for daemon in reversed(daemons):
            daemon.stop()


def test_java_client_allowed_and_refused_as_by_java(runs):
    for label, expected in EXPECTED.items():
        refused = expected != "OK"
        assert runs["java"][label] == ("1 " + expected if refused else "OK"), label
        assert runs["ours"][label] == runs["java"][label], label


def test_mqadmin_with_credentials_as_by_java(runs):
    assert runs["java"]["mqadmin-update-acl"] == runs["ours"]["mqadmin-update-acl"] == "OK"
    assert runs["java"]["mqadmin-user-update-topic"] == runs["ours"]["mqadmin-user-update-topic"] \
        == "1 Need admin permission for request code=17, but accessKey=userAccount is not"


def test_acl_admin_requests_as_by_java(runs):
    ours, java = runs["ours"], runs["java"]
    for label in ("info-by-user", "delete", "delete-unknown", "update-short-key",
                  "update-bad-perm", "config", "version-counter"):
        assert ours[label] == java[label], label
    assert ours["delete"] == (R.SUCCESS, None)
    assert ours["delete-unknown"] == (R.DELETE_ACL_CONFIG_FAILED, "The accesskey[mqadminAccount] "
                                      "corresponding to accessConfig has been deleted failed.")
    assert ours["update-short-key"][0] == R.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
    assert "length should longer than 6" in ours["update-short-key"][1]
    assert "The expected permissions are" in ours["update-bad-perm"][1]
    assert ours["version-counter"] == (R.SUCCESS, [2])  # mqadmin's update, then the delete
    assert [a["accessKey"] for a in ours["config"][2]] == [
        ADMIN[0], RELOADED[0], USER[0], "whiteAccount"]
    # docs/security.md: 4.9.7 lets any signed account edit the ACL; we want the admin flag
    assert java["update-by-user"] == (R.SUCCESS, None)
    assert ours["update-by-user"] == (R.SYSTEM_ERROR, "1 Need admin permission for request "
                                      "code=50, but accessKey=userAccount is not")


@pytest.mark.skipif(not cppclient.available(), reason="the rocketmq C++ client is not installed")
def test_cpp_client_with_session_credentials(runs):
    assert runs["cpp"] == {"sent": 5, "received": 5}
