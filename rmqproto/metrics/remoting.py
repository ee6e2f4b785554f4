"""Remoting connections, requests and the answers the dispatcher makes itself; the NameServer.

``rmqproto_remoting_connections`` counts the live connections of each listener (label
``listener``); ``rmqproto_remoting_requests_total`` the requests dispatched, by request
code (one dict update a request: docs/observability.md has its cost);
``rmqproto_remoting_errors_total`` the error answers the
:class:`~rmqproto.remoting.dispatch.RequestDispatcher` gives by itself, by response code
(REQUEST_CODE_NOT_SUPPORTED, SYSTEM_BUSY, SYSTEM_ERROR, ACL refusals): a processor's own
error answers are not counted (their codes are inside the encoded frames).
"""

from prometheus_client.core import CounterMetricFamily

from rmqproto.codec.codes import RequestCode, ResponseCode
from rmqproto.metrics.families import gauge, gauges

__all__ = ["RemotingCollector", "NameServerCollector"]


class RemotingCollector:
    """``listeners``: ``(name, factory)`` pairs; ``dispatcher``: the service's own
    (views of it, as the broker's VIP channel, count into it); ``labels``: ``(names,
    values)`` naming the service."""

    def __init__(self, listeners, dispatcher, labels):
        self.listeners = listeners
        self.dispatcher = dispatcher
        self.names, self.values = labels

    def collect(self):
        yield gauges("rmqproto_remoting_connections", "live remoting connections",
                     self.names + ["listener"],
                     [(self.values + [name], len(factory.connections))
                      for name, factory in self.listeners])
        requests = CounterMetricFamily("rmqproto_remoting_requests", "requests dispatched, by "
                                       "request code", labels=self.names + ["code"])
        for code, count in sorted(self.dispatcher.request_counts.items()):
            requests.add_metric(self.values + [_name(RequestCode, code)], count)
        yield requests
        errors = CounterMetricFamily("rmqproto_remoting_errors", "error answers the dispatcher "
                                     "made itself, by response code",
                                     labels=self.names + ["code"])
        for code, count in sorted(self.dispatcher.error_counts.items()):
            errors.add_metric(self.values + [_name(ResponseCode, code)], count)
        yield errors


def _name(codes, code):
    """The name of ``code`` in the enum ``codes``, else its number."""
    try:
        return codes(code).name
    except ValueError:
        return str(code)


class NameServerCollector:
    """The route table of a :class:`~rmqproto.namesrv.routeinfo.RouteInfoManager`."""

    def __init__(self, route_info, port):
        self.route_info = route_info
        self.port = port

    def collect(self):
        info = self.route_info
        yield gauge("rmqproto_namesrv_brokers", "brokers registered with the NameServer",
                    ["namesrv"], [self.port], len(info.broker_live_table))
        yield gauge("rmqproto_namesrv_topics", "topics the NameServer routes", ["namesrv"],
                    [self.port], len(info.topic_queue_table))
