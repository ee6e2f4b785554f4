"""What every client core shares: the :class:`Call` / :class:`Reply` protocol between a
core and its transport, and asking the NameServers (``MQClientAPIImpl#getTopicRouteInfoFromNameServer``)."""

import os
import time
from collections import namedtuple

from rmqproto.client.errors import BrokerError, ClientError
from rmqproto.client.message import local_ip
from rmqproto.client.nameserver import make_strategy
from rmqproto.codec.bodies.route import MASTER_ID, TopicRouteData
from rmqproto.codec.codes import RequestCode, ResponseCode
from rmqproto.codec.frame import RemotingCommand
from rmqproto.codec.headers import GetRouteInfoRequestHeader

#: A request the transport is to make; ``timeout_ms`` is what is left of the call's time.
Call = namedtuple("Call", "address request timeout_ms oneway")
#: What became of a :class:`Call`: ``response`` or ``error`` (a transport error), at ``now`` (ms).
Reply = namedtuple("Reply", "response error now")

#: The client's language on the wire (``LanguageCode.PYTHON``).
LANGUAGE = "PYTHON"
#: How long a NameServer request may take (``MQClientInstance``'s 3 s).
NAMESRV_TIMEOUT_MS = 3000
#: How long a request to a broker other than a send or a pull may take (``MQClientAPIImpl``'s usual 3 s).
REQUEST_TIMEOUT_MS = 3000


def run(steps, perform):
    """Run the generator ``steps`` of a core call with ``perform(call) -> Reply`` (which
    blocks); the call's return value."""
    reply = None
    while True:
        try:
            call = steps.send(reply)
        except StopIteration as done:
            return done.value
        reply = perform(call)


def client_id(config, ip, pid, nanos, unique=True):
    """``ClientConfig#buildMQClientId``: ``ip@instanceName``, the instance name ``DEFAULT``
    made ``pid#nanos`` (``changeInstanceNameToPID``, unless not ``unique``: a
    broadcasting consumer keeps it) so that each client is a member of its own."""
    name = config.instanceName
    if name == "DEFAULT" and unique:
        name = "%d#%d" % (pid, nanos)
    return "%s@%s" % (ip, name)


def this_client_id(config, unique=True):
    """The transports' :func:`client_id`: this host's address, this process, a fresh number."""
    return client_id(config, local_ip(), os.getpid(), time.monotonic_ns(), unique)


def request(code, header=None, body=None):
    """A request of ``code`` from this client, with ``header``'s fields."""
    return RemotingCommand(code, language=LANGUAGE, body=body,
                           ext_fields=header.to_ext_fields() if header is not None else {})


def route_request(topic):
    """GET_ROUTEINFO_BY_TOPIC for ``topic``."""
    return request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic))


class NameServerLookup:
    """The NameServers of ``config.namesrvAddr``, asked in the order the configured strategy
    gives, and the routes held: topic -> ``(TopicRoute, when fetched)``."""

    def __init__(self, config, rng):
        self.config = config
        self.nameservers = make_strategy(config.nameServerStrategy, config.namesrv_list, rng)
        self.routes = {}
        self.stale = set()  # topics whose route is fetched again before the next use

    def held_route(self, topic, now):
        """``(TopicRoute, fetched)`` held for ``topic`` (or ``None``), and whether it is still
        fresh: not marked stale and younger than ``pollNameServerInterval``."""
        known = self.routes.get(topic)
        return known, (known is not None and topic not in self.stale
                       and now - known[1] < self.config.pollNameServerInterval)

    def live_addresses(self):
        """The NameServers and every broker address of the routes held; connections to
        other addresses can go (``cleanOfflineBroker``)."""
        return {address for route, _ in self.routes.values()
                for addrs in route.addresses.values() for address in addrs.values()
                } | set(self.nameservers.addresses)

    def ask_nameserver(self, request, now):
        """Generator: send ``request`` to the NameServer the strategy picks, and to the
        next ones while they fail; returns ``(response, now)``. Without NameServers
        (allowed: an admin of DLedger members needs none) it raises, as Java's client
        does at its first request."""
        if not self.nameservers.addresses:
            raise ClientError("No name server address, please set it (namesrvAddr)")
        error = None
        for _ in self.nameservers.addresses:
            address = self.nameservers.choose(now)
            self.nameservers.begin(address, now)
            reply = yield Call(address, request, NAMESRV_TIMEOUT_MS, False)
            now = reply.now
            self.nameservers.end(address, reply.error is None, now)
            if reply.error is None:
                return reply.response, now
            error = reply.error
        raise ClientError("no NameServer answered (%s)" % error) from error

    def fetch_route(self, topic, now):
        """Generator: ``(TopicRouteData or None if the topic is unknown, now)``."""
        answer, now = yield from self.ask_nameserver(route_request(topic), now)
        if answer.code == ResponseCode.SUCCESS:
            return TopicRouteData.from_json(answer.body), now
        if answer.code == ResponseCode.TOPIC_NOT_EXIST:
            return None, now
        raise BrokerError(answer.code, answer.remark)

    def broker_addresses(self, masters_only=False):
        """Every broker address of the routes held (only masters with ``masters_only``), sorted."""
        return sorted({address for route, _ in self.routes.values()
                       for addrs in route.addresses.values()
                       for broker_id, address in addrs.items()
                       if not masters_only or broker_id == MASTER_ID})

    def tell_each(self, addresses, make_request, now):
        """Generator: ``make_request()`` sent to each of ``addresses`` in turn (HEART_BEAT,
        UNREGISTER_CLIENT); returns ``(addresses that answered SUCCESS, now)``."""
        answered = set()
        for address in addresses:
            reply = yield Call(address, make_request(), REQUEST_TIMEOUT_MS, False)
            now = reply.now
            if reply.error is None and reply.response.code == ResponseCode.SUCCESS:
                answered.add(address)
        return answered, now
