"""Errors of the remoting layer: what a pending outgoing request can fail with."""

from rmqproto.errors import RmqError

__all__ = ["RemotingError", "RemotingTimeoutError", "RemotingConnectionError"]


class RemotingError(RmqError):
    """An outgoing request got no response (Java's ``RemotingException``)."""


class RemotingTimeoutError(RemotingError):
    """No response arrived within the request's timeout (Java's ``RemotingTimeoutException``)."""


class RemotingConnectionError(RemotingError):
    """The connection was lost, closed or never made before the response arrived
    (Java's ``RemotingConnectException`` / ``RemotingSendRequestException``)."""
