"""Access control as RocketMQ 4.9's ``acl`` module has it: ``plain_acl.yml`` accounts and
white addresses, the HMAC signature of ``AclClientRPCHook``'s requests, per-topic and
per-group permissions (docs/security.md, "ACL").

Pure: files come in as parsed YAML, requests as decoded commands and the peer's host; the
answer is an allowance or an :class:`AclError` saying why not. Reading, watching and
writing the files is :mod:`rmqproto.broker.aclfiles`'s.
"""

from rmqproto.errors import RmqError

__all__ = ["AclError", "AclConfigError"]


class AclError(RmqError):
    """A request is refused (Java's ``AclException``); the text says why, as Java's does."""


class AclConfigError(AclError, ValueError):
    """An ACL file, or an edit of one, holds a value Java's ``PlainPermissionManager`` refuses."""
