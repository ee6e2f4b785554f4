"""``plain_acl.yml`` read into accounts and white addresses, and the check of a request against
them: Java's ``PlainPermissionManager`` (4.9.7).

A file is YAML with ``globalWhiteRemoteAddresses`` (patterns, see
:mod:`rmqproto.acl.address`), ``accounts`` (each ``accessKey``, ``secretKey``,
``whiteRemoteAddress``, ``admin``, ``defaultTopicPerm``, ``defaultGroupPerm``,
``topicPerms``, ``groupPerms``) and ``dataVersion``. Several files make one
:class:`PlainAcl`: the white addresses of all of them, and each access key from the first
file that names it.

:meth:`PlainAcl.check` applies Java's rules in Java's order: a global white address lets
anything in; then the access key must be known; the account's own white address lets its
requests in unsigned; else the signature must match, the admin flag is needed for
:data:`~rmqproto.acl.permission.ADMIN_CODES`, sends to the trace topic pass, and every
resource needs its permission (the account's own for it, else its default for topics or
groups; an admin account without resource permissions may do anything).
"""

import hmac

from rmqproto.acl import AclConfigError, AclError
from rmqproto.acl.address import address_matcher
from rmqproto.acl.permission import (
    ADMIN_CODES, PUB, check_permission, describe, is_retry_topic, parse_perm,
    parse_resource_perms,
)
from rmqproto.acl.signature import sign
from rmqproto.codec.bodies.acl import PlainAccessConfig
from rmqproto.codec.bodies.topic import DataVersion

__all__ = ["Account", "AclFile", "PlainAcl", "TRACE_TOPIC", "text_or_none", "check_keys"]

#: ``TopicValidator.RMQ_SYS_TRACE_TOPIC``: sends to it skip the permission check.
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"

#: ``AclConstants.ACCESS_KEY_MIN_LENGTH`` / ``SECRET_KEY_MIN_LENGTH``: keys must be longer.
KEY_MIN_LENGTH = 6


def text_or_none(value):
    """A YAML scalar as the Java bean's ``String`` (``12345678`` → ``"12345678"``)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def check_keys(access_key, secret_key):
    """``PlainPermissionManager.checkPlainAccessConfig``."""
    if (access_key is None or secret_key is None or len(access_key) <= KEY_MIN_LENGTH
            or len(secret_key) <= KEY_MIN_LENGTH):
        raise AclConfigError("The accessKey=%s and secretKey=%s cannot be null and length "
                             "should longer than 6" % (access_key, secret_key))


def _list_of(value, name):
    if value is None:
        return []
    if not isinstance(value, list):
        raise AclConfigError("%s must be a list, not %r" % (name, value))
    return value


def _texts(values):
    return None if values is None else [text_or_none(value) for value in values]


class Account:
    """One account: what Java's ``buildPlainAccessResource`` makes of an ``accounts`` entry."""

    __slots__ = ("access_key", "secret_key", "white_remote_address", "admin",
                 "default_topic_perm", "default_group_perm", "perms", "white", "view")

    def __init__(self, entry):
        if not isinstance(entry, dict):
            raise AclConfigError("an account must be a mapping, not %r" % (entry,))
        self.access_key = text_or_none(entry.get("accessKey"))
        self.secret_key = text_or_none(entry.get("secretKey"))
        check_keys(self.access_key, self.secret_key)
        self.white_remote_address = text_or_none(entry.get("whiteRemoteAddress"))
        admin = entry.get("admin")
        self.admin = admin is True or text_or_none(admin) == "true"
        self.default_topic_perm = parse_perm(entry.get("defaultTopicPerm"))
        self.default_group_perm = parse_perm(entry.get("defaultGroupPerm"))
        self.perms = parse_resource_perms(_list_of(entry.get("groupPerms"), "groupPerms"), False)
        self.perms.update(parse_resource_perms(_list_of(entry.get("topicPerms"), "topicPerms"),
                                               True))
        self.white = address_matcher(self.white_remote_address)
        #: the entry as the broker reports it (GET_BROKER_CLUSTER_ACL_CONFIG)
        self.view = PlainAccessConfig(
            access_key=self.access_key, secret_key=self.secret_key,
            white_remote_address=self.white_remote_address, admin=self.admin,
            default_topic_perm=text_or_none(entry.get("defaultTopicPerm")),
            default_group_perm=text_or_none(entry.get("defaultGroupPerm")),
            topic_perms=_texts(entry.get("topicPerms")),
            group_perms=_texts(entry.get("groupPerms")))


class AclFile:
    """One ACL file: its ``path``, global ``white_patterns``, ``accounts`` (list of
    :class:`Account`) and ``data_version``. ``data`` is the file's YAML, already loaded
    (None or empty: a file with nothing in it)."""

    def __init__(self, path, data):
        self.path = path
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise AclConfigError("%s: not a YAML mapping" % path)
        self.white_patterns = [text_or_none(p) for p in
                               _list_of(data.get("globalWhiteRemoteAddresses"),
                                        "globalWhiteRemoteAddresses")]
        self.whites = [address_matcher(pattern) for pattern in self.white_patterns]
        try:
            self.accounts = [Account(entry) for entry in _list_of(data.get("accounts"),
                                                                  "accounts")]
        except AclConfigError as exc:
            raise AclConfigError("%s: %s" % (path, exc)) from None
        self.data_version = data_version_of(data)


def data_version_of(data):
    """The first entry of a file's ``dataVersion`` list, or a fresh version."""
    versions = (data or {}).get("dataVersion")
    if isinstance(versions, list) and versions and isinstance(versions[0], dict):
        first = versions[0]
        try:
            return DataVersion(timestamp=int(first.get("timestamp") or 0),
                               counter=int(first.get("counter") or 0))
        except (TypeError, ValueError):
            pass
    return DataVersion()


class PlainAcl:
    """The accounts and white addresses of some :class:`AclFile` s, and the check of a
    request against them."""

    def __init__(self, files=()):
        self.files = list(files)
        self.whites = [white for acl_file in self.files for white in acl_file.whites]
        self.accounts = {}  # access key -> (Account, path of its file)
        for acl_file in self.files:
            for account in acl_file.accounts:
                self.accounts.setdefault(account.access_key, (account, acl_file.path))

    def file_of(self, access_key):
        """The path of the file that defines ``access_key``, or None."""
        entry = self.accounts.get(access_key)
        return entry[1] if entry is not None else None

    def check(self, request):
        """Allow the :class:`~rmqproto.acl.request.AccessRequest` or raise :class:`AclError`
        with Java's message."""
        host = request.host
        for white in self.whites:
            if white(host):
                return
        key = request.access_key
        if key is None:
            raise AclError("No accessKey is configured")
        entry = self.accounts.get(key)
        if entry is None:
            raise AclError("No acl config for %s" % key)
        account = entry[0]
        if account.white(host):
            return
        expected = sign(request.content, account.secret_key)
        if request.signature is None or not hmac.compare_digest(
                expected.encode(), request.signature.encode("utf-8", "replace")):
            raise AclError("Check signature failed for accessKey=%s" % key)
        if request.perms.get(TRACE_TOPIC) == PUB:
            return
        self._check_perms(request, account)

    @staticmethod
    def _check_perms(request, account):
        """``PlainPermissionManager.checkPerm``."""
        if request.code in ADMIN_CODES and not account.admin:
            raise AclError("Need admin permission for request code=%d, but accessKey=%s is "
                           "not" % (request.code, account.access_key))
        if not request.perms or (account.admin and not account.perms):
            return
        for resource, needed in request.perms.items():
            owned = account.perms.get(resource)
            if owned is None:
                owned = (account.default_group_perm if is_retry_topic(resource)
                         else account.default_topic_perm)
            if not check_permission(needed, owned):
                raise AclError("No default permission for %s" % describe(resource))
