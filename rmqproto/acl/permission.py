"""Permission bits and their rules: Java's ``org.apache.rocketmq.acl.common.Permission``.

A resource is a topic name, or a group as its retry topic (``%RETRY%<group>``), so one map
holds both; a permission is a bit set of :data:`DENY`, :data:`ANY`, :data:`PUB`, :data:`SUB`.
"""

from rmqproto.acl import AclConfigError
from rmqproto.codec.codes import RequestCode as RC

__all__ = ["DENY", "ANY", "PUB", "SUB", "ADMIN_CODES", "RETRY_PREFIX", "retry_topic",
           "is_retry_topic", "parse_perm", "check_permission", "parse_resource_perms",
           "check_resource_perms", "describe"]

DENY, ANY, PUB, SUB = 1, 2, 4, 8

#: ``MixAll.RETRY_GROUP_TOPIC_PREFIX``.
RETRY_PREFIX = "%RETRY%"

#: Requests only an ``admin`` account may make. Java's ``Permission.ADMIN_CODE`` has the
#: first five; the ACL editing and reading ones are ours: in 4.9.7 any signed account may
#: rewrite the ACL or read every secret key (docs/security.md, "ACL").
ADMIN_CODES = frozenset(int(code) for code in (
    RC.UPDATE_AND_CREATE_TOPIC, RC.UPDATE_BROKER_CONFIG, RC.DELETE_TOPIC_IN_BROKER,
    RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, RC.DELETE_SUBSCRIPTIONGROUP,
    RC.UPDATE_AND_CREATE_ACL_CONFIG, RC.DELETE_ACL_CONFIG,
    RC.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, RC.GET_BROKER_CLUSTER_ACL_CONFIG))

_PERMS = {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB, "DENY": DENY}


def retry_topic(group):
    """``MixAll.getRetryTopic``; None stays None."""
    return None if group is None else RETRY_PREFIX + group


def is_retry_topic(resource):
    return resource is not None and resource.startswith(RETRY_PREFIX)


def describe(resource):
    """``PlainAccessResource.printStr``: ``topic:<name>`` or ``group:<name>``."""
    if is_retry_topic(resource):
        return "group:" + resource[len(RETRY_PREFIX):]
    return "topic:" + resource


def parse_perm(text):
    """``Permission.parsePermFromString``: anything unknown, or nothing, is :data:`DENY`."""
    if text is None:
        return DENY
    return _PERMS.get(str(text).strip(), DENY)


def check_permission(needed, owned):
    """``Permission.checkPermission``: a DENY bit refuses; ANY wants PUB or SUB."""
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def _split(entry):
    """``StringUtils.split(entry, "=")``: the non-empty pieces."""
    return [piece for piece in str(entry).split("=") if piece]


def parse_resource_perms(entries, is_topic):
    """``Permission.parseResourcePerms``: ``["name=PERM", …]`` as ``{resource: perm}``."""
    perms = {}
    for entry in entries or ():
        items = _split(entry)
        if len(items) != 2:
            raise AclConfigError("Parse resource permission failed for %s:%s" % (
                "topic" if is_topic else "group", entry))
        name = items[0].strip()
        perms[name if is_topic else retry_topic(name)] = parse_perm(items[1])
    return perms


def check_resource_perms(entries):
    """``Permission.checkResourcePerms``: what an edit request's perms must look like."""
    for entry in entries or ():
        items = _split(entry)
        if len(items) != 2:
            raise AclConfigError(
                "Parse Resource format error for %s.\nThe expected resource format is "
                "'Res=Perm'. For example: topicA=SUB" % entry)
        if items[1].strip() != "DENY" and parse_perm(items[1]) == DENY:
            raise AclConfigError(
                "Parse resource permission error for %s.\nThe expected permissions are 'SUB' "
                "or 'PUB' or 'SUB|PUB' or 'PUB|SUB'." % entry)
