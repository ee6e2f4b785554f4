"""Brokers for tests: a controller on a fake clock and an in-memory store, and requests to it;
or our NameServer and broker as daemons, with the Java peers pointed at them."""

from twisted.internet import defer
from twisted.internet.task import Clock

from rmqproto.broker.config import SETTINGS, apply_startup_rules
from rmqproto.broker.controller import BrokerController
from rmqproto.codec.bodies.route import TopicRouteData
from rmqproto.codec.codes import RequestCode, ResponseCode
from rmqproto.codec.frame import RemotingCommand, decode_frame
from rmqproto.remoting import RequestContext
from support.daemons import Daemon, start_nameserver
from support.fakestore import FakeStore
from support.javapeers import JavaPeers, broker_port
from support.syncclient import call as remote_call, wait_until

NOW_MS = 1_700_000_000_000


def broker_config(tmp_path, **overrides):
    values, unknown = SETTINGS.resolve(dict(
        brokerName="broker-a", brokerIP1="10.0.0.1", brokerIP2="10.0.0.2", namesrvAddr="",
        storePathRootDir=str(tmp_path / "store")), overrides)
    assert not unknown
    return apply_startup_rules(values)


def make_controller(tmp_path, **overrides):
    clock = Clock()
    clock.advance(NOW_MS / 1000)
    controller = BrokerController(broker_config(tmp_path, **overrides), clock,
                                  store=FakeStore(clock))
    return controller


def call(controller, code, ext_fields=None, body=b"", peer="192.168.1.7:40000", version=409):
    """Dispatch one request; the decoded response (``None`` when nothing is answered)."""
    request = RemotingCommand(int(code), opaque=7, ext_fields=ext_fields, body=body, version=version)
    answer = controller.dispatcher.dispatch(request, RequestContext(None, peer))
    if isinstance(answer, defer.Deferred):
        results = []
        answer.addCallback(results.append)
        assert results, "the answer did not fire"
        answer = results[0]
    return None if answer is None else decode_frame(answer[4:])


def start_broker(workdir, namesrv_addr, *args, **settings):
    """``twistd -n rmq-master`` on a free port, small commit-log files, store under ``workdir``;
    returns ``(daemon, "127.0.0.1:port")``. A ``listenPort`` setting (a restart) is kept."""
    port = int(settings.pop("listenPort", 0)) or broker_port()
    values = dict(listenPort=port, bindAddress="127.0.0.1", brokerIP1="127.0.0.1",
                  brokerIP2="127.0.0.1", brokerName="broker-a", namesrvAddr=namesrv_addr,
                  storePathRootDir=workdir / "store", mappedFileSizeCommitLog=16 * 1024 * 1024,
                  mappedFileSizeConsumeQueue=6000)
    values.update(settings)
    options = [item for name, value in values.items() for item in ("--" + name, value)]
    return Daemon(workdir, "rmq-master", *options, *args, port=port), "127.0.0.1:%d" % port


class DaemonCluster:
    """Our NameServer and broker as daemons under ``workdir``, with the Java peers (mqadmin,
    Java clients) pointed at them. ``broker_settings`` are Java property names; a restart
    keeps the broker's port."""

    def __init__(self, workdir, **broker_settings):
        self.workdir = workdir
        self.broker_settings = broker_settings
        self.namesrv, self.namesrv_addr = start_nameserver(workdir)
        self.broker = self.broker_addr = None
        self.start_broker()
        self.peers = JavaPeers(workdir)

    def start_broker(self):
        settings = dict(self.broker_settings)
        if self.broker_addr is not None:
            settings["listenPort"] = int(self.broker_addr.rsplit(":", 1)[1])
        self.broker, self.broker_addr = start_broker(self.workdir, self.namesrv_addr, **settings)
        wait_until(lambda: self.route("TBW102") is not None, timeout=30)

    def route(self, topic):
        """The topic's route from our NameServer, or ``None``."""
        answer = remote_call(self.namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        return TopicRouteData.from_json(answer.body) if answer.code == ResponseCode.SUCCESS else None

    def stop(self):
        self.peers.stop_all()
        self.broker.stop()
        self.namesrv.stop()
