"""The remoting layer shared by NameServer, broker and DLedger (``docs/remoting.md``).

:class:`RequestDispatcher` routes requests by code to processors and applies the
generic error rules (``NettyRemotingAbstract``); :class:`RemotingProtocol` runs one connection in both
directions; :class:`RemotingFactory` builds connections for servers and clients;
:class:`RemotingClient` sends requests to peers named ``"host:port"``.
"""

from rmqproto.remoting.client import RemotingClient, connect, parse_address
from rmqproto.remoting.dispatch import RequestContext, RequestDispatcher
from rmqproto.remoting.errors import RemotingConnectionError, RemotingError, RemotingTimeoutError
from rmqproto.remoting.factory import RemotingFactory
from rmqproto.remoting.protocol import DEFAULT_TIMEOUT, RemotingProtocol

__all__ = [
    "RequestDispatcher", "RequestContext", "RemotingProtocol", "RemotingFactory",
    "RemotingClient", "connect", "parse_address", "DEFAULT_TIMEOUT",
    "RemotingError", "RemotingTimeoutError", "RemotingConnectionError",
]
