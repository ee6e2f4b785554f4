"""Outgoing remoting connections: a connect helper and a client keyed by address.

:class:`RemotingClient` plays the part of Java's ``NettyRemotingClient``: callers
name a peer by its ``"host:port"`` address, one connection per address is opened
on first use, shared by concurrent callers and forgotten when it closes so that
the next call reconnects.
"""

from twisted.internet.defer import Deferred, fail, gatherResults, succeed
from twisted.internet.endpoints import TCP4ClientEndpoint

from rmqproto.remoting.address import parse_address
from rmqproto.remoting.errors import RemotingConnectionError
from rmqproto.remoting.factory import RemotingFactory
from rmqproto.remoting.protocol import DEFAULT_TIMEOUT

__all__ = ["parse_address", "connect", "RemotingClient"]


def connect(reactor, address, factory, timeout=DEFAULT_TIMEOUT):
    """Connect to ``address`` (``"host:port"``); a Deferred firing with the connection.

    Fails with :class:`RemotingConnectionError` when the connection cannot be made.
    """
    host, port = parse_address(address)
    endpoint = TCP4ClientEndpoint(reactor, host, port, timeout=timeout)

    def failed(failure):
        raise RemotingConnectionError("connect to %s failed: %s" % (
            address, failure.getErrorMessage()))

    return endpoint.connect(factory).addErrback(failed)


class RemotingClient:
    """Requests to peers named by address, over connections opened on demand.

    ``dispatcher`` answers requests the peers send back on those connections
    (for example the broker's NOTIFY_CONSUMER_IDS_CHANGED); ``tls``, a client policy of
    :mod:`rmqproto.remoting.tls`, makes every connection start TLS.
    """

    def __init__(self, reactor, dispatcher=None, connect_timeout=DEFAULT_TIMEOUT, tls=None):
        self.reactor = reactor
        self.connect_timeout = connect_timeout
        self.factory = RemotingFactory(dispatcher, reactor, tls=tls)
        self.factory.connection_lost_hooks.append(self._lost)
        self._connections = {}  # address -> open connection
        self._connecting = {}  # address -> Deferreds waiting for that connection
        self._closing = {}  # connection -> Deferred fired once it is closed

    def connection(self, address):
        """A Deferred firing with the open connection to ``address``, made if needed."""
        existing = self._connections.get(address)
        if existing is not None and existing.is_open:
            return succeed(existing)
        waiter = Deferred()
        waiters = self._connecting.get(address)
        if waiters is None:
            self._connecting[address] = waiters = [waiter]
            try:
                attempt = connect(self.reactor, address, self.factory, self.connect_timeout)
            except ValueError as exc:
                del self._connecting[address]
                return fail(RemotingConnectionError(str(exc)))
            attempt.addCallbacks(self._connected, self._connect_failed,
                                 callbackArgs=(address,), errbackArgs=(address,))
        else:
            waiters.append(waiter)
        return waiter

    def _connected(self, connection, address):
        self._connections[address] = connection
        for waiter in self._connecting.pop(address):
            waiter.callback(connection)

    def _connect_failed(self, failure, address):
        for waiter in self._connecting.pop(address):
            waiter.errback(failure)

    def _lost(self, connection, reason):
        for address, known in list(self._connections.items()):
            if known is connection:
                del self._connections[address]
        closed = self._closing.pop(connection, None)
        if closed is not None:
            closed.callback(None)

    def invoke(self, address, request, timeout=DEFAULT_TIMEOUT):
        """Send ``request`` to ``address``; a Deferred firing with the response."""
        existing = self._connections.get(address)
        if existing is not None and existing.is_open:  # the usual call: no Deferred chained
            return existing.send_request(request, timeout)
        return self.connection(address).addCallback(
            lambda connection: connection.send_request(request, timeout))

    def invoke_oneway(self, address, request):
        """Send ``request`` to ``address`` as oneway; fires with ``None`` once written."""
        return self.connection(address).addCallback(
            lambda connection: connection.send_oneway(request))

    def close(self):
        """Close every connection; a Deferred firing when all are closed."""
        closing = []
        for connection in list(self.factory.connections):
            self._closing[connection] = closed = Deferred()
            connection.close()
            closing.append(closed)
        return gatherResults(closing)
