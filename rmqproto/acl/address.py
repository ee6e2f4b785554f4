"""White-address patterns: Java's ``RemoteAddressStrategyFactory`` (4.9.7).

``address_matcher(pattern)`` gives a function ``host -> bool``:

* blank: matches nothing; ``*``, ``*.*.*.*`` or ``*:*:*:*:*:*:*:*``: matches everything;
* one address (IPv4 or IPv6): that address;
* ``a,b,c`` or ``192.168.1.{1,2,3}`` (also IPv6 ``…:{a,b}``): any of those addresses;
* ``192.168.*.*``, ``192.168.1-3.*``, ``10.*.*.*``: a range in the first ``*`` or ``a-b``
  component after the first one, the components before it fixed. As in Java, the
  components after the range are not looked at, and there is no CIDR notation.

A pattern Java refuses raises :class:`~rmqproto.acl.AclConfigError`.
"""

import ipaddress

from rmqproto.acl import AclConfigError

__all__ = ["address_matcher", "expand_ipv6"]

_MATCH_ALL = frozenset(("*", "*.*.*.*", "*:*:*:*:*:*:*:*"))


def _is_ipv4(text):
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def _is_ipv6(text):
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _pieces(text, separator):
    """``StringUtils.split``: the non-empty pieces."""
    return [piece for piece in text.split(separator) if piece]


def expand_ipv6(text, parts=8):
    """``AclUtils.expandIP``: upper case, ``::`` filled out to ``parts`` groups, each group
    padded to four digits."""
    text = text.upper()
    pad = parts - text.count(":")
    if pad > 0:
        text = text.replace("::", ":" * (pad + 1))
    return ":".join(group.rjust(4, "0") for group in text.split(":"))


def _never(host):
    return False


def _always(host):
    return True


def _one_of(addresses):
    wanted = set()
    for address in addresses:
        if _is_ipv4(address):
            wanted.add(address)
        elif _is_ipv6(address):
            wanted.add(expand_ipv6(address))
        else:
            raise AclConfigError("Netaddress examine Exception netaddress is %s" % address)

    def match(host):
        return (expand_ipv6(host) if _is_ipv6(host) else host) in wanted
    return match


def _braces(pattern):
    """``a.b.c.{1,2}`` or ``…:{a,b}``: the addresses it names."""
    separator = ":" if ":" in pattern else "."
    pieces = _pieces(pattern, separator)
    if separator == "." and len(pieces) < 4 or not pieces[-1].startswith("{"):
        raise AclConfigError("MultipleRemoteAddressStrategy netaddress examine scope "
                             "Exception netaddress %s" % pattern)
    prefix = pattern[:pattern.index("{")]
    return [prefix + item for item in _pieces(pieces[-1][1:-1], ",")]


def _parse_int(text, base=10):
    try:
        return int(text.strip(), base)
    except ValueError:
        raise AclConfigError("Netaddress examine scope Exception value %s" % text) from None


def _range_of(value, top, base):
    """``(start, end)`` of a ``*`` or ``a-b`` component; ``(0, 0)`` for anything else."""
    value = value.strip()
    if value == "*":
        return 0, top
    if "-" in value:
        if value.startswith("-"):
            raise AclConfigError("RangeRemoteAddressStrategy netaddress examine scope "
                                 "Exception value %s " % value)
        bounds = _pieces(value, "-")
        if len(bounds) < 2:
            raise AclConfigError("Netaddress examine scope Exception value %s" % value)
        start, end = _parse_int(bounds[0], base), _parse_int(bounds[1], base)
        if not (0 <= start <= end <= top):
            raise AclConfigError("RangeRemoteAddressStrategy netaddress examine scope "
                                 "Exception start is %s , end is %s" % (start, end))
        return start, end
    return 0, 0


def _ipv4_range(pattern):
    pieces = _pieces(pattern, ".")
    bounds = (0, 0)
    for index in range(1, 4):  # Java looks at components 1 to 3 only
        if index < len(pieces):
            bounds = _range_of(pieces[index], 255, 10) if bounds[1] <= 0 else bounds
        if bounds[1] > 0:
            break
    else:
        raise AclConfigError("Netaddress examine scope Exception netaddress is %s" % pattern)
    if len(pieces) != 4 or not all(0 <= _parse_int(p) <= 255 for p in pieces[:index - 1]):
        raise AclConfigError("Netaddress examine scope Exception netaddress is %s" % pattern)
    head = "".join(piece.strip() + "." for piece in pieces[:index])
    start, end = bounds

    def match(host):
        if not _is_ipv4(host) or not host.startswith(head):
            return False
        return start <= int(host.split(".")[index]) <= end
    return match


def _ipv6_range(pattern):
    star, minus = pattern.find("*"), pattern.find("-")
    last = pattern.rfind(":")
    if star > -1 and star != len(pattern) - 1 or minus > -1 and (
            minus <= last if star == -1 else minus <= pattern.rfind(":", 0, last)):
        raise AclConfigError("Netaddress examine scope Exception netaddress is %s" % pattern)
    pieces = _pieces(pattern, ":")
    for index in range(1, len(pieces)):
        start, end = _range_of(pieces[index], 0xFFFF, 16)
        if end > 0:
            break
    else:
        raise AclConfigError("Netaddress examine scope Exception netaddress is %s" % pattern)
    if not all(0 <= _parse_int(group, 16) <= 0xFFFF
               for group in expand_ipv6(pattern).split(":")[:index - 1]):
        raise AclConfigError("Netaddress examine scope Exception netaddress is %s" % pattern)
    if star > -1 and minus > -1:
        head = expand_ipv6(pattern[:pattern.rfind(":", 0, last)], 6)
    else:
        head = expand_ipv6(pattern[:last], 7)
    at = len(head.split(":"))

    def match(host):
        if not _is_ipv6(host):
            return False
        expanded = expand_ipv6(host)
        return expanded.startswith(head) and start <= int(expanded[5 * at:5 * at + 4], 16) <= end
    return match


def address_matcher(pattern):
    """A function ``host -> bool`` for the white-address ``pattern`` (see the module doc)."""
    if pattern is None or not str(pattern).strip():
        return _never
    pattern = str(pattern)
    if pattern in _MATCH_ALL:
        return _always
    if pattern.endswith("}"):
        return _one_of(_braces(pattern))
    if "," in pattern:
        return _one_of(_pieces(pattern, ","))
    if "*" in pattern or "-" in pattern:
        return _ipv6_range(pattern) if ":" in pattern else _ipv4_range(pattern)
    return _one_of([pattern])
