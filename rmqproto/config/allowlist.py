"""Address allow-lists: ``"10.0.0.5, 10.1.0.0/16, fd00::/8"`` (addresses and CIDR blocks,
comma-separated), as the ``haSlaveAllowList`` broker setting takes them (docs/security.md,
"HA port")."""

import ipaddress

__all__ = ["AllowList"]


class AllowList:
    """The networks of a comma-separated list; an empty list allows every address.

    Raises ValueError naming the first entry that is not an IPv4/IPv6 address or CIDR
    block (host names are refused: a list is checked before any name is resolved)."""

    def __init__(self, text):
        self.networks = []
        for entry in (e.strip() for e in text.split(",")):
            if not entry:
                continue
            try:
                self.networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                raise ValueError("%r is not an IP address or CIDR block" % entry) from None

    def __bool__(self):
        return bool(self.networks)

    def allows(self, host):
        """Whether ``host`` (an address as a socket reports it) is listed, or the list is
        empty; an IPv4-mapped IPv6 address matches its IPv4 entries."""
        if not self.networks:
            return True
        try:
            address = ipaddress.ip_address(host.split("%", 1)[0])
        except ValueError:
            return False
        mapped = getattr(address, "ipv4_mapped", None)
        if mapped is not None:
            address = mapped
        return any(address in network for network in self.networks)
