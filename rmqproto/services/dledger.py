"""``twistd rmq-dledger``: one member of a DLedger group (docs/dledger.md, "Running a group").

The options are those of DLedger's ``ServerCommand`` (``--group``, ``--id``, ``--peers``,
``--store-base-dir``, ``--peer-push-throttle-point``, ``--peer-push-quotas``,
``--preferred-leader-id``), plus ``--enable-batch-push``; ``-c`` reads a properties file
with ``DLedgerConfig``'s property names (``heartBeatTimeIntervalMs=…``), which the options
override. The member listens on its own address in ``--peers``; ``--metricsPort`` (0: off)
serves its Prometheus metrics (docs/observability.md).
"""

from twisted.application import internet, service
from twisted.python import usage

from rmqproto import eventloop
from rmqproto.config.javaprops import load_properties
from rmqproto.console.web import ConsoleEndpoint
from rmqproto.dledger.config import DLedgerConfig, DLedgerConfigError
from rmqproto.dledger.server import DLedgerServer
from rmqproto.metrics.dledger import DLedgerCollector
from rmqproto.metrics.endpoint import MetricsEndpoint
from rmqproto.metrics.remoting import RemotingCollector
from rmqproto.remoting import RemotingFactory
from rmqproto.remoting.address import parse_address
from rmqproto.services.startup import StartsCleanly

__all__ = ["DLedgerService", "Options", "makeService", "config_of"]

#: option name → ``DLedgerConfig`` property, for the options DLedger's ``ServerCommand`` has
_OPTIONS = (("group", "g", "group", "Group of this server"),
            ("id", "i", "selfId", "Self id of this server"),
            ("peers", "p", "peers", 'Peers of the group: "n0-host:port;n1-host:port;..."'),
            ("store-base-dir", "s", "storeBaseDir", "The base store dir of this server"),
            ("peer-push-throttle-point", None, "peerPushThrottlePoint",
             "Bytes a follower may lag before pushes to it are throttled"),
            ("peer-push-quotas", None, "peerPushQuota", "Bytes a second pushed to a lagging follower"),
            ("preferred-leader-id", None, "preferredLeaderIds", "Preferred leader ids, ';'-separated"))


class Options(usage.Options):
    synopsis = "[options]"
    longdesc = ("Run one member of a DLedger (Raft) group, wire- and disk-compatible with "
                "DLedger 0.3.1.2. Defaults are DLedgerConfig's: group 'default', id n0, "
                "peers n0-localhost:20911, store under /tmp/dledgerstore.")
    optParameters = [["config-file", "c", None,
                      "properties file with DLedgerConfig property names, read first"],
                     ["metricsPort", None, 0,
                      "port serving Prometheus metrics at /metrics (0: off)", int],
                     ["consolePort", None, 0, "port serving the web console (0: off)", int]]
    optParameters += [[name, short, None, "%s [default: %s]" % (doc, getattr(DLedgerConfig, prop))]
                      for name, short, prop, doc in _OPTIONS]
    optFlags = [["enable-batch-push", None, "push entries to followers in batches "
                                            "(isEnableBatchPush)"]]

    def postOptions(self):
        try:
            self.config = config_of(self)
        except (DLedgerConfigError, ValueError, OSError) as exc:
            raise usage.UsageError(str(exc)) from None


def config_of(options):
    """The ``DLedgerConfig`` of a file (if given) and the options."""
    values = load_properties(options["config-file"]) if options["config-file"] else {}
    for name, _, prop, _ in _OPTIONS:
        if options[name] is not None:
            values[prop] = options[name]
    if options["enable-batch-push"]:
        values["isEnableBatchPush"] = "true"
    return DLedgerConfig(**_typed(values))


def _typed(values):
    """Properties text as ``DLedgerConfig``'s field types; unknown names are refused."""
    defaults = {name: getattr(DLedgerConfig, name, None) for name in DLedgerConfig.names()}
    typed = {}
    for name, text in values.items():
        if name not in defaults:
            raise DLedgerConfigError("unknown DLedger setting %r" % name)
        default = defaults[name]
        if isinstance(default, bool):
            typed[name] = str(text).strip().lower() == "true"
        elif isinstance(default, float):
            typed[name] = float(str(text).strip())
        elif isinstance(default, int):
            typed[name] = int(str(text).strip())
        else:
            typed[name] = str(text).strip()
    return typed


class DLedgerService(StartsCleanly, service.MultiService):
    """A :class:`DLedgerServer` served on its own address of ``peers``."""

    def __init__(self, config, reactor=None, metrics_port=0, console_port=0):
        super().__init__()
        if reactor is None:
            from twisted.internet import reactor
        self.server = DLedgerServer(config, reactor)
        self.factory = RemotingFactory(self.server.dispatcher, reactor)
        host, port = parse_address(self.server.address)
        self.listener = internet.TCPServer(port, self.factory, interface=_interface(host),
                                           reactor=reactor)
        self.listener.setServiceParent(self)
        member = (["group", "id"], [config.group, config.selfId])
        self.metrics = MetricsEndpoint(
            metrics_port, [DLedgerCollector(self.server),
                           RemotingCollector([("remoting", self.factory)], self.server.dispatcher,
                                             member)],
            _interface(host), reactor)
        self.metrics.attach(self)
        self.console = ConsoleEndpoint(console_port, reactor, _interface(host),
                                       dledger_groups={config.group: config.peers},
                                       local_members=[self.server])
        self.console.attach(self)

    def advice(self, error):
        return ("give this member its own address in --peers (its entry %s=%s)"
                % (self.server.config.selfId, self.server.address))

    def startService(self):
        super().startService()
        self.server.start()

    def stopService(self):
        d = super().stopService()
        self.server.stop()
        return d

    @property
    def port(self):
        return self.listener._port.getHost().port


def _interface(host):
    """Listen on the peer address's host when it is an IP, else on every interface."""
    return host if host.replace(".", "").isdigit() else ""


def makeService(options):
    eventloop.install_default()
    return DLedgerService(options.config, metrics_port=options["metricsPort"],
                          console_port=options["consolePort"])
