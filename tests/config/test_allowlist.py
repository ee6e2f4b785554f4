"""``haSlaveAllowList``'s parser: addresses and CIDR blocks, comma-separated."""

import pytest

from rmqproto.config.allowlist import AllowList


def test_addresses_and_blocks():
    allowed = AllowList(" 10.0.0.5, 192.168.0.0/16,,fd00::/8 ")
    assert allowed
    for host in ("10.0.0.5", "192.168.200.1", "fd00::7", "::ffff:192.168.1.1"):
        assert allowed.allows(host), host
    for host in ("10.0.0.6", "172.16.0.1", "fe80::1", "::ffff:10.0.0.6", "not-an-address", ""):
        assert not allowed.allows(host), host


def test_an_empty_list_allows_anyone():
    for text in ("", " , "):
        allowed = AllowList(text)
        assert not allowed and allowed.allows("203.0.113.1") and allowed.allows("::1")


@pytest.mark.parametrize("text", ["slave-1.example.com", "10.0.0.0/33", "10.0.0.5:10912"])
def test_anything_else_is_refused_by_name(text):
    with pytest.raises(ValueError, match="is not an IP address or CIDR block"):
        AllowList("10.0.0.1, " + text)
