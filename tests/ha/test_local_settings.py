"""``twistd rmq-local``'s settings: the two brokers' configurations and the values refused."""

import pytest
from twisted.python import usage

from rmqproto.config import ConfigError
from rmqproto.services.local import Options, broker_configs


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


def test_a_shared_broker_conf_is_held_to_the_broker_rules(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("maxIndexNum=1\n")
    with pytest.raises(ConfigError, match="maxIndexNum: 1: must be at least 2"):
        broker_configs(local_values(tmp_path, "--brokerConfig", str(conf)))
