"""A scripted world for the client core: NameServers and brokers as functions of the
request, a clock that each call advances, and a driver that runs the core's generators."""

import random

from rmqproto.client.config import ProducerConfig
from rmqproto.client.message import UniqueIds
from rmqproto.client.lookup import Reply, run
from rmqproto.client.producer import ProducerCore
from rmqproto.codec.bodies.route import BrokerData, QueueData, TopicRouteData
from rmqproto.codec.codes import RequestCode, ResponseCode
from rmqproto.codec.headers import SendMessageRequestHeaderV2
from rmqproto.remoting.errors import RemotingConnectionError

NOW = 1_700_000_000_000
SENDS = (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)


def route_data(*brokers, queues=4, perm=6):
    """A route with ``queues`` queues on each named master (address ``<name>:10911``)."""
    return TopicRouteData(
        queue_datas=[QueueData(broker_name=b, read_queue_nums=queues, write_queue_nums=queues,
                               perm=perm) for b in brokers],
        broker_datas=[BrokerData(broker_name=b, cluster="c", broker_addrs={0: "%s:10911" % b})
                      for b in brokers])


class World:
    """``routes``: topic -> TopicRouteData on every NameServer; ``brokers``: name -> a
    function ``(header, request) -> response code`` (or an exception to raise);
    ``latency``: ms each call takes; ``down``: addresses that refuse connections."""

    def __init__(self, routes, brokers=None, latency=1):
        self.routes = routes
        self.brokers = brokers or {}
        self.latency = latency
        self.down = set()
        self.now = NOW
        self.calls = []  # (address, request)
        self.offsets = {}

    def answer(self, call):
        self.calls.append((call.address, call.request))
        self.now += self.latency(call) if callable(self.latency) else self.latency
        if call.address in self.down:
            return Reply(None, RemotingConnectionError("refused"), self.now)
        request = call.request
        if request.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            data = self.routes.get(request.ext_fields["topic"])
            if data is None:
                return Reply(request.response(ResponseCode.TOPIC_NOT_EXIST, "no route"), None, self.now)
            return Reply(request.response(ResponseCode.SUCCESS, body=data.to_json()), None, self.now)
        if request.code in (RequestCode.HEART_BEAT, RequestCode.UNREGISTER_CLIENT):
            return Reply(request.response(ResponseCode.SUCCESS), None, self.now)
        header = SendMessageRequestHeaderV2.from_ext_fields(request.ext_fields)
        broker = call.address.split(":")[0]
        code = self.brokers.get(broker, lambda h, r: ResponseCode.SUCCESS)(header, request)
        if isinstance(code, Exception):
            return Reply(None, code, self.now)
        if call.oneway:
            return Reply(None, None, self.now)
        key = (broker, header.queue_id)
        offset = self.offsets[key] = self.offsets.get(key, -1) + 1
        return Reply(request.response(code, "remark %d" % code, ext_fields={
            "msgId": "%032X" % offset, "queueId": str(header.queue_id),
            "queueOffset": str(offset)}), None, self.now)

    def run(self, steps):
        return run(steps, self.answer)

    def sent_to(self):
        """The broker of every send request made, in order."""
        return [a.split(":")[0] for a, r in self.calls if r.code in SENDS]


def make_core(seed=0, **settings):
    settings.setdefault("namesrvAddr", "ns1:9876;ns2:9876")
    return ProducerCore(ProducerConfig(**settings), random.Random(seed), UniqueIds("10.1.2.3", 77, 5))


def send(core, world, outgoing_or_message, mode="sync", choose=None):
    outgoing = outgoing_or_message
    if not hasattr(outgoing, "code"):
        outgoing = core.prepare(outgoing_or_message, world.now)
    return world.run(core.send(outgoing, mode, world.now, choose))
