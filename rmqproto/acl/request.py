"""What a request asks for: Java's ``PlainAccessValidator.parse`` (4.9.7).

:func:`access_request` reads the credentials a request carries, the resources it touches
with the permission each needs (a group as its retry topic), and the content its signature
covers. Which resources, by request code:

* SEND_MESSAGE / SEND_MESSAGE_V2 (and SEND_BATCH_MESSAGE, which Java leaves unchecked):
  PUB on the topic, or SUB on the producer group when the topic is a retry topic;
* CONSUMER_SEND_MSG_BACK: SUB on the group;
* PULL_MESSAGE: SUB on the topic and on the consumer group;
* QUERY_MESSAGE: SUB on the topic;
* HEART_BEAT: SUB on each consumer group and each topic it subscribes to;
* UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP: SUB on the consumer group;
* UPDATE_CONSUMER_OFFSET: SUB on the consumer group and the topic;
* anything else: none (only the signature, and the admin flag for
  :data:`~rmqproto.acl.permission.ADMIN_CODES`).
"""

from rmqproto.acl import AclError
from rmqproto.acl.permission import PUB, SUB, is_retry_topic, retry_topic
from rmqproto.acl.signature import ACCESS_KEY, SECURITY_TOKEN, SIGNATURE, content_of
from rmqproto.codec import headers as h
from rmqproto.codec.bodies.client import HeartbeatData
from rmqproto.codec.codes import RequestCode as RC
from rmqproto.errors import RmqError

__all__ = ["AccessRequest", "access_request"]

#: ``MixAll.UNIQUE_MSG_QUERY_FLAG``: not part of the signed content.
_UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"
_LEFT_OUT = (SIGNATURE, _UNIQUE_MSG_QUERY_FLAG)


class AccessRequest:
    """One request as the validator sees it (Java's ``PlainAccessResource``).

    ``perms`` maps each resource to the permission it needs; ``content`` is what the
    signature covers (None for a request without extFields).
    """

    __slots__ = ("code", "host", "access_key", "signature", "security_token", "perms",
                 "content")

    def __init__(self, code, host, access_key=None, signature=None, security_token=None,
                 perms=None, content=None):
        self.code = code
        self.host = host
        self.access_key = access_key
        self.signature = signature
        self.security_token = security_token
        self.perms = perms if perms is not None else {}
        self.content = content


def _send(fields, topic_key, group_key):
    topic = fields.get(topic_key)
    if is_retry_topic(topic):
        return [(retry_topic(fields.get(group_key)), SUB)]
    return [(topic, PUB)]


def _heartbeat(command):
    needed = []
    for consumer in HeartbeatData.from_json(bytes(command.body)).consumer_data_set:
        needed.append((retry_topic(consumer.group_name), SUB))
        needed.extend((data.topic, SUB) for data in consumer.subscription_data_set)
    return needed


def _header(cls):
    return lambda command: cls.from_ext_fields(command.ext_fields)


_UNREGISTER = _header(h.UnregisterClientRequestHeader)
_CONSUMER_LIST = _header(h.GetConsumerListByGroupRequestHeader)
_OFFSET = _header(h.UpdateConsumerOffsetRequestHeader)

_RESOURCES = {
    int(RC.SEND_MESSAGE): lambda c: _send(c.ext_fields, "topic", "group"),
    int(RC.SEND_MESSAGE_V2): lambda c: _send(c.ext_fields, "b", "a"),
    int(RC.SEND_BATCH_MESSAGE): lambda c: _send(c.ext_fields, "b", "a"),
    int(RC.CONSUMER_SEND_MSG_BACK): lambda c: [(retry_topic(c.ext_fields.get("group")), SUB)],
    int(RC.PULL_MESSAGE): lambda c: [(c.ext_fields.get("topic"), SUB),
                                     (retry_topic(c.ext_fields.get("consumerGroup")), SUB)],
    int(RC.QUERY_MESSAGE): lambda c: [(c.ext_fields.get("topic"), SUB)],
    int(RC.HEART_BEAT): _heartbeat,
    int(RC.UNREGISTER_CLIENT): lambda c: [(retry_topic(_UNREGISTER(c).consumer_group), SUB)],
    int(RC.GET_CONSUMER_LIST_BY_GROUP): lambda c: [
        (retry_topic(_CONSUMER_LIST(c).consumer_group), SUB)],
    int(RC.UPDATE_CONSUMER_OFFSET): lambda c: [
        (retry_topic(_OFFSET(c).consumer_group), SUB), (_OFFSET(c).topic, SUB)],
}


def access_request(command, host):
    """The :class:`AccessRequest` of ``command`` from ``host``; raises :class:`AclError` when
    the request is too malformed to say what it touches (as Java refuses it)."""
    request = AccessRequest(command.code, host)
    fields = command.ext_fields
    if fields is None:  # only a white address can let it in
        return request
    request.access_key = fields.get(ACCESS_KEY)
    request.signature = fields.get(SIGNATURE)
    request.security_token = fields.get(SECURITY_TOKEN)
    resources = _RESOURCES.get(command.code)
    if resources is not None:
        try:
            needed = resources(command)
        except (RmqError, ValueError, TypeError, AttributeError) as exc:
            raise AclError(str(exc)) from None
        request.perms = {resource: perm for resource, perm in needed if resource is not None}
    request.content = content_of(fields, command.body, _LEFT_OUT)
    return request
