"""What an ACL admin may do from the console: create a topic, reset a group's offsets.

Only where the broker serving the console has ACL on (``aclEnable``): the user signs in
with an access key and secret key (HTTP Basic) that the broker's ACL knows as an
``admin`` account, and each request the action makes is signed with them, so the brokers
check it as they check ``mqadmin``'s.
"""

import base64
import json

from twisted.internet import defer
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET

from rmqproto.client.deferred import Admin
from rmqproto.client.errors import ClientError

__all__ = ["Actions", "Refused", "credentials_of"]


def credentials_of(request):
    """``(access key, secret key)`` of an HTTP Basic ``Authorization`` header, or None."""
    header = request.getHeader(b"authorization") or b""
    scheme, _, token = header.partition(b" ")
    if scheme.lower() != b"basic":
        return None
    try:
        key, sep, secret = base64.b64decode(token, validate=True).decode("utf-8").partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return (key, secret) if sep and key else None


class Refused(Exception):
    """An action refused with an HTTP ``status`` and a reason."""

    def __init__(self, status, reason):
        super().__init__(reason)
        self.status = status


def _answer(request, status, payload):
    request.setResponseCode(status)
    request.setHeader(b"Content-Type", b"application/json")
    request.write(json.dumps(payload).encode("utf-8"))
    request.finish()


class Actions(Resource):
    """``/api/session`` (GET: whether the signed-in user is an admin, and if not why),
    ``/api/topics`` and ``/api/offsets`` (POST, JSON bodies; refused unless an admin). ``is_admin(access_key, secret_key)`` is the broker's ACL; None
    when ACL is off (every action is then refused: the console is read-only)."""

    def __init__(self, reactor, poller, is_admin=None):
        super().__init__()
        self.reactor = reactor
        self.poller = poller
        self.is_admin = is_admin

    def getChild(self, name, request):
        if name == b"session":
            return _Session(self)
        action = {b"topics": self.create_topic, b"offsets": self.reset_offset}.get(name)
        return _Call(self, action) if action is not None else Resource.getChild(self, name, request)

    def admin_of(self, request):
        """The signed-in admin's credentials (:class:`Refused` if there is none)."""
        if self.is_admin is None:
            raise Refused(403, "read-only: ACL is off on this broker (aclEnable=false)")
        credentials = credentials_of(request)
        if credentials is None:
            raise Refused(401, "sign in with an access key and secret key")
        if not self.is_admin(*credentials):
            raise Refused(403, "%s is not an admin account of this broker's ACL" % credentials[0])
        return credentials

    @defer.inlineCallbacks
    def create_topic(self, credentials, body):
        topic = str(body.get("topic") or "").strip()
        if not topic:
            raise ValueError("a topic name is needed")
        queues = int(body.get("queues", 8))
        admin = self._admin(credentials)
        try:
            masters = [b for b in self.poller.snapshot["brokers"] if b["role"] == "MASTER"]
            if not masters:
                raise ClientError("no master is known to the console yet")
            for broker in masters:
                yield admin.run(admin.core.create_topic(broker["address"], topic, queues, queues))
        finally:
            yield admin.close()
        return {"topic": topic, "brokers": sorted(b["name"] for b in masters)}

    @defer.inlineCallbacks
    def reset_offset(self, credentials, body):
        group, topic = str(body.get("group") or ""), str(body.get("topic") or "")
        if not group or not topic:
            raise ValueError("a group and a topic are needed")
        timestamp = int(body.get("timestamp", 0))
        admin = self._admin(credentials)
        try:
            how, moved = yield admin.run(admin.core.reset_offset(group, topic, timestamp))
        finally:
            yield admin.close()
        return {"group": group, "topic": topic, "consumers": how, "queues": len(moved)}

    def _admin(self, credentials):
        return Admin(self.reactor, namesrvAddr=self.poller.namesrv_addr or "",
                     credentials=credentials)


class _Session(Resource):
    """``{"admin": true, "accessKey": …}`` or ``{"admin": false, "error": why}``."""

    isLeaf = True

    def __init__(self, actions):
        super().__init__()
        self.actions = actions

    def render_GET(self, request):
        request.setHeader(b"Content-Type", b"application/json")
        try:
            credentials = self.actions.admin_of(request)
        except Refused as refused:
            return json.dumps({"admin": False, "error": str(refused)}).encode("utf-8")
        return json.dumps({"admin": True, "accessKey": credentials[0]}).encode("utf-8")


class _Call(Resource):
    """One action: the user checked, the JSON body read, the answer as JSON."""

    isLeaf = True

    def __init__(self, actions, action):
        super().__init__()
        self.actions = actions
        self.action = action

    def render_POST(self, request):
        try:
            body = json.loads(request.content.read() or b"{}")
            if not isinstance(body, dict):
                raise ValueError
        except ValueError:
            request.setResponseCode(400)
            return b'{"error": "the body must be a JSON object"}'
        try:
            credentials = self.actions.admin_of(request)
        except Refused as refused:
            request.setResponseCode(refused.status)
            request.setHeader(b"Content-Type", b"application/json")
            return json.dumps({"error": str(refused)}).encode("utf-8")
        done = defer.maybeDeferred(self.action, credentials, body)
        done.addCallbacks(lambda result: _answer(request, 200, result),
                          lambda failure: _answer(request, 400 if failure.check(ValueError) else 502,
                                                  {"error": str(failure.value)}))
        return NOT_DONE_YET
