"""``twistd -n rmq-master`` as an operator runs it."""

import signal
import subprocess
import sys

import pytest
from twisted.python import usage

from rmqproto.broker.config import BROKER_SETTINGS, JAVA_ONLY_SETTINGS, SETTINGS
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.services.broker import Options, makeService
from rmqproto.store.config import STORE_SETTINGS
from support.daemons import start_nameserver
from support.syncclient import call, wait_until
from brokerkit import start_broker

JAVA_BROKER_CONF = """\
brokerClusterName = DefaultCluster
brokerName = broker-a
brokerId = 3
deleteWhen = 04
fileReservedTime = 48
brokerRole = ASYNC_MASTER
flushDiskType = SYNC_FLUSH
listenPort=20911
namesrvAddr=127.0.0.1:9876;127.0.0.1:9877
autoCreateTopicEnable=false
sendMessageThreadPoolNums=2
someFutureSetting=1
"""


def test_twistd_lists_the_plugin():
    out = subprocess.run([sys.executable, "-c", "from twisted.scripts.twistd import run; run()",
                          "--help"], capture_output=True, text=True).stdout
    assert "rmq-master" in out


def test_options_accept_a_java_broker_conf(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text(JAVA_BROKER_CONF)
    options = Options()
    options.parseOptions(["-c", str(conf), "--storePathRootDir", str(tmp_path / "store")])
    values = options.values
    assert (values["listenPort"], values["brokerId"], values["flushDiskType"]) == (20911, 3, "SYNC_FLUSH")
    assert values["autoCreateTopicEnable"] is False and values["fileReservedTime"] == 48
    assert options.unknown == ["someFutureSetting"]
    service = makeService(options)
    # BrokerStartup's rules: a master's id is 0, the HA port is listenPort + 1
    assert (service.config["brokerId"], service.config["haListenPort"]) == (0, 20912)
    for setting in SETTINGS.by_name:
        assert setting in str(options)
    assert set(SETTINGS.by_name) == (set(BROKER_SETTINGS.by_name) | set(STORE_SETTINGS.by_name)
                                     | set(JAVA_ONLY_SETTINGS.by_name))


def test_a_slave_needs_a_positive_id(tmp_path):
    options = Options()
    options.parseOptions(["--brokerRole", "SLAVE", "--storePathRootDir", str(tmp_path)])
    with pytest.raises(SystemExit, match="Slave's brokerId must be > 0"):
        makeService(options)


@pytest.mark.parametrize("line, error", [
    ("maxIndexNum=1", "maxIndexNum: 1: must be at least 2"),
    ("messageDelayLevel=1s 5k", "messageDelayLevel: '1s 5k': bad delay level '5k'"),
    ("shortPollingTimeMills=0", "shortPollingTimeMills: 0: must be at least 1"),
    ("listenPort=65535", "listenPort: 65535: must be from 0 to 65534"),  # the HA port is one more
    ("defaultTopicQueueNums=2147483647",
     "defaultTopicQueueNums: 2147483647: must be from 0 to 65536"),
])
def test_a_setting_that_cannot_work_stops_the_start_with_its_reason(tmp_path, line, error):
    conf = tmp_path / "broker.conf"
    conf.write_text("storePathRootDir=%s\n%s\n" % (tmp_path / "store", line))
    options = Options()
    with pytest.raises(usage.UsageError, match=error):
        options.parseOptions(["-c", str(conf)])
    assert not (tmp_path / "store").exists()


@pytest.fixture
def nameserver(tmp_path):
    daemon, address = start_nameserver(tmp_path)
    yield address
    daemon.stop()


def registered(namesrv_addr, topic="TBW102"):
    return call(namesrv_addr, RC.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}).code == R.SUCCESS


def test_registers_at_start_and_unregisters_on_sigterm(tmp_path, nameserver):
    broker, _ = start_broker(tmp_path, nameserver)
    wait_until(lambda: registered(nameserver), timeout=10)
    assert (tmp_path / "store" / "abort").exists()
    assert broker.stop() in (0, -signal.SIGTERM)
    assert not registered(nameserver)
    assert "unregisterBroker OK, NamesrvAddr: %s" % nameserver in broker.output()
    assert not (tmp_path / "store" / "abort").exists()  # a clean stop
    assert (tmp_path / "store" / "config" / "topics.json").exists()
    assert "shut down" in broker.output()


def test_kill_9_leaves_the_abort_file_and_a_restart_serves(tmp_path, nameserver):
    broker, address = start_broker(tmp_path, nameserver)
    wait_until(lambda: registered(nameserver), timeout=10)
    broker.stop(signal.SIGKILL)
    assert (tmp_path / "store" / "abort").exists()
    broker, address = start_broker(tmp_path, nameserver)
    try:
        answer = call(address, RC.GET_MAX_OFFSET, {"topic": "TBW102", "queueId": "0"})
        assert answer.code == R.SUCCESS
    finally:
        broker.stop()


def test_the_vip_channel_serves_everything_but_pulls(tmp_path, nameserver):
    """Java's fast remoting server on listenPort - 2, where Java slaves fetch metadata."""
    broker, address = start_broker(tmp_path, nameserver)
    host, port = address.rsplit(":", 1)
    vip = "%s:%d" % (host, int(port) - 2)
    try:
        assert call(vip, RC.GET_ALL_TOPIC_CONFIG).code == R.SUCCESS
        pull = call(vip, RC.PULL_MESSAGE, {
            "consumerGroup": "G", "topic": "TBW102", "queueId": "0", "queueOffset": "0",
            "maxMsgNums": "1", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0",
            "subVersion": "0"})
        assert pull.code == R.REQUEST_CODE_NOT_SUPPORTED
        assert call(address, RC.GET_ALL_TOPIC_CONFIG).code == R.SUCCESS
    finally:
        broker.stop()
