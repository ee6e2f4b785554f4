"""``twistd rmq-local``: a whole local cluster in one process (``docs/ha.md``).

A NameServer, a SYNC_MASTER and its slave, with all their data under one directory
(``dataDir``): ``namesrv/`` (kvConfig.json), ``master/`` and ``slave/`` (the brokers'
``storePathRootDir``). The master listens on ``listenPort`` (HA on listenPort + 1), the
slave on listenPort + 10 (HA on listenPort + 11); both register with the NameServer on
``namesrvPort``. A real client needs only ``namesrvAddr=127.0.0.1:9876``.

``-c FILE`` takes the cluster's own settings and any broker setting (an existing
``broker.conf``): the broker settings apply to both brokers, ``brokerClusterName``,
``brokerName``, ``brokerRole`` (the master's) and ``listenPort`` (the master's) are the
cluster's own, and what the cluster sets for each broker itself (:data:`PER_BROKER`) is
not used, with a warning for each such value.
"""

import os

from twisted.application import service
from twisted.internet import defer
from twisted.logger import Logger

from rmqproto import eventloop
from rmqproto.broker.config import SETTINGS as BROKER_SETTINGS, apply_startup_rules
from rmqproto.config import ConfigError, Setting, Settings, in_range
from rmqproto.console.web import CONSOLE_PORT, broker_console, console_setting
from rmqproto.metrics.endpoint import METRICS_PORT, MetricsEndpoint, metrics_setting
from rmqproto.services import namesrv
from rmqproto.services.broker import BrokerService
from rmqproto.services.named import NamedReactor, name_log_lines
from rmqproto.services.startup import StartsCleanly, log_defaults
from rmqproto.store.mappedfile import StoreError

__all__ = ["PER_BROKER", "SETTINGS", "SLAVE_PORT_OFFSET", "LocalCluster", "Options", "makeService"]

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
    metrics_setting(METRICS_PORT),  # all three services' figures (docs/observability.md)
    console_setting(CONSOLE_PORT),  # the cluster's web console (docs/observability.md)
)

#: Broker settings the cluster sets for each broker itself, and how.
PER_BROKER = {
    "brokerId": "0 for the master, 1 for the slave",
    "haListenPort": "listenPort + 1 of each broker",
    "haMasterAddress": "the slave finds its master through the NameServer",
    "namesrvAddr": "the cluster's own NameServer, brokerIP1:namesrvPort",
    "brokerIP2": "brokerIP1",
    "storePathRootDir": "dataDir/master and dataDir/slave",
    "storePathCommitLog": "the commitlog folder of each broker's store",
    "metricsPort": "one endpoint serves the three services, on rmq-local's own metricsPort",
    "consolePort": "one console shows the cluster, on rmq-local's own consolePort",
}


def broker_configs(local, shared=None):
    """The master's and the slave's settings (Java property names) for the local settings
    ``local`` and ``shared``, broker properties (text) for both; warns of each property
    that is not used, raises :class:`~rmqproto.config.ConfigError` on a value the broker
    refuses."""
    shared = dict(shared or {})
    for name in sorted(set(shared) & set(PER_BROKER)):
        log.warn("not using {name}={value}: rmq-local sets it for each broker ({how})",
                 name=name, value=shared.pop(name), how=PER_BROKER[name])
    values, unknown = BROKER_SETTINGS.resolve(shared)
    for name in unknown:
        log.warn("not using {name}: no broker or rmq-local setting has that name", name=name)
    values.update({name: local[name] for name in (
        "bindAddress", "brokerIP1", "brokerClusterName", "brokerName", "flushDiskType",
        "slaveReadEnable")})
    values.update(brokerIP2=local["brokerIP1"],
                  namesrvAddr="%s:%d" % (local["brokerIP1"], local["namesrvPort"]))
    roles = (("master", local["brokerRole"], 0, local["listenPort"]),
             ("slave", "SLAVE", 1, local["listenPort"] + SLAVE_PORT_OFFSET))
    configs = []
    for directory, role, broker_id, port in roles:
        root = os.path.join(local["dataDir"], directory)
        configs.append(apply_startup_rules(dict(
            values, brokerRole=role, brokerId=broker_id, listenPort=port, metricsPort=0,
            consolePort=0,
            storePathRootDir=root,
            storePathCommitLog=os.path.join(root, "commitlog"))))
    return configs


def namesrv_config(local):
    """The NameServer's settings for the local settings ``local``."""
    values, _ = namesrv.SETTINGS.resolve()
    home = os.path.join(local["dataDir"], "namesrv")
    values.update(listenPort=local["namesrvPort"], bindAddress=local["bindAddress"],
                  kvConfigPath=os.path.join(home, "kvConfig.json"),
                  configStorePath=os.path.join(home, "namesrv.properties"))
    return values


class LocalCluster(StartsCleanly, service.MultiService):
    """NameServer, master and slave as children, started in that order (stopped in reverse),
    each logging under its name (:mod:`rmqproto.services.named`); ``shared``: broker
    properties for both brokers (:func:`broker_configs`)."""

    def __init__(self, local, reactor=None, shared=None):
        super().__init__()
        if reactor is None:
            from twisted.internet import reactor
        self.local = local
        self.namesrv = namesrv.NameServerService(namesrv_config(local),
                                                 NamedReactor(reactor, "namesrv"))
        master_config, slave_config = broker_configs(local, shared)
        self.master = BrokerService(master_config, NamedReactor(reactor, "master"))
        self.slave = BrokerService(slave_config, NamedReactor(reactor, "slave"))
        for child in (self.namesrv, self.master, self.slave):
            child.setServiceParent(self)
        self.metrics = MetricsEndpoint(
            local["metricsPort"], [collector for child in (self.namesrv, self.master, self.slave)
                                   for collector in child.metric_collectors()],
            local["bindAddress"], reactor)
        self.metrics.attach(self)
        self.console = broker_console(
            dict(master_config, consolePort=local["consolePort"]), self.master.controller,
            reactor, lambda: "%s:%d" % (local["brokerIP1"], self.namesrv.port))

    @defer.inlineCallbacks
    def stopService(self):
        """Stop the metrics, the slave, then the master (each unregisters), then the
        NameServer."""
        service.Service.stopService(self)
        if self.metrics.service is not None:
            yield self.metrics.service.stopService()
        if self.console.poller is not None:
            yield self.console.stopService()
        for child in (self.slave, self.master, self.namesrv):
            yield child.reactor.call(child.stopService)

    def advice(self, error):
        if isinstance(error, StoreError):
            return "give this cluster its own dataDir (-c or --dataDir)"
        if error.port == self.namesrv.config["listenPort"]:
            return "give this cluster a free namesrvPort (-c or --namesrvPort)"
        return ("give this cluster a free listenPort (-c or --listenPort): the master listens "
                "on listenPort - 2 to listenPort + 1, the slave on listenPort + 8 and + 10")

    def startService(self):
        service.Service.startService(self)
        for child in (self.namesrv, self.master, self.slave):
            child.reactor.call(child.startService)
        if self.metrics.service is not None:
            self.metrics.service.startService()
        if self.console.poller is not None:
            self.console.startService()
        log.info("local cluster up: NameServer {ip}:{ns}, {role} {ip}:{master}, SLAVE {ip}:{slave}, "
                 "data under {data}", ip=self.local["brokerIP1"], ns=self.namesrv.port,
                 role=self.local["brokerRole"], master=self.master.port, slave=self.slave.port,
                 data=self.local["dataDir"])
        if self.local["consolePort"]:
            log.info("console at http://{ip}:{port}/", ip=self.local["bindAddress"],
                     port=self.local["consolePort"])
        if self.local["metricsPort"]:
            log.info("metrics at http://{ip}:{port}/metrics", ip=self.local["bindAddress"],
                     port=self.local["metricsPort"])


Options = SETTINGS.options(
    "[options]", "Run a local RocketMQ compatible cluster in one process: a NameServer on 9876, "
    "a SYNC_MASTER on 10911 and its slave on 10921, data under ~/rmqproto-local. -c also takes "
    "any broker setting (an existing broker.conf), for both brokers; the settings rmq-local "
    "sets for each broker itself (brokerId, storePathRootDir, namesrvAddr, ...) are not used, "
    "with a warning for each. Metrics at :5557/metrics, the web console at :8082.")


def makeService(options):
    """Build the local cluster from parsed :data:`Options` (the twistd entry point)."""
    eventloop.install_default()  # unless twistd -r chose a reactor
    log_defaults("rmq-local", options.values, options.given,
                 ("namesrvPort", "listenPort", "dataDir"),
                 "set them with -c or --namesrvPort, --listenPort, --dataDir")
    shared = {name: options.file_values[name] for name in options.unknown}
    name_log_lines(("namesrv", "master", "slave"))
    try:
        return LocalCluster(options.values, shared=shared)
    except ConfigError as exc:
        raise SystemExit(str(exc))
