"""``twistd rmq-local``'s settings: the two brokers' configurations and the values refused."""

import pytest
from twisted.logger import capturedLogs, formatEvent
from twisted.python import usage

from rmqproto.config import ConfigError
from rmqproto.services.local import Options, broker_configs, makeService

JAVA_BROKER_CONF = """\
brokerClusterName = ClusterX
brokerName = broker-x
brokerId = 3
brokerRole = ASYNC_MASTER
listenPort = 20911
namesrvAddr = 10.0.0.1:9876
storePathRootDir = /data/store
mappedFileSizeCommitLog = 16777216
maxMessageSize = 1024
someFutureSetting = 1
"""


def local_values(tmp_path, *args):
    options = Options()
    options.parseOptions(["--dataDir", str(tmp_path), *args])
    return options.values


def test_the_slave_listens_ten_ports_above_the_master(tmp_path):
    master, slave = broker_configs(local_values(tmp_path))
    assert (master["listenPort"], master["haListenPort"], master["brokerId"]) == (10911, 10912, 0)
    assert (slave["listenPort"], slave["haListenPort"], slave["brokerId"]) == (10921, 10922, 1)
    assert slave["brokerRole"] == "SLAVE" and master["brokerRole"] == "SYNC_MASTER"


def test_ports_the_slave_or_an_ha_port_cannot_have_are_refused(tmp_path):
    with pytest.raises(usage.UsageError, match="listenPort: 65525: must be from 0 to 65524"):
        local_values(tmp_path, "--listenPort", "65525")
    assert broker_configs(local_values(tmp_path, "--listenPort", "65524"))[1]["haListenPort"] == 65535


def configs_of_file(tmp_path, text):
    """The two brokers' settings for ``-c broker.conf`` holding ``text``, and what was logged."""
    conf = tmp_path / "broker.conf"
    conf.write_text(text)
    options = Options()
    options.parseOptions(["--dataDir", str(tmp_path), "-c", str(conf)])
    with capturedLogs() as events:
        configs = broker_configs(options.values, {name: options.file_values[name]
                                                  for name in options.unknown})
    return configs, [formatEvent(e) for e in events]


def test_a_broker_conf_given_with_c_applies_to_both_brokers(tmp_path):
    configs, logged = configs_of_file(tmp_path, JAVA_BROKER_CONF)
    for config, port, role in zip(configs, (20911, 20921), ("ASYNC_MASTER", "SLAVE")):
        assert (config["brokerClusterName"], config["brokerName"]) == ("ClusterX", "broker-x")
        assert (config["listenPort"], config["brokerRole"]) == (port, role)
        assert config["mappedFileSizeCommitLog"] == 16777216 and config["maxMessageSize"] == 1024
        assert config["storePathRootDir"].startswith(str(tmp_path))
        assert config["namesrvAddr"] == "127.0.0.1:9876"
    assert [c["brokerId"] for c in configs] == [0, 1]
    assert logged == [
        "not using brokerId=3: rmq-local sets it for each broker (0 for the master, 1 for the slave)",
        "not using namesrvAddr=10.0.0.1:9876: rmq-local sets it for each broker "
        "(the cluster's own NameServer, brokerIP1:namesrvPort)",
        "not using storePathRootDir=/data/store: rmq-local sets it for each broker "
        "(dataDir/master and dataDir/slave)",
        "not using someFutureSetting: no broker or rmq-local setting has that name"]


def test_a_shared_broker_conf_is_held_to_the_broker_rules(tmp_path):
    with pytest.raises(ConfigError, match="maxIndexNum: 1: must be at least 2"):
        configs_of_file(tmp_path, "maxIndexNum=1\n")
    with pytest.raises(usage.UsageError, match="brokerRole: 'SLAVE' is not one of"):
        configs_of_file(tmp_path, "brokerRole=SLAVE\n")


def test_the_help_and_the_start_say_which_defaults_it_runs_on(tmp_path):
    assert "~/rmqproto-local" in str(Options())
    options = Options()
    options.parseOptions(["--namesrvPort", "19876", "--dataDir", str(tmp_path)])
    with capturedLogs() as events:
        makeService(options)  # builds, does not listen
    assert formatEvent(events[0]) == ("rmq-local runs on the defaults listenPort=10911; set "
                                      "them with -c or --namesrvPort, --listenPort, --dataDir")


def test_each_service_of_rmq_local_logs_under_its_name():
    """Timers, thread results and connection events of a service carry its name."""
    from twisted.internet.protocol import Factory, Protocol
    from twisted.internet.testing import MemoryReactorClock, StringTransport
    from twisted.logger import Logger, LogPublisher

    from rmqproto.services.named import NamedReactor, name_log_lines

    publisher, events = LogPublisher(), []
    name_log_lines(("master", "slave"), publisher)
    publisher.addObserver(events.append)
    log = Logger(namespace="rmqproto.x", observer=publisher)

    class Logs(Protocol):
        def dataReceived(self, data):
            log.info("read {data}", data=data)

    memory = MemoryReactorClock()
    master, slave = NamedReactor(memory, "master"), NamedReactor(memory, "slave")
    master.callLater(1, log.info, "tick")
    slave.listenTCP(0, Factory.forProtocol(Logs))
    connection = memory.tcpServers[0][1].buildProtocol(None)
    connection.makeConnection(StringTransport())
    log.info("no service's")
    memory.advance(1)
    connection.dataReceived(b"x")
    master.call(log.info, "started")
    assert [(e.get("log_system"), e["log_format"]) for e in events] == [
        (None, "no service's"), ("master rmqproto.x#info", "tick"),
        ("slave rmqproto.x#info", "read {data}"), ("master rmqproto.x#info", "started")]
