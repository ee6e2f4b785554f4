"""The ACL edits admin requests make, on a file's YAML data: Java's
``PlainPermissionManager.updateAccessConfig``, ``deleteAccessConfig`` and
``updateGlobalWhiteAddrsConfig`` (4.9.7).

Each function takes the loaded YAML of one file (a dict, changed in place and returned)
and ``now_ms`` for the file's new ``dataVersion``; it raises
:class:`~rmqproto.acl.AclConfigError` with Java's message when the edit is refused, in
which case the caller writes nothing.
"""

from rmqproto.acl import AclConfigError
from rmqproto.acl.address import address_matcher
from rmqproto.acl.permission import check_resource_perms
from rmqproto.acl.plain import KEY_MIN_LENGTH, Account, check_keys, data_version_of

__all__ = ["AccessConfig", "update_account", "delete_account", "set_global_white"]


class AccessConfig:
    """What UPDATE_AND_CREATE_ACL_CONFIG asks for (Java's ``PlainAccessConfig`` made from a
    ``CreateAccessConfigRequestHeader``); ``topic_perms`` and ``group_perms`` are lists or
    None, the rest text or None, ``admin`` a bool."""

    def __init__(self, access_key, secret_key=None, white_remote_address=None, admin=False,
                 default_topic_perm=None, default_group_perm=None, topic_perms=None,
                 group_perms=None):
        self.access_key = access_key
        self.secret_key = secret_key
        self.white_remote_address = white_remote_address
        self.admin = admin
        self.default_topic_perm = default_topic_perm
        self.default_group_perm = default_group_perm
        self.topic_perms = topic_perms
        self.group_perms = group_perms


def _with_next_version(data, now_ms):
    version = data_version_of(data).next_version(now_ms)
    data["dataVersion"] = [{"counter": version.counter, "timestamp": version.timestamp}]
    return data


def _entry(existing, config):
    """``createAclAccessConfigMap``: ``existing`` (or a new entry) with what ``config`` sets."""
    entry = dict(existing or {})
    if not config.access_key or len(config.access_key) <= KEY_MIN_LENGTH:
        raise AclConfigError("The accessKey=%s cannot be null and length should longer than 6"
                             % config.access_key)
    entry["accessKey"] = config.access_key
    if config.secret_key:
        entry["secretKey"] = config.secret_key
    if config.white_remote_address is not None:
        entry["whiteRemoteAddress"] = config.white_remote_address
    entry["admin"] = bool(config.admin)
    if config.default_topic_perm:
        entry["defaultTopicPerm"] = config.default_topic_perm
    if config.default_group_perm:
        entry["defaultGroupPerm"] = config.default_group_perm
    if config.topic_perms is not None:
        entry["topicPerms"] = list(config.topic_perms)
    if config.group_perms is not None:
        entry["groupPerms"] = list(config.group_perms)
    Account(entry)  # refuses what Java's buildPlainAccessResource refuses (bad addresses)
    return entry


def _accounts(data):
    accounts = data.get("accounts")
    return accounts if isinstance(accounts, list) else []


def update_account(data, config, now_ms):
    """Replace the account of ``config.access_key`` (moved to the end, as Java does) or add
    it to ``data``."""
    check_keys(config.access_key, config.secret_key)
    check_resource_perms(config.topic_perms)
    check_resource_perms(config.group_perms)
    accounts = _accounts(data)
    existing = next((a for a in accounts if isinstance(a, dict)
                     and str(a.get("accessKey")) == config.access_key), None)
    entry = _entry(existing, config)
    data["accounts"] = [a for a in accounts if a is not existing] + [entry]
    return _with_next_version(data, now_ms)


def delete_account(data, access_key, now_ms):
    """``data`` without the account of ``access_key``; None when it has no such account."""
    accounts = _accounts(data)
    kept = [a for a in accounts if not (isinstance(a, dict)
                                        and str(a.get("accessKey")) == access_key)]
    if len(kept) == len(accounts):
        return None
    data["accounts"] = kept
    return _with_next_version(data, now_ms)


def set_global_white(data, patterns, now_ms):
    """``data`` with ``globalWhiteRemoteAddresses`` set to ``patterns`` (each checked first:
    Java writes a bad one and then fails to reload the file)."""
    for pattern in patterns:
        address_matcher(pattern)
    data["globalWhiteRemoteAddresses"] = list(patterns)
    return _with_next_version(data, now_ms)
