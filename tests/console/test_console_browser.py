"""The console in a real headless Chromium: every view loads without an error in the
browser's console, a stopped slave's lag rises and its in-sync mark drops (and come back
when it returns), and a killed DLedger leader's successor shows within seconds."""

from rmqproto.client import Message
from rmqproto.client.blocking import Producer
from support.dledgergroup import Group
from support.hapair import HAPair
from support.processes import free_port, wait_for_port

VIEWS = ("cluster", "topics", "groups", "ha", "dledger")


def _send(namesrv_addr, count, topic="ConsoleTopic"):
    with Producer(namesrvAddr=namesrv_addr, producerGroup="console_group") as producer:
        for i in range(count):
            producer.send(Message(topic, b"x" * 1024, keys="k%d" % i))


def test_views_and_a_slave_stopped_and_started_again(tmp_path, console_browser):
    port = free_port()
    pair = HAPair(tmp_path, "ours", consolePort=port)
    try:
        wait_for_port(port, 30, pair.master)
        pair.wait_in_sync()
        _send(pair.namesrv_addr, 20)
        page = console_browser("http://127.0.0.1:%d/" % port)
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
