"""A broker controller for consume-side tests: the in-memory store
(:mod:`support.fakestore`), real managers, a fake clock and connections that record what
the broker sends them."""

from twisted.internet.defer import succeed
from twisted.internet.task import Clock

from rmqproto.broker.clients import ClientManager
from rmqproto.broker.config import SETTINGS
from rmqproto.broker.offsets import ConsumerOffsetManager, consumer_offset_path
from rmqproto.broker.processors import consume
from rmqproto.broker.schedule import ScheduleMessageService
from rmqproto.broker.stats import BrokerStatsManager
from rmqproto.broker.subscriptions import SubscriptionGroupManager, subscription_group_path
from rmqproto.broker.topicconfig import TopicConfigManager
from rmqproto.codec.bodies.topic import TopicConfig
from rmqproto.codec.frame import RemotingCommand, decode_frame
from rmqproto.remoting import RequestContext, RequestDispatcher
from support.fakestore import NOW, FakeStore


class Connection:
    """A client connection: records oneway requests the broker sends."""

    def __init__(self, peer="127.0.0.1:50000"):
        self.peer = peer
        self.oneway = []
        self.closed = False

    def send_oneway(self, request):
        self.oneway.append(request)
        return succeed(None)

    def close(self):
        self.closed = True


class Controller:
    """What ``BrokerController`` gives the consume side."""

    def __init__(self, tmp_path, **settings):
        self.reactor = Clock()
        self.reactor.advance(NOW)
        values = {"storePathRootDir": str(tmp_path), "brokerName": "broker-a",
                  "brokerIP1": "127.0.0.1"}
        values.update(settings)
        self.config, _ = SETTINGS.resolve(values)
        self.store = FakeStore(self.reactor)
        self.topic_config_manager = TopicConfigManager(self.config, self.reactor)
        self.dispatcher = RequestDispatcher()
        root = self.config["storePathRootDir"]
        self.consumer_offset_manager = ConsumerOffsetManager(consumer_offset_path(root))
        self.subscription_group_manager = SubscriptionGroupManager(
            subscription_group_path(root), self.config["autoCreateSubscriptionGroup"],
            self.reactor.seconds)
        self.client_manager = ClientManager(self)
        self.broker_stats_manager = BrokerStatsManager(self.config["brokerClusterName"])
        self.schedule_service = ScheduleMessageService(self)
        self.processor = consume.register(self)

    def topic(self, name, queues=4, **kw):
        self.topic_config_manager.update_topic_config(TopicConfig(name, queues, queues, **kw))

    def call(self, code, header=None, body=b"", connection=None, version=409, **ext):
        """Dispatch a request; the decoded response, a Deferred of it, or ``None``."""
        connection = connection or Connection()
        fields = header.to_ext_fields() if header is not None else (ext or None)
        request = RemotingCommand(int(code), opaque=7, ext_fields=fields, body=body, version=version)
        frame = self.dispatcher.dispatch(request, RequestContext(connection, connection.peer))
        if frame is None:
            return None
        if hasattr(frame, "addCallback"):
            return frame.addCallback(lambda f: decode_frame(f[4:]))
        return decode_frame(frame[4:])


def result_of(deferred):
    """The current result of a fired Deferred (fails the test when it has not fired)."""
    results = []
    deferred.addBoth(results.append)
    assert results, "the Deferred has not fired"
    return results[0]
