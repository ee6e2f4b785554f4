"""The console in a real headless Chromium: every view loads without an error in the
browser's console, a stopped slave's lag rises and its in-sync mark drops (and come back
when it returns), a killed DLedger leader's successor shows within seconds, and only an
ACL admin creates topics and resets offsets."""

import json
import urllib.error
import urllib.request

import yaml

from rmqproto.acl.signature import signed_fields
from rmqproto.client import Message
from rmqproto.client.blocking import Producer
from rmqproto.codec.codes import RequestCode as RC
from rmqproto.codec.headers import UpdateConsumerOffsetRequestHeader
from support.daemons import Daemon, start_nameserver
from support.dledgergroup import Group
from support.hapair import HAPair
from support.javapeers import broker_port
from support.processes import free_port, wait_for_port
from support.syncclient import call

VIEWS = ("cluster", "topics", "groups", "ha", "dledger")


def _send(namesrv_addr, count, topic="ConsoleTopic"):
    with Producer(namesrvAddr=namesrv_addr, producerGroup="console_group") as producer:
        for i in range(count):
            producer.send(Message(topic, b"x" * 1024, keys="k%d" % i))


def _post(url, body):
    try:
        return urllib.request.urlopen(urllib.request.Request(
            url, json.dumps(body).encode(), {"Content-Type": "application/json"}), timeout=10)
    except urllib.error.HTTPError as error:
        return error


def test_views_and_a_slave_stopped_and_started_again(tmp_path, console_browser):
    port = free_port()
    pair = HAPair(tmp_path, "ours", consolePort=port)
    try:
        wait_for_port(port, 30, pair.master)
        pair.wait_in_sync()
        _send(pair.namesrv_addr, 20)
        page = console_browser("http://127.0.0.1:%d/" % port)
        assert not page.page.is_visible("#signin")  # ACL is off: read-only
        refused = _post("http://127.0.0.1:%d/api/topics" % port, {"topic": "Nope"})
        assert refused.code == 403 and "read-only" in json.load(refused)["error"]
        for view in VIEWS:
            page.show(view)
            page.screenshot("console-" + view)
        page.show("topics")
        page.wait(lambda: page.page.query_selector('tr[data-topic="ConsoleTopic"]') is not None)
        page.show("ha")
        slave = '#ha tr[data-slave="%s"]' % pair.slave_addr
        page.wait(lambda: page.attribute(slave, "data-in-sync") == "true"
                  and page.attribute(slave, "data-lag") == "0")

        pair.stop_slave()
        _send(pair.namesrv_addr, 20)
        page.wait(lambda: page.attribute(slave, "data-in-sync") == "false"
                  and int(page.attribute(slave, "data-lag") or 0) >= 20 * 1024)
        page.screenshot("console-ha-slave-stopped")

        pair.start_slave()
        page.wait(lambda: page.attribute(slave, "data-in-sync") == "true"
                  and page.attribute(slave, "data-lag") == "0")
        assert page.errors == []
    finally:
        pair.stop()


def test_a_new_dledger_leader_shows_within_seconds(tmp_path, console_browser):
    group = Group(tmp_path, console=True)
    try:
        group.start_all()
        leader = group.wait_leader()
        watcher = next(m for m in group.ids if m != leader)
        page = console_browser("http://127.0.0.1:%d/" % group.console_ports[watcher])
        page.show("dledger")
        panel = '#dledger div[data-group="%s"]' % group.group
        page.wait(lambda: page.attribute(panel, "data-leader") == leader)
        term = int(page.attribute(panel, "data-term"))
        page.screenshot("console-dledger")

        group.kill(leader)
        successor = group.wait_leader(among=[m for m in group.ids if m != leader])
        page.wait(lambda: page.attribute(panel, "data-leader") == successor
                  and int(page.attribute(panel, "data-term")) > term, timeout=20)
        gone = '%s tr[data-member="%s"]' % (panel, leader)
        page.wait(lambda: page.attribute(gone, "data-role") == "UNREACHABLE")
        assert page.errors == []
    finally:
        group.stop()


ADMIN = ("consoleAdmin", "adminSecret1")
READER = ("consoleReader", "readerSecret1")


def _acl_master(tmp_path, console_port):
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(yaml.safe_dump({"accounts": [
        {"accessKey": ADMIN[0], "secretKey": ADMIN[1], "admin": True},
        {"accessKey": READER[0], "secretKey": READER[1], "defaultTopicPerm": "SUB",
         "defaultGroupPerm": "SUB"}]}))
    namesrv, namesrv_addr = start_nameserver(tmp_path)
    port = broker_port()
    master = Daemon(tmp_path, "rmq-master", "--listenPort", port, "--bindAddress", "127.0.0.1",
                    "--brokerIP1", "127.0.0.1", "--namesrvAddr", namesrv_addr,
                    "--storePathRootDir", tmp_path / "store", "--mappedFileSizeCommitLog", 1 << 20,
                    "--aclEnable", "true", "--rocketmqHome", home, "--consolePort", console_port,
                    "--consoleAccessKey", READER[0], "--consoleSecretKey", READER[1], port=port)
    return namesrv, master, "127.0.0.1:%d" % port


def _sign_in(page, credentials):
    page.page.fill("#access-key", credentials[0])
    page.page.fill("#secret-key", credentials[1])
    page.page.click("#signin button")


def test_an_acl_admin_creates_a_topic_and_resets_offsets(tmp_path, console_browser):
    port = free_port()
    namesrv, master, master_addr = _acl_master(tmp_path, port)
    try:
        wait_for_port(port, 30, master)
        page = console_browser("http://127.0.0.1:%d/" % port)
        page.show("topics")
        page.wait(lambda: page.page.is_visible("#signin"))
        _sign_in(page, READER)
        page.wait(lambda: "not an admin" in page.page.inner_text("#who"))
        assert not page.page.is_visible("#create-topic")

        _sign_in(page, ADMIN)
        page.wait(lambda: page.page.is_visible("#create-topic"))
        page.page.fill("#new-topic", "ConsoleMade")
        page.page.fill("#new-topic-queues", "1")
        page.page.click("#create-topic button")
        page.wait(lambda: "created ConsoleMade" in page.page.inner_text("#create-topic .result"))
        page.wait(lambda: page.page.query_selector('tr[data-topic="ConsoleMade"]') is not None)

        # the group has consumed (Java refuses to reset a group without offsets)
        committed = UpdateConsumerOffsetRequestHeader(
            consumer_group="console_reset", topic="ConsoleMade", queue_id=0, commit_offset=0)
        made = call(master_addr, RC.UPDATE_CONSUMER_OFFSET,
                    signed_fields(committed.to_ext_fields(), b"", *ADMIN))
        assert made.code == 0, made.remark
        page.show("groups")
        page.page.fill("#reset-group", "console_reset")
        page.page.fill("#reset-topic", "ConsoleMade")
        page.page.click("#reset-offset button")
        page.wait(lambda: "1 queue(s) reset" in page.page.inner_text("#reset-offset .result"))
        page.screenshot("console-admin")
        assert page.errors == []
    finally:
        master.stop()
        namesrv.stop()
