"""``twistd rmq-master``: the broker service (Java ``BrokerStartup``, ``BrokerController``).

Settings use Java's names (``BrokerConfig``, ``NettyServerConfig``, ``MessageStoreConfig``),
so an existing ``broker.conf`` is passed unchanged with ``-c``; unknown names are logged and
ignored. A SIGTERM stops it gracefully: unregister from the NameServers, persist the
metadata, shut the store down (flush, remove ``abort``).
"""

from twisted.application import internet, service
from twisted.internet import defer, task
from twisted.logger import Logger

from rmqproto import eventloop
from rmqproto.acl import AclError
from rmqproto.broker.config import SETTINGS, apply_startup_rules, vip_port
from rmqproto.codec.codes import RequestCode, RequestCodeV5
from rmqproto.broker.controller import BrokerController
from rmqproto.broker.dledgerbroker import DLedgerRoles, MemberDispatcher
from rmqproto.broker.dledgerconfig import is_dledger
from rmqproto.config import ConfigError
from rmqproto.ha import ha_service
from rmqproto.ha.tls import tls_options
from rmqproto.ha.master import HAMasterService
from rmqproto.metrics.broker import BrokerCollector, broker_labels
from rmqproto.metrics.endpoint import MetricsEndpoint
from rmqproto.metrics.ha import HAMasterCollector
from rmqproto.metrics.remoting import RemotingCollector
from rmqproto.pluggable import PluginNotFoundError
from rmqproto.remoting import RemotingFactory
from rmqproto.remoting.address import parse_address
from rmqproto.remoting.factory import write_budget
from rmqproto.remoting.serversettings import server_setting
from rmqproto.remoting.tls import server_policy
from rmqproto.services.startup import StartsCleanly, log_defaults
from rmqproto.store.mappedfile import StoreError

__all__ = ["BrokerService", "Options", "makeService"]

log = Logger()


class BrokerService(StartsCleanly, service.MultiService):
    """A :class:`~rmqproto.broker.controller.BrokerController` served on ``listenPort``."""

    def __init__(self, config, reactor=None, store=None, config_file=None):
        super().__init__()
        if reactor is None:
            from twisted.internet import reactor
        self.config = config
        self.reactor = reactor
        self.controller = BrokerController(config, reactor, store, config_file)
        # both ports: one limit of unsent bytes, one TLS policy, one backlog (NettyServerConfig)
        budget, tls = write_budget(config), server_policy(config)
        backlog = server_setting(config, "serverSocketBacklog")
        self.factory = RemotingFactory(self.controller.dispatcher, reactor, budget=budget, tls=tls)
        self.listener = internet.TCPServer(config["listenPort"], self.factory, backlog=backlog,
                                           interface=config["bindAddress"], reactor=reactor)
        self.listener.setServiceParent(self)
        #: The VIP ("fast") channel on listenPort - 2: every request but the pulls (``registerProcessor``).
        #: Java slaves fetch their metadata there.
        self.vip_factory = RemotingFactory(
            self.controller.dispatcher.excluding(
                RequestCode.PULL_MESSAGE, RequestCodeV5.LITE_PULL_MESSAGE), reactor,
            budget=budget, tls=tls)
        self.vip_listener = internet.TCPServer(vip_port(config), self.vip_factory, backlog=backlog,
                                               interface=config["bindAddress"], reactor=reactor)
        self.vip_listener.setServiceParent(self)
        #: Replication: the master's HA listener or the slave's HA client (``docs/ha.md``);
        #: on a DLedger commit log, the role changes and the member's RPC port instead
        #: (docs/broker-dledger.md)
        self.dledger_factory = None
        if is_dledger(config):
            self._serve_dledger(backlog)
        else:
            self.ha = ha_service(self.controller)
        #: ``/metrics`` on ``metricsPort`` (docs/observability.md)
        self.metrics = MetricsEndpoint(config["metricsPort"], self.metric_collectors(),
                                       config["bindAddress"], reactor)
        self.metrics.attach(self)
        self.idle = task.LoopingCall(self.close_idle_connections)
        self.idle.clock = reactor
        self.started = None

    def _serve_dledger(self, backlog):
        """The role changes, and the RPC of the store's DLedger member served on its own
        address of ``dLegerPeers`` (Java's ``DLedgerRpcNettyService``, in the broker's process)."""
        if not hasattr(self.controller.store, "dledger"):
            raise ConfigError("enableDLegerCommitLog=true: the store (storeType=%s) has no DLedger "
                              "commit log" % (self.config.get("storeType") or "default"))
        self.ha = DLedgerRoles(self.controller)
        self.dledger_factory = RemotingFactory(MemberDispatcher(self.controller.store),
                                               self.reactor)
        member = self.controller.store.dledger_config
        _, port = parse_address(member.peer_map[member.selfId])
        self.dledger_listener = internet.TCPServer(
            port, self.dledger_factory, backlog=backlog, interface=self.config["bindAddress"],
            reactor=self.reactor)
        self.dledger_listener.setServiceParent(self)

    def claim(self):
        """The HA port and the store's lock, taken before the reactor runs."""
        self.ha.privilegedStartService()
        lock = getattr(self.controller.store, "lock", None)
        if lock is not None:
            lock()

    def advice(self, error):
        if isinstance(error, StoreError):
            return ("give this broker its own storePathRootDir (-c broker.conf or "
                    "--storePathRootDir)")
        if self.dledger_factory is not None and error.port == self.dledger_listener.args[0]:
            return ("give this broker's member (dLegerSelfId=%s) its own port in dLegerPeers"
                    % self.config["dLegerSelfId"])
        return ("give this broker its own listenPort (-c broker.conf or --listenPort); it "
                "listens on listenPort - 2, listenPort and, as a master, listenPort + 1")

    def startService(self):
        super().startService()
        self.idle.start(1.0, now=False)
        try:
            self.started = self.controller.start()
        except StoreError as exc:  # e.g. another broker holds the store's lock
            raise SystemExit("the broker cannot start: %s" % exc) from None
        self.ha.startService()

    def stopService(self):
        if self.idle.running:
            self.idle.stop()
        d = defer.maybeDeferred(self.ha.stopService)
        d.addBoth(lambda _: self.controller.shutdown())

        def close(_):
            for connection in self._connections():
                connection.close()
            return super(BrokerService, self).stopService()

        return d.addBoth(close)

    def _connections(self):
        factories = [self.factory, self.vip_factory, self.dledger_factory]
        return [c for f in factories if f is not None for c in f.connections]

    def metric_collectors(self):
        """The collectors of this broker's figures (docs/observability.md)."""
        labels = (["cluster", "broker", "brokerId"], broker_labels(self.config))
        collectors = [BrokerCollector(self.controller),
                      RemotingCollector([("remoting", self.factory), ("vip", self.vip_factory)],
                                        self.controller.dispatcher, labels)]
        if isinstance(self.ha, HAMasterService):
            collectors.append(HAMasterCollector(self.ha))

        return collectors

    @property
    def port(self):
        """The port actually listened on."""
        return self.listener._port.getHost().port

    def close_idle_connections(self):
        limit = self.reactor.seconds() - self.config["serverChannelMaxIdleTimeSeconds"]
        for connection in self._connections():
            if connection.last_activity < limit:
                log.info("closing idle connection {peer}", peer=connection.peer)
                connection.close()


#: What --help says of the defaults every broker starts with (Java's).
DEFAULTS_HELP = (
    "Defaults are Java's: ports 10911 (listenPort), 10909 and 10912, the store under ~/store "
    "(storePathRootDir); a second broker on one machine needs its own listenPort and "
    "storePathRootDir.")

Options = SETTINGS.options(
    "[options]", "Run an Apache RocketMQ compatible broker (ASYNC_MASTER by default); -c "
    "takes an existing broker.conf. " + DEFAULTS_HELP)


def makeService(options):
    """Build the broker from parsed :data:`Options` (the twistd entry point)."""
    eventloop.install_default()  # unless twistd -r chose a reactor
    for name in options.unknown:
        log.warn("ignoring unknown broker setting {name}", name=name)
    log_defaults("The broker", options.values, options.given, ("listenPort", "storePathRootDir"),
                 "set them with -c broker.conf or --listenPort, --storePathRootDir")
    config = dict(options.values)
    try:
        apply_startup_rules(config)
        if config["haTlsEnable"]:
            tls_options(config)  # a missing or bad certificate file: one line, not a traceback
        return BrokerService(config, config_file=options["configFile"])
    except (ConfigError, AclError, PluginNotFoundError) as exc:  # one clear line
        raise SystemExit(str(exc))
