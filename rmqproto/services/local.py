"""``twistd rmq-local``: a whole local cluster in one process (``docs/ha.md``).

A NameServer, a SYNC_MASTER and its slave, with all their data under one directory
(``dataDir``): ``namesrv/`` (kvConfig.json), ``master/`` and ``slave/`` (the brokers'
``storePathRootDir``). The master listens on ``listenPort`` (HA on listenPort + 1), the
slave on listenPort + 10 (HA on listenPort + 11); both register with the NameServer on
``namesrvPort``. A real client needs only ``namesrvAddr=127.0.0.1:9876``.
"""

import os

from twisted.application import service
from twisted.internet import defer
from twisted.logger import Logger

from rmqproto import eventloop
from rmqproto.broker.config import SETTINGS as BROKER_SETTINGS, apply_startup_rules
from rmqproto.config import ConfigError, Setting, Settings, in_range, load_properties
from rmqproto.metrics.endpoint import METRICS_PORT, MetricsEndpoint, metrics_setting
from rmqproto.services import namesrv
from rmqproto.services.broker import BrokerService

__all__ = ["SETTINGS", "SLAVE_PORT_OFFSET", "LocalCluster", "Options", "makeService"]

log = Logger()

#: The slave's listenPort is the master's plus this.
SLAVE_PORT_OFFSET = 10

SETTINGS = Settings(
    Setting("dataDir", os.path.join(os.path.expanduser("~"), "rmqproto-local"),
            "directory holding the NameServer's and both brokers' data"),
    Setting("namesrvPort", 9876, "port of the NameServer", check=in_range(0, 65535)),
    Setting("listenPort", 10911, "port of the master (the slave uses listenPort + 10)",
            check=in_range(0, 65534 - SLAVE_PORT_OFFSET)),
    Setting("bindAddress", "127.0.0.1", "address every service listens on"),
    Setting("brokerIP1", "127.0.0.1", "address the brokers advertise to clients and each other"),
    Setting("brokerClusterName", "DefaultCluster", "cluster of the two brokers"),
    Setting("brokerName", "broker-a", "broker name shared by the master and its slave"),
    Setting("brokerRole", "SYNC_MASTER", "role of the master: SYNC_MASTER or ASYNC_MASTER",
            choices=("SYNC_MASTER", "ASYNC_MASTER")),
    Setting("flushDiskType", "ASYNC_FLUSH", "ASYNC_FLUSH or SYNC_FLUSH, for both brokers",
            choices=("ASYNC_FLUSH", "SYNC_FLUSH")),
    Setting("slaveReadEnable", False, "let consumers read from the slave"),
    Setting("brokerConfig", "", "a Java broker.conf applied to both brokers first (optional)"),
    metrics_setting(METRICS_PORT),  # all three services' figures (docs/observability.md)
)


def broker_configs(local):
    """The master's and the slave's settings (Java property names) for the local settings
    ``local``; raises :class:`~rmqproto.config.ConfigError` on a bad ``brokerConfig``."""
    shared_file = load_properties(local["brokerConfig"]) if local["brokerConfig"] else {}
    namesrv_addr = "%s:%d" % (local["brokerIP1"], local["namesrvPort"])
    common = {name: local[name] for name in (
        "bindAddress", "brokerIP1", "brokerClusterName", "brokerName", "flushDiskType",
        "slaveReadEnable")}
    common.update(brokerIP2=local["brokerIP1"], namesrvAddr=namesrv_addr)
    roles = (("master", local["brokerRole"], 0, local["listenPort"]),
             ("slave", "SLAVE", 1, local["listenPort"] + SLAVE_PORT_OFFSET))
    configs = []
    for directory, role, broker_id, port in roles:
        values, unknown = BROKER_SETTINGS.resolve(shared_file)
        for name in unknown:
            log.warn("ignoring unknown broker setting {name}", name=name)
        values.update(common, brokerRole=role, brokerId=broker_id, listenPort=port, metricsPort=0,
                      storePathRootDir=os.path.join(local["dataDir"], directory))
        # one broker.conf serves both: each broker keeps its own commit log
        values["storePathCommitLog"] = os.path.join(values["storePathRootDir"], "commitlog")
        configs.append(apply_startup_rules(values))
    return configs


def namesrv_config(local):
    """The NameServer's settings for the local settings ``local``."""
    values, _ = namesrv.SETTINGS.resolve()
    home = os.path.join(local["dataDir"], "namesrv")
    values.update(listenPort=local["namesrvPort"], bindAddress=local["bindAddress"],
                  kvConfigPath=os.path.join(home, "kvConfig.json"),
                  configStorePath=os.path.join(home, "namesrv.properties"))
    return values


class LocalCluster(service.MultiService):
    """NameServer, master and slave as children, started in that order (stopped in reverse)."""

    def __init__(self, local, reactor=None):
        super().__init__()
        self.local = local
        self.namesrv = namesrv.NameServerService(namesrv_config(local), reactor)
        master_config, slave_config = broker_configs(local)
        self.master = BrokerService(master_config, reactor)
        self.slave = BrokerService(slave_config, reactor)
        for child in (self.namesrv, self.master, self.slave):
            child.setServiceParent(self)
        self.metrics = MetricsEndpoint(
            local["metricsPort"], [collector for child in (self.namesrv, self.master, self.slave)
                                   for collector in child.metric_collectors()],
            local["bindAddress"], reactor)
        self.metrics.attach(self)

    @defer.inlineCallbacks
    def stopService(self):
        """Stop the metrics, the slave, then the master (each unregisters), then the
        NameServer."""
        service.Service.stopService(self)
        if self.metrics.service is not None:
            yield self.metrics.service.stopService()
        for child in (self.slave, self.master, self.namesrv):
            yield child.stopService()

    def startService(self):
        super().startService()
        log.info("local cluster up: NameServer {ip}:{ns}, {role} {ip}:{master}, SLAVE {ip}:{slave}, "
                 "data under {data}", ip=self.local["brokerIP1"], ns=self.namesrv.port,
                 role=self.local["brokerRole"], master=self.master.port, slave=self.slave.port,
                 data=self.local["dataDir"])
        if self.local["metricsPort"]:
            log.info("metrics at http://{ip}:{port}/metrics", ip=self.local["bindAddress"],
                     port=self.local["metricsPort"])


Options = SETTINGS.options(
    "[options]", "Run a local RocketMQ compatible cluster in one process: a NameServer on 9876, "
    "a SYNC_MASTER on 10911 and its slave on 10921, data under ~/rmqproto-local, metrics "
    "at :5557/metrics.")


def makeService(options):
    """Build the local cluster from parsed :data:`Options` (the twistd entry point)."""
    eventloop.install_default()  # unless twistd -r chose a reactor
    for name in options.unknown:
        log.warn("ignoring unknown setting {name}", name=name)
    try:
        return LocalCluster(options.values)
    except ConfigError as exc:
        raise SystemExit(str(exc))
