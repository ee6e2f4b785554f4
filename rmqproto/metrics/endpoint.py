"""``/metrics`` over Twisted Web on the setting ``metricsPort`` (0: off)."""

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from twisted.application import internet
from twisted.web.resource import Resource
from twisted.web.server import Site

from rmqproto.config import Setting, in_range

__all__ = ["METRICS_PORT", "metrics_setting", "MetricsEndpoint", "MetricsResource"]

#: ``rmq-local``'s default port (the single services default to 0, off).
METRICS_PORT = 5557


def metrics_setting(default=0):
    """The ``metricsPort`` setting with ``default``."""
    return Setting("metricsPort", default, "port serving Prometheus metrics at /metrics (0: off)",
                   check=in_range(0, 65535))


class MetricsResource(Resource):
    """The text format of ``registry``, made in the reactor's thread: the collectors read
    state only the reactor changes (``prometheus_client.twisted``'s resource would run
    them in a thread pool)."""

    isLeaf = True

    def __init__(self, registry):
        super().__init__()
        self.registry = registry

    def render_GET(self, request):
        request.setHeader(b"Content-Type", CONTENT_TYPE_LATEST.encode("ascii"))
        return generate_latest(self.registry)


class MetricsEndpoint:
    """A registry of ``collectors`` and, when ``port`` is not 0, the TCP service serving it
    at ``/metrics`` on ``interface`` (``service`` is None when off)."""

    def __init__(self, port, collectors=(), interface="", reactor=None):
        self.registry = CollectorRegistry(auto_describe=False)
        for collector in collectors:
            self.registry.register(collector)
        self.service = None
        if port:
            root = Resource()
            root.putChild(b"metrics", MetricsResource(self.registry))
            self.service = internet.TCPServer(port, Site(root), interface=interface,
                                              reactor=reactor)

    def add(self, collector):
        self.registry.register(collector)

    def attach(self, parent):
        """Make the HTTP service (if any) a child of the service ``parent``."""
        if self.service is not None:
            self.service.setServiceParent(parent)
