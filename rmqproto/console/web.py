"""The console over Twisted Web on the setting ``consolePort`` (0: off).

``/`` is the page (``static/``: plain HTML, CSS and JavaScript, no build step, nothing
fetched from elsewhere), ``/api/snapshot`` the latest picture as JSON, ``/events`` the same
picture pushed at every poll as server-sent events, and under ``/api`` the ACL admin's
actions (:mod:`.actions`).
"""

import json
import os

from twisted.application import internet, service
from twisted.internet import defer
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET, Site
from twisted.web.static import File

from rmqproto.config import Setting, in_range
from rmqproto.console.actions import Actions
from rmqproto.console.poller import ConsolePoller

__all__ = ["CONSOLE_PORT", "CONSOLE_CREDENTIALS", "broker_console", "console_setting",
           "ConsoleEndpoint"]

#: ``rmq-local``'s default port (the single services default to 0, off).
CONSOLE_PORT = 8082
STATIC = os.path.join(os.path.dirname(__file__), "static")


def console_setting(default=0):
    """The ``consolePort`` setting with ``default``."""
    return Setting("consolePort", default, "port serving the web console (0: off)",
                   check=in_range(0, 65535))


#: A broker's settings for the console's own requests where ACL is on (as
#: rocketmq-dashboard's ``rocketmq.config.accessKey`` / ``secretKey``).
CONSOLE_CREDENTIALS = (
    Setting("consoleAccessKey", "", "access key signing the console's requests (ACL on)"),
    Setting("consoleSecretKey", "", "secret key signing the console's requests (ACL on)"),
)


def broker_console(config, controller, reactor, namesrv_addr):
    """The console of a broker (settings ``config``): admin actions where its ACL is the
    plain one and on, the console's requests signed with ``consoleAccessKey``."""
    validator = controller.access_validator
    acl = getattr(validator, "acl", None)

    def is_admin(access_key, secret_key):
        known = acl.accounts.get(access_key)
        return known is not None and known[0].admin and known[0].secret_key == secret_key

    credentials = ((config["consoleAccessKey"], config["consoleSecretKey"])
                   if config["consoleAccessKey"] else None)
    return ConsoleEndpoint(config["consolePort"], reactor, config["bindAddress"],
                           is_admin if acl is not None else None,
                           namesrv_addr=namesrv_addr, credentials=credentials)


def _json(snapshot):
    return json.dumps(snapshot, separators=(",", ":")).encode("utf-8")


class SnapshotResource(Resource):
    """The latest snapshot as JSON."""

    isLeaf = True

    def __init__(self, poller):
        super().__init__()
        self.poller = poller

    def render_GET(self, request):
        request.setHeader(b"Content-Type", b"application/json")
        request.setHeader(b"Cache-Control", b"no-store")
        return _json(self.poller.snapshot)


class EventsResource(Resource):
    """Server-sent events: the latest snapshot at once, then each new one."""

    isLeaf = True

    def __init__(self, poller):
        super().__init__()
        self.poller = poller

    def render_GET(self, request):
        request.setHeader(b"Content-Type", b"text/event-stream")
        request.setHeader(b"Cache-Control", b"no-store")

        def send(snapshot):
            request.write(b"data: " + _json(snapshot) + b"\n\n")

        def gone(_):
            if send in self.poller.listeners:
                self.poller.listeners.remove(send)

        send(self.poller.snapshot)
        self.poller.listeners.append(send)
        request.notifyFinish().addBoth(gone)
        return NOT_DONE_YET


class ConsoleEndpoint(service.MultiService):
    """When ``port`` is not 0: the poller and, as a child, the HTTP service serving the
    console on ``interface`` (``poller`` is None when off). ``is_admin(access key, secret
    key)`` is the broker's ACL where it is on (the admin actions, :mod:`.actions`).
    Arguments after it are the poller's."""

    def __init__(self, port, reactor, interface="", is_admin=None, **poller):
        super().__init__()
        self.poller = ConsolePoller(reactor, acl=is_admin is not None, **poller) if port else None
        if self.poller is not None:
            root = File(STATIC)
            api = Actions(reactor, self.poller, is_admin)
            api.putChild(b"snapshot", SnapshotResource(self.poller))
            root.putChild(b"api", api)
            root.putChild(b"events", EventsResource(self.poller))
            internet.TCPServer(port, Site(root), interface=interface,
                               reactor=reactor).setServiceParent(self)

    def attach(self, parent):
        """Make the console (if on) a child of the service ``parent``."""
        if self.poller is not None:
            self.setServiceParent(parent)

    def startService(self):
        super().startService()
        self.poller.start()

    def stopService(self):
        return defer.gatherResults([self.poller.stop(), defer.maybeDeferred(super().stopService)])
