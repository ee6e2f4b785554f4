"""Bodies clients send to brokers: heartbeats, queue locks, consumer lists (Java ``HeartbeatData``, ``LockBatchRequestBody``).

Java ``Set`` members are Python lists kept in the order read; the helpers that
build sets afresh (:meth:`SubscriptionData.for_expression`) order them as a
``java.util.HashSet`` would iterate.
"""

from rmqproto.codec.bodies._bean import (
    BOOL, INT, LONG, STRING, BeanOf, EnumOf, JavaEnum, JsonBean, ListOf, MapOf, json_bean, member,
)
from rmqproto.codec.fastjson import java_hashmap_order
from rmqproto.codec.javalang import java_string_hash

__all__ = [
    "SUB_ALL", "EXPRESSION_TYPE_TAG", "EXPRESSION_TYPE_SQL92", "ConsumeType", "MessageModel",
    "ConsumeFromWhere", "MessageQueue", "ProducerData", "SubscriptionData", "ConsumerData",
    "HeartbeatData", "LockBatchRequestBody", "LockBatchResponseBody", "UnlockBatchRequestBody",
    "GetConsumerListByGroupResponseBody", "GroupList", "Connection", "ConsumerConnection",
    "ProducerConnection", "ProducerInfo", "ProducerTableInfo",
]

#: ``SubscriptionData.SUB_ALL``: the expression that matches every tag.
SUB_ALL = "*"
#: ``ExpressionType`` constants (a plain string member, not an enum, in Java).
EXPRESSION_TYPE_TAG = "TAG"
EXPRESSION_TYPE_SQL92 = "SQL92"

#: The characters ``String.trim()`` removes: every code point up to the space.
_JAVA_TRIMMED = "".join(map(chr, range(0x21)))


class ConsumeType(JavaEnum):
    CONSUME_ACTIVELY = "CONSUME_ACTIVELY"  # pull
    CONSUME_PASSIVELY = "CONSUME_PASSIVELY"  # push


class MessageModel(JavaEnum):
    BROADCASTING = "BROADCASTING"
    CLUSTERING = "CLUSTERING"


class ConsumeFromWhere(JavaEnum):
    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST"
    CONSUME_FROM_MIN_OFFSET = "CONSUME_FROM_MIN_OFFSET"
    CONSUME_FROM_MAX_OFFSET = "CONSUME_FROM_MAX_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


@json_bean(frozen=True)
class MessageQueue(JsonBean):
    """A queue of a topic on a broker; hashable, so it can key offset tables."""

    topic: str = member(STRING)
    broker_name: str = member(STRING)
    queue_id: int = member(INT, default=0)


@json_bean
class ProducerData(JsonBean):
    group_name: str = member(STRING)


@json_bean
class SubscriptionData(JsonBean):
    """One topic subscription; ``code_set`` holds ``String.hashCode`` of each tag."""

    topic: str = member(STRING)
    sub_string: str = member(STRING, default=None)
    tags_set: list = member(ListOf(STRING), factory=list)
    code_set: list = member(ListOf(INT), factory=list)
    sub_version: int = member(LONG, default=0)
    expression_type: str = member(STRING, default=EXPRESSION_TYPE_TAG)
    class_filter_mode: bool = member(BOOL, default=False)

    @classmethod
    def for_expression(cls, topic, sub_string, sub_version=0, expression_type=EXPRESSION_TYPE_TAG):
        """What the Java client builds (``FilterAPI.buildSubscriptionData``) for a tag expression."""
        if expression_type != EXPRESSION_TYPE_TAG:
            return cls(topic, sub_string, sub_version=sub_version, expression_type=expression_type)
        if not sub_string or sub_string == SUB_ALL:
            return cls(topic, SUB_ALL, sub_version=sub_version)
        tags = [tag.strip(_JAVA_TRIMMED) for tag in sub_string.split("||")]
        tags = [tag for tag in tags if tag]
        tags_set = java_hashmap_order(tags)
        code_set = java_hashmap_order([java_string_hash(tag) for tag in tags], long_keys=False)
        return cls(topic, sub_string, tags_set=tags_set, code_set=code_set, sub_version=sub_version)


@json_bean
class ConsumerData(JsonBean):
    group_name: str = member(STRING)
    consume_type: ConsumeType = member(EnumOf(ConsumeType), default=None)
    message_model: MessageModel = member(EnumOf(MessageModel), default=None)
    consume_from_where: ConsumeFromWhere = member(EnumOf(ConsumeFromWhere), default=None)
    subscription_data_set: list = member(ListOf(BeanOf(SubscriptionData)), factory=list)
    unit_mode: bool = member(BOOL, default=False)


@json_bean
class HeartbeatData(JsonBean):
    """HEART_BEAT's body; the client id's JSON name is ``clientID``."""

    client_id: str = member(STRING, json="clientID")
    producer_data_set: list = member(ListOf(BeanOf(ProducerData)), factory=list)
    consumer_data_set: list = member(ListOf(BeanOf(ConsumerData)), factory=list)


@json_bean
class LockBatchRequestBody(JsonBean):
    """LOCK_BATCH_MQ's body."""

    consumer_group: str = member(STRING, default=None)
    client_id: str = member(STRING, default=None)
    mq_set: list = member(ListOf(BeanOf(MessageQueue)), factory=list)


@json_bean
class UnlockBatchRequestBody(JsonBean):
    """UNLOCK_BATCH_MQ's body (same members as the lock request)."""

    consumer_group: str = member(STRING, default=None)
    client_id: str = member(STRING, default=None)
    mq_set: list = member(ListOf(BeanOf(MessageQueue)), factory=list)


@json_bean
class LockBatchResponseBody(JsonBean):
    """LOCK_BATCH_MQ's answer: the queues now locked by the requester."""

    lock_ok_mq_set: list = member(ListOf(BeanOf(MessageQueue)), json="lockOKMQSet", factory=list)


@json_bean
class GetConsumerListByGroupResponseBody(JsonBean):
    """GET_CONSUMER_LIST_BY_GROUP's answer."""

    consumer_id_list: list = member(ListOf(STRING), default=None)


@json_bean
class GroupList(JsonBean):
    """QUERY_TOPIC_CONSUME_BY_WHO's answer: the groups consuming a topic (a Java ``HashSet``)."""

    group_list: list = member(ListOf(STRING), factory=list)


@json_bean
class Connection(JsonBean):
    """One client connection of a group; ``language`` is the ``LanguageCode`` name."""

    client_id: str = member(STRING, default=None)
    client_addr: str = member(STRING, default=None)
    language: str = member(STRING, default=None)
    version: int = member(INT, default=0)


@json_bean
class ProducerConnection(JsonBean):
    """GET_PRODUCER_CONNECTION_LIST's answer: a producer group's connections (a Java ``HashSet``)."""

    connection_set: list = member(ListOf(BeanOf(Connection)), factory=list)


@json_bean
class ProducerInfo(JsonBean):
    """One producer of GET_ALL_PRODUCER_INFO: ``remoteIP`` is Java's ``/host:port``,
    ``language`` the ``LanguageCode`` name, the last heartbeat in ms."""

    client_id: str = member(STRING, default=None)
    remote_ip: str = member(STRING, json="remoteIP", default=None)
    language: str = member(STRING, default=None)
    version: int = member(INT, default=0)
    last_update_timestamp: int = member(LONG, default=0)


@json_bean
class ProducerTableInfo(JsonBean):
    """GET_ALL_PRODUCER_INFO's answer (``mqadmin producer``): every producer group's producers."""

    data: dict = member(MapOf(STRING, ListOf(BeanOf(ProducerInfo))), factory=dict)


@json_bean
class ConsumerConnection(JsonBean):
    """GET_CONSUMER_CONNECTION_LIST's answer: a consumer group's connections and subscriptions."""

    connection_set: list = member(ListOf(BeanOf(Connection)), factory=list)
    subscription_table: dict = member(MapOf(STRING, BeanOf(SubscriptionData)), factory=dict)
    consume_type: ConsumeType = member(EnumOf(ConsumeType), default=None)
    message_model: MessageModel = member(EnumOf(MessageModel), default=None)
    consume_from_where: ConsumeFromWhere = member(EnumOf(ConsumeFromWhere), default=None)
