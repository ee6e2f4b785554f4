"""``twistd rmq-nameserver``: the NameServer service (Java ``NamesrvStartup``, ``NamesrvController``).

Settings use Java's names (``NamesrvConfig`` / ``NettyServerConfig``), so a Java
``namesrv.properties`` can be passed unchanged with ``-c``. Two settings have no Java
property (Java hard-codes them): ``scanNotActiveBrokerInterval`` (the RocketMQ 5 name)
and ``brokerChannelExpiredTime`` (named after Java's constant).
"""

import os

from twisted.application import internet, service
from twisted.internet import task
from twisted.logger import Logger

from rmqproto import eventloop
from rmqproto.config import Setting, Settings, at_least, dump_properties, in_range
from rmqproto.console.web import ConsoleEndpoint, console_setting
from rmqproto.metrics.endpoint import MetricsEndpoint, metrics_setting
from rmqproto.metrics.remoting import NameServerCollector, RemotingCollector
from rmqproto.namesrv.kvconfig import KVConfig
from rmqproto.namesrv.processor import NameServerProcessor
from rmqproto.namesrv.routeinfo import BROKER_CHANNEL_EXPIRED_TIME, RouteInfoManager
from rmqproto.remoting import RemotingFactory, RequestDispatcher
from rmqproto.remoting.factory import write_budget
from rmqproto.remoting.serversettings import SERVER_SETTINGS, server_setting
from rmqproto.remoting.tls import TLS_SERVER_SETTINGS, server_policy
from rmqproto.services.startup import StartsCleanly, log_defaults

__all__ = ["SETTINGS", "NameServerService", "Options", "makeService"]

log = Logger()

_HOME = os.path.expanduser("~")

SETTINGS = Settings(
    Setting("listenPort", 9876, "port of the NameServer", check=in_range(0, 65535)),
    Setting("bindAddress", "0.0.0.0", "address to listen on"),
    Setting("kvConfigPath", os.path.join(_HOME, "namesrv", "kvConfig.json"),
            "file keeping the KV config (Java's kvConfig.json)"),
    Setting("configStorePath", os.path.join(_HOME, "namesrv", "namesrv.properties"),
            "file where UPDATE_NAMESRV_CONFIG persists the settings"),
    Setting("orderMessageEnable", False, "add ORDER_TOPIC_CONFIG entries to topic routes"),
    Setting("scanNotActiveBrokerInterval", 10_000, "milliseconds between scans for dead brokers",
            check=at_least(1)),
    Setting("brokerChannelExpiredTime", BROKER_CHANNEL_EXPIRED_TIME,
            "milliseconds without a heartbeat after which a broker is dropped"),
    Setting("serverChannelMaxIdleTimeSeconds", 120,
            "seconds after which an idle connection is closed"),
    *SERVER_SETTINGS.by_name.values(),
    *TLS_SERVER_SETTINGS.by_name.values(),
    metrics_setting(),  # docs/observability.md
    console_setting(),  # docs/observability.md
)


class NameServerService(StartsCleanly, service.MultiService):
    """The route registry served over remoting, with broker expiry and KV persistence."""

    def __init__(self, config, reactor=None):
        super().__init__()
        if reactor is None:
            from twisted.internet import reactor
        self.config = config
        self.reactor = reactor
        self.route_info = RouteInfoManager(expired_time=config["brokerChannelExpiredTime"])
        self.kv_config = KVConfig()
        self.dispatcher = RequestDispatcher()
        self.processor = NameServerProcessor(
            self.route_info, self.kv_config, config, SETTINGS, reactor,
            persist_kv=lambda: self.kv_config.persist(config["kvConfigPath"]),
            persist_config=self._persist_config)
        self.processor.register_with(self.dispatcher)
        self.factory = RemotingFactory(self.dispatcher, reactor, budget=write_budget(config),
                                       tls=server_policy(config))
        self.factory.connection_lost_hooks.append(self._connection_lost)
        self.listener = internet.TCPServer(
            config["listenPort"], self.factory, interface=config["bindAddress"],
            backlog=server_setting(config, "serverSocketBacklog"), reactor=reactor)
        self.listener.setServiceParent(self)
        #: ``/metrics`` on ``metricsPort`` (docs/observability.md)
        self.metrics = MetricsEndpoint(config["metricsPort"], self.metric_collectors(),
                                       config["bindAddress"], reactor)
        self.metrics.attach(self)
        #: the web console on ``consolePort`` (docs/observability.md)
        self.console = ConsoleEndpoint(config["consolePort"], reactor, config["bindAddress"],
                                       namesrv_addr=lambda: "127.0.0.1:%d" % self.port)
        self.console.attach(self)
        self.scan = task.LoopingCall(self.scan_not_active_brokers)
        self.scan.clock = reactor
        self.idle = task.LoopingCall(self.close_idle_connections)
        self.idle.clock = reactor

    def startService(self):
        self.kv_config.load(self.config["kvConfigPath"])
        super().startService()
        self.scan.start(self.config["scanNotActiveBrokerInterval"] / 1000.0, now=False)
        self.idle.start(1.0, now=False)
        log.info("The Name Server boot success. listenPort={port}", port=self.config["listenPort"])

    def stopService(self):
        for loop in (self.scan, self.idle):
            if loop.running:
                loop.stop()
        for connection in list(self.factory.connections):
            connection.close()
        log.info("The Name Server shut down")
        return super().stopService()

    def advice(self, error):
        return "give this NameServer a free listenPort (-c namesrv.properties or --listenPort)"

    def metric_collectors(self):
        """The collectors of this NameServer's figures (docs/observability.md)."""
        port = str(self.config["listenPort"])
        return [NameServerCollector(self.route_info, port),
                RemotingCollector([("remoting", self.factory)], self.dispatcher,
                                  (["namesrv"], [port]))]

    @property
    def port(self):
        """The port actually listened on (useful with ``listenPort=0``)."""
        return self.listener._port.getHost().port

    def scan_not_active_brokers(self):
        now = int(self.reactor.seconds() * 1000)
        for addr, connection in self.route_info.scan_not_active_brokers(now):
            log.warn("The broker channel expired, {addr} {ms}ms", addr=addr,
                     ms=self.route_info.expired_time)
            if connection is not None:
                connection.close()

    def close_idle_connections(self):
        limit = self.reactor.seconds() - self.config["serverChannelMaxIdleTimeSeconds"]
        for connection in list(self.factory.connections):
            if connection.last_activity < limit:
                log.info("closing idle connection {peer}", peer=connection.peer)
                connection.close()

    def _connection_lost(self, connection, reason):
        removed = self.route_info.on_connection_closed(connection.peer, connection)
        if removed is not None:
            log.info("the broker's channel destroyed, {addr}, clean it's data structure at once",
                     addr=removed)

    def _persist_config(self):
        path = self.config["configStorePath"]
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w", encoding="latin-1") as fh:
            fh.write(dump_properties(self.config))


Options = SETTINGS.options(
    "[options]", "Run an Apache RocketMQ compatible NameServer. Defaults are Java's: port 9876, "
    "KV config under ~/namesrv; a second NameServer on one machine needs its own listenPort.")


def makeService(options):
    """Build the NameServer from parsed :data:`Options` (the twistd entry point)."""
    eventloop.install_default()  # unless twistd -r chose a reactor
    for name in options.unknown:
        log.warn("ignoring unknown NameServer setting {name}", name=name)
    log_defaults("The NameServer", options.values, options.given, ("listenPort", "kvConfigPath"),
                 "set them with -c namesrv.properties or --listenPort, --kvConfigPath")
    return NameServerService(options.values)
