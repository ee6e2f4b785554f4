"""Peer addresses in RocketMQ's ``"host:port"`` notation."""

__all__ = ["parse_address", "format_address"]


def parse_address(address):
    """``("host", port)`` from RocketMQ's ``"host:port"`` notation."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError("address %r is not host:port" % (address,))
    return host, int(port)


def format_address(address):
    """``"host:port"`` for a Twisted address, like Java's ``parseChannelRemoteAddr``."""
    host = getattr(address, "host", None)
    port = getattr(address, "port", None)
    return "%s:%s" % (host, port) if host is not None else str(address)
