"""The settings of a broker on a DLedger commit log: Java's ``broker-n0.conf`` unchanged,
``BrokerStartup``'s rules, the member's own settings, and ``rmq-local --dledger``'s three."""

import pytest
from twisted.python import usage

from rmqproto.broker.config import apply_startup_rules
from rmqproto.config import ConfigError
from rmqproto.services.broker import Options
from rmqproto.services.local import Options as LocalOptions, broker_configs
from rmqproto.store.dledger import dledger_config

#: RocketMQ 4.9.7's distribution/conf/dledger/broker-n0.conf
BROKER_N0_CONF = """\
brokerClusterName = RaftCluster
brokerName=RaftNode00
listenPort=30911
namesrvAddr=127.0.0.1:9876
storePathRootDir=/tmp/rmqstore/node00
storePathCommitLog=/tmp/rmqstore/node00/commitlog
enableDLegerCommitLog=true
dLegerGroup=RaftNode00
dLegerPeers=n0-127.0.0.1:40911;n1-127.0.0.1:40912;n2-127.0.0.1:40913
## must be unique
dLegerSelfId=n0
sendMessageThreadPoolNums=16
"""


def options_of(tmp_path, text, *args):
    conf = tmp_path / "broker-n0.conf"
    conf.write_text(text)
    options = Options()
    options.parseOptions(["-c", str(conf), *args])
    return options


def test_java_broker_n0_conf_is_read_unchanged(tmp_path):
    options = options_of(tmp_path, BROKER_N0_CONF)
    assert options.unknown == []
    config = apply_startup_rules(dict(options.values))
    assert config["enableDLegerCommitLog"] is True
    assert (config["dLegerGroup"], config["dLegerSelfId"]) == ("RaftNode00", "n0")
    assert config["brokerId"] == -1            # BrokerStartup: the role changes set it
    member = dledger_config(config)
    assert (member.group, member.selfId, member.storeBaseDir) == (
        "RaftNode00", "n0", "/tmp/rmqstore/node00")
    assert member.peer_map == {"n0": "127.0.0.1:40911", "n1": "127.0.0.1:40912",
                               "n2": "127.0.0.1:40913"}
    # DLedgerCommitLog's constructor: the commit log's segment size, retention + 1 hour
    assert (member.mappedFileSizeForEntryData, member.fileReservedHours) == (1 << 30, 73)
    assert (member.deleteWhen, member.diskSpaceRatioToCheckExpired) == ("04", 0.75)
    assert member.dataStorePath is None and member.isEnableBatchPush is False


@pytest.mark.parametrize("line", ["enableBatchPush=true", "isEnableBatchPush=true"])
def test_batch_push_under_the_setter_or_the_field_name(tmp_path, line):
    config = dict(options_of(tmp_path, BROKER_N0_CONF + line + "\npreferredLeaderId=n1\n"
                             "storePathDLedgerCommitLog=/data/dl\n").values)
    member = dledger_config(apply_startup_rules(config))
    assert member.isEnableBatchPush is True
    assert (member.preferredLeaderIds, member.dataStorePath) == ("n1", "/data/dl")


@pytest.mark.parametrize("change, error", [
    (("dLegerSelfId=n0", "dLegerSelfId=node0"), "dLegerSelfId: 'node0' must be a letter and a number"),
    (("dLegerSelfId=n0", "dLegerSelfId=n7"), "selfId 'n7' is not in peers"),
    (("dLegerGroup=RaftNode00", "dLegerGroup="), "dLegerGroup must be set"),
    (("n1-127.0.0.1:40912", "n1127.0.0.1:40912"), "is not <id>-<host:port>"),
])
def test_dledger_settings_that_cannot_work_stop_the_start(tmp_path, change, error):
    options = options_of(tmp_path, BROKER_N0_CONF.replace(*change),
                         "--storePathRootDir", str(tmp_path / "store"))
    from rmqproto.services.broker import makeService
    with pytest.raises(SystemExit, match=error):
        makeService(options)
    assert not (tmp_path / "store").exists()


def test_a_classic_broker_keeps_its_id(tmp_path):
    config = dict(options_of(tmp_path, "brokerRole=SLAVE\nbrokerId=2\n").values)
    assert apply_startup_rules(config)["brokerId"] == 2
    with pytest.raises(ConfigError, match="Slave's brokerId must be > 0"):
        apply_startup_rules(dict(config, brokerId=0))


def local_values(tmp_path, *args):
    options = LocalOptions()
    options.parseOptions(["--dataDir", str(tmp_path), "--dledger", *args])
    assert options["dledger"]
    return options.values


def test_rmq_local_dledger_makes_three_members_ten_ports_apart(tmp_path):
    configs = broker_configs(local_values(tmp_path), dledger=True)
    peers = "n0-127.0.0.1:10913;n1-127.0.0.1:10923;n2-127.0.0.1:10933"
    for i, config in enumerate(configs):
        assert config["listenPort"] == 10911 + 10 * i and config["brokerId"] == -1
        assert (config["dLegerSelfId"], config["dLegerPeers"]) == ("n%d" % i, peers)
        assert (config["dLegerGroup"], config["brokerName"]) == ("broker-a", "broker-a")
        assert config["storePathRootDir"] == str(tmp_path / ("n%d" % i))
        assert config["enableDLegerCommitLog"] is True


def test_rmq_local_dledger_refuses_a_port_its_last_member_cannot_have(tmp_path):
    with pytest.raises(ConfigError, match="the last member listens on listenPort \\+ 22"):
        broker_configs(local_values(tmp_path, "--listenPort", "65520"), dledger=True)


def test_rmq_local_sets_the_members_itself(tmp_path):
    values = local_values(tmp_path)
    configs = broker_configs(values, {"dLegerSelfId": "n9", "dLegerPeers": "n9-x:1"},
                             dledger=True)
    assert [c["dLegerSelfId"] for c in configs] == ["n0", "n1", "n2"]


def test_rmq_local_help_names_the_flag():
    assert "--dledger" in str(LocalOptions())
    with pytest.raises(usage.UsageError):
        LocalOptions().parseOptions(["--dledger=yes"])
