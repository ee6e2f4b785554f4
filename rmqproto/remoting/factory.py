"""The factory building :class:`RemotingProtocol` connections, for servers and clients.

The factory keeps the set of live connections and tells its hooks when one is made
or lost: the NameServer drops a broker's routes as soon as the broker's connection
closes (``BrokerHousekeepingService#onChannelClose``).

Connections of factories sharing one :class:`~rmqproto.remoting.backpressure.WriteBudget` (a
server's ports) are limited together (docs/remoting.md, "Flow control"); ``tls`` is the
factory's TLS policy (:mod:`rmqproto.remoting.tls`), None for plain connections only.
"""

from twisted.internet.protocol import Factory
from twisted.logger import Logger

from rmqproto.codec.frame import MAX_FRAME_LENGTH
from rmqproto.remoting.backpressure import WriteBudget
from rmqproto.remoting.dispatch import RequestDispatcher
from rmqproto.remoting.protocol import RemotingProtocol
from rmqproto.remoting.serversettings import high_water_mark, server_setting

__all__ = ["RemotingFactory", "write_budget"]

log = Logger()


def write_budget(config):
    """A :class:`WriteBudget` with the limits of a server's ``config`` (NettyServerConfig names;
    missing ones take their defaults)."""
    return WriteBudget(high_water_mark(config),
                       server_setting(config, "totalWriteBufferHighWaterMark"))


class RemotingFactory(Factory):
    """Builds remoting connections sharing one dispatcher.

    ``connection_made_hooks`` holds callables ``hook(connection)`` and
    ``connection_lost_hooks`` callables ``hook(connection, reason)``; a hook that
    raises is logged and the others still run. ``connections`` is the set of live
    connections.
    """

    def __init__(self, dispatcher=None, reactor=None, max_frame_length=MAX_FRAME_LENGTH,
                 budget=None, tls=None):
        if reactor is None:
            from twisted.internet import reactor
        self.dispatcher = dispatcher if dispatcher is not None else RequestDispatcher()
        self.reactor = reactor
        self.max_frame_length = max_frame_length
        self.connections = set()
        self.connection_made_hooks = []
        self.connection_lost_hooks = []
        self.budget = budget if budget is not None else write_budget({})
        self.tls = tls

    def buildProtocol(self, addr):
        connection = RemotingProtocol(self.dispatcher, self.reactor, self.max_frame_length)
        connection.factory = self
        return connection

    def connection_made(self, connection):
        """Called by a connection once it is up."""
        self.connections.add(connection)
        self._run_hooks(self.connection_made_hooks, connection)

    def connection_lost(self, connection, reason):
        """Called by a connection once it is down."""
        self.connections.discard(connection)
        self._run_hooks(self.connection_lost_hooks, connection, reason)

    def _run_hooks(self, hooks, *args):
        for hook in list(hooks):
            try:
                hook(*args)
            except Exception:
                log.failure("connection hook {hook!r} failed", hook=hook)
