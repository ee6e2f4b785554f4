"""``twistd rmq-local``: a whole local cluster in one process (``docs/ha.md``,
``docs/broker-dledger.md``).

A NameServer, a SYNC_MASTER and its slave, with all their data under one directory
(``dataDir``): ``namesrv/`` (kvConfig.json), ``master/`` and ``slave/`` (the brokers'
``storePathRootDir``). The master listens on ``listenPort`` (HA on listenPort + 1), the
slave on listenPort + 10 (HA on listenPort + 11); both register with the NameServer on
``namesrvPort``. A real client needs only ``namesrvAddr=127.0.0.1:9876``.

With ``--dledger``, three brokers on a DLedger commit log instead (``enableDLegerCommitLog``):
members ``n0``, ``n1``, ``n2`` of the group ``brokerName``, data under ``n0/`` … ``n2/``,
broker *i* on listenPort + 10·i and its member's RPC on listenPort + 10·i + 2; they elect
the master among themselves.

``-c FILE`` takes the cluster's own settings and any broker setting (an existing
``broker.conf``): the broker settings apply to every broker, ``brokerClusterName``,
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
from rmqproto.metrics.endpoint import METRICS_PORT, MetricsEndpoint, metrics_setting
from rmqproto.services import namesrv
from rmqproto.services.broker import BrokerService
from rmqproto.services.named import NamedReactor, name_log_lines
from rmqproto.services.startup import StartsCleanly, log_defaults
from rmqproto.store.mappedfile import StoreError

__all__ = ["PER_BROKER", "SETTINGS", "SLAVE_PORT_OFFSET", "MEMBER_PORT_OFFSET", "DLEDGER_MEMBERS",
           "LocalCluster", "Options", "broker_configs", "broker_names", "makeService"]

log = Logger()

#: The slave's listenPort is the master's plus this (with --dledger: each broker's is the
#: previous one's plus this).
SLAVE_PORT_OFFSET = 10
#: With --dledger, a broker's DLedger member listens on the broker's listenPort plus this.
MEMBER_PORT_OFFSET = 2
#: With --dledger, the members of the group (and the names of the brokers).
DLEDGER_MEMBERS = ("n0", "n1", "n2")

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
    "enableDLegerCommitLog": "--dledger turns it on for three brokers",
    "dLegerGroup": "brokerName",
    "dLegerPeers": "n0, n1, n2 on listenPort + 2, + 12, + 22",
    "dLegerSelfId": "n0, n1, n2",
    "storePathDLedgerCommitLog": "the dledger-<id>/data folder of each broker's store",
}


def broker_names(dledger=False):
    """The brokers' names (their data folders and log prefixes)."""
    return DLEDGER_MEMBERS if dledger else ("master", "slave")


def broker_configs(local, shared=None, dledger=False):
    """The brokers' settings (Java property names) for the local settings ``local`` and
    ``shared``, broker properties (text) for all: the master's and the slave's, or with
    ``dledger`` those of the three members of :data:`DLEDGER_MEMBERS`. Warns of each
    property that is not used, raises :class:`~rmqproto.config.ConfigError` on a value the
    broker refuses."""
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
    port = local["listenPort"]
    if dledger:
        values.update(_dledger_values(local))
        roles = [(member, local["brokerRole"], 0, port + SLAVE_PORT_OFFSET * i,
                  dict(dLegerSelfId=member)) for i, member in enumerate(DLEDGER_MEMBERS)]
    else:
        roles = [("master", local["brokerRole"], 0, port, {}),
                 ("slave", "SLAVE", 1, port + SLAVE_PORT_OFFSET, {})]
    configs = []
    for directory, role, broker_id, port, own in roles:
        root = os.path.join(local["dataDir"], directory)
        configs.append(apply_startup_rules(dict(
            values, brokerRole=role, brokerId=broker_id, listenPort=port, metricsPort=0,
            storePathRootDir=root, storePathCommitLog=os.path.join(root, "commitlog"), **own)))
    return configs


def _dledger_values(local):
    """The settings the three DLedger brokers share: the group and its members' addresses."""
    last = local["listenPort"] + SLAVE_PORT_OFFSET * (len(DLEDGER_MEMBERS) - 1) + MEMBER_PORT_OFFSET
    if last > 65535:
        raise ConfigError("listenPort: %d is too high for --dledger: the last member listens on "
                          "listenPort + %d" % (local["listenPort"], last - local["listenPort"]))
    peers = ";".join("%s-%s:%d" % (member, local["brokerIP1"], local["listenPort"]
                                   + SLAVE_PORT_OFFSET * i + MEMBER_PORT_OFFSET)
                     for i, member in enumerate(DLEDGER_MEMBERS))
    return dict(enableDLegerCommitLog=True, dLegerGroup=local["brokerName"], dLegerPeers=peers)


def namesrv_config(local):
    """The NameServer's settings for the local settings ``local``."""
    values, _ = namesrv.SETTINGS.resolve()
    home = os.path.join(local["dataDir"], "namesrv")
    values.update(listenPort=local["namesrvPort"], bindAddress=local["bindAddress"],
                  kvConfigPath=os.path.join(home, "kvConfig.json"),
                  configStorePath=os.path.join(home, "namesrv.properties"))
    return values


class LocalCluster(StartsCleanly, service.MultiService):
    """The NameServer, then the brokers (master and slave, or with ``dledger`` the three
    members) as children, started in that order (stopped in reverse), each logging under its
    name (:mod:`rmqproto.services.named`); ``shared``: broker properties for every broker
    (:func:`broker_configs`). :attr:`brokers` maps each broker's name to its service."""

    def __init__(self, local, reactor=None, shared=None, dledger=False):
        super().__init__()
        if reactor is None:
            from twisted.internet import reactor
        self.local = local
        self.dledger = dledger
        self.namesrv = namesrv.NameServerService(namesrv_config(local),
                                                 NamedReactor(reactor, "namesrv"))
        self.brokers = {name: BrokerService(config, NamedReactor(reactor, name))
                        for name, config in zip(broker_names(dledger),
                                                broker_configs(local, shared, dledger))}
        self.master, self.slave = self.brokers.get("master"), self.brokers.get("slave")
        children = [self.namesrv, *self.brokers.values()]
        for child in children:
            child.setServiceParent(self)
        self.metrics = MetricsEndpoint(
            local["metricsPort"], [collector for child in children
                                   for collector in child.metric_collectors()],
            local["bindAddress"], reactor)
        self.metrics.attach(self)

    @defer.inlineCallbacks
    def stopService(self):
        """Stop the metrics, the brokers in reverse order (each unregisters), then the
        NameServer."""
        service.Service.stopService(self)
        if self.metrics.service is not None:
            yield self.metrics.service.stopService()
        for child in [*reversed(self.brokers.values()), self.namesrv]:
            yield child.reactor.call(child.stopService)

    def advice(self, error):
        if isinstance(error, StoreError):
            return "give this cluster its own dataDir (-c or --dataDir)"
        if error.port == self.namesrv.config["listenPort"]:
            return "give this cluster a free namesrvPort (-c or --namesrvPort)"
        if self.dledger:
            return ("give this cluster a free listenPort (-c or --listenPort): broker i listens "
                    "on listenPort + 10 i - 2 to listenPort + 10 i + 2, for i = 0, 1, 2")
        return ("give this cluster a free listenPort (-c or --listenPort): the master listens "
                "on listenPort - 2 to listenPort + 1, the slave on listenPort + 8 and + 10")

    def startService(self):
        service.Service.startService(self)
        for child in [self.namesrv, *self.brokers.values()]:
            child.reactor.call(child.startService)
        if self.metrics.service is not None:
            self.metrics.service.startService()
        ip = self.local["brokerIP1"]
        if self.dledger:
            brokers = ", ".join("%s %s:%d (DLedger %s)" % (
                name, ip, broker.port, broker.config["dLegerPeers"].split(";")[i].split("-", 1)[1])
                for i, (name, broker) in enumerate(self.brokers.items()))
        else:
            brokers = "%s %s:%d, SLAVE %s:%d" % (self.local["brokerRole"], ip, self.master.port,
                                                 ip, self.slave.port)
        log.info("local cluster up: NameServer {ip}:{ns}, {brokers}, data under {data}", ip=ip,
                 ns=self.namesrv.port, brokers=brokers, data=self.local["dataDir"])
        if self.local["metricsPort"]:
            log.info("metrics at http://{ip}:{port}/metrics", ip=self.local["bindAddress"],
                     port=self.local["metricsPort"])


class Options(SETTINGS.options(
        "[options]", "Run a local RocketMQ compatible cluster in one process: a NameServer on "
        "9876, a SYNC_MASTER on 10911 and its slave on 10921, data under ~/rmqproto-local "
        "(with --dledger: three brokers on a DLedger commit log on 10911, 10921 and 10931 that "
        "elect their master). -c also takes any broker setting (an existing broker.conf), for "
        "every broker; the settings rmq-local sets for each broker itself (brokerId, "
        "storePathRootDir, namesrvAddr, ...) are not used, with a warning for each. Metrics at "
        ":5557/metrics.")):
    optFlags = [["dledger", None, "three brokers on a DLedger commit log (members n0, n1, n2) "
                                  "instead of a master and its slave"]]


def makeService(options):
    """Build the local cluster from parsed :data:`Options` (the twistd entry point)."""
    eventloop.install_default()  # unless twistd -r chose a reactor
    log_defaults("rmq-local", options.values, options.given,
                 ("namesrvPort", "listenPort", "dataDir"),
                 "set them with -c or --namesrvPort, --listenPort, --dataDir")
    shared = {name: options.file_values[name] for name in options.unknown}
    dledger = bool(options["dledger"])
    name_log_lines(("namesrv",) + broker_names(dledger))
    try:
        return LocalCluster(options.values, shared=shared, dledger=dledger)
    except ConfigError as exc:
        raise SystemExit(str(exc))
