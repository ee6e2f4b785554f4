"""Offset tables, subscription groups and the admin statistics mqadmin reads (Java ``ConsumeStats``, …).

The broker keeps these in ``config/consumerOffset.json``, ``config/delayOffset.json``
and ``config/subscriptionGroup.json`` and serves them with GET_ALL_CONSUMER_OFFSET,
GET_ALL_DELAY_OFFSET and GET_ALL_SUBSCRIPTIONGROUP_CONFIG. Queue ids and delay
levels are Java ``Integer`` map keys, written unquoted; the statistics tables are
keyed by ``MessageQueue`` objects, which fastjson writes as object keys.
"""

from rmqproto.codec.bodies._bean import (
    BOOL, DOUBLE, INT, LONG, STRING, BeanOf, JsonBean, ListOf, MapOf, json_bean, member,
)
from rmqproto.codec.bodies.client import MessageQueue
from rmqproto.codec.bodies.topic import DataVersion

__all__ = [
    "ConsumerOffsetSerializeWrapper", "DelayOffsetSerializeWrapper", "SubscriptionGroupConfig",
    "SubscriptionGroupWrapper", "TopicOffset", "TopicStatsTable", "OffsetWrapper", "ConsumeStats",
    "ResetOffsetBody", "MessageQueueForC", "ResetOffsetBodyForC", "GetConsumerStatusBody",
]


@json_bean
class ConsumerOffsetSerializeWrapper(JsonBean):
    """``{"offsetTable":{"<topic>@<group>":{queueId:offset}}}``."""

    offset_table: dict = member(MapOf(STRING, MapOf(INT, LONG)), factory=dict)


@json_bean
class DelayOffsetSerializeWrapper(JsonBean):
    """``{"offsetTable":{delayLevel:offset}}`` (``config/delayOffset.json``)."""

    offset_table: dict = member(MapOf(INT, LONG), factory=dict)


@json_bean
class SubscriptionGroupConfig(JsonBean):
    """A consumer group's settings; the defaults are Java's (``SubscriptionGroupConfig``)."""

    group_name: str = member(STRING)
    consume_enable: bool = member(BOOL, default=True)
    consume_from_min_enable: bool = member(BOOL, default=True)
    consume_broadcast_enable: bool = member(BOOL, default=True)
    retry_queue_nums: int = member(INT, default=1)
    retry_max_times: int = member(INT, default=16)
    broker_id: int = member(LONG, default=0)
    which_broker_when_consume_slowly: int = member(LONG, default=1)
    notify_consumer_ids_changed_enable: bool = member(BOOL, default=True)


@json_bean
class SubscriptionGroupWrapper(JsonBean):
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG's body."""

    subscription_group_table: dict = member(MapOf(STRING, BeanOf(SubscriptionGroupConfig)), factory=dict)
    data_version: DataVersion = member(BeanOf(DataVersion), factory=DataVersion)


@json_bean
class TopicOffset(JsonBean):
    min_offset: int = member(LONG, default=0)
    max_offset: int = member(LONG, default=0)
    last_update_timestamp: int = member(LONG, default=0)


@json_bean
class TopicStatsTable(JsonBean):
    """GET_TOPIC_STATS_INFO's body (``mqadmin topicStatus``)."""

    offset_table: dict = member(MapOf(BeanOf(MessageQueue), BeanOf(TopicOffset)), factory=dict)


@json_bean
class OffsetWrapper(JsonBean):
    """One queue of :class:`ConsumeStats`; ``pull_offset`` is RocketMQ 5's (None: 4.9's body)."""

    broker_offset: int = member(LONG, default=0)
    consumer_offset: int = member(LONG, default=0)
    last_timestamp: int = member(LONG, default=0)
    pull_offset: int = member(LONG, default=None)


@json_bean
class ConsumeStats(JsonBean):
    """GET_CONSUME_STATS's body (``mqadmin consumerProgress``)."""

    offset_table: dict = member(MapOf(BeanOf(MessageQueue), BeanOf(OffsetWrapper)), factory=dict)
    consume_tps: float = member(DOUBLE, default=0.0)

    def total_diff(self):
        """``computeTotalDiff``: the messages not yet consumed, over all queues."""
        return sum(w.broker_offset - w.consumer_offset for w in self.offset_table.values())


@json_bean
class ResetOffsetBody(JsonBean):
    """INVOKE_BROKER_TO_RESET_OFFSET's answer and RESET_CONSUMER_CLIENT_OFFSET's body."""

    offset_table: dict = member(MapOf(BeanOf(MessageQueue), LONG), factory=dict)


@json_bean
class GetConsumerStatusBody(JsonBean):
    """GET_CONSUMER_STATUS_FROM_CLIENT's answer (a client's offsets of one topic) and
    INVOKE_BROKER_TO_GET_CONSUMER_STATUS's (every client's, by client id)."""

    message_queue_table: dict = member(MapOf(BeanOf(MessageQueue), LONG), factory=dict)
    consumer_table: dict = member(MapOf(STRING, MapOf(BeanOf(MessageQueue), LONG)), factory=dict)


@json_bean
class MessageQueueForC(JsonBean):
    """One queue and its new offset, for the C++ client (``MessageQueueForC``)."""

    topic: str = member(STRING)
    broker_name: str = member(STRING)
    queue_id: int = member(INT, default=0)
    offset: int = member(LONG, default=0)


@json_bean
class ResetOffsetBodyForC(JsonBean):
    """RESET_CONSUMER_CLIENT_OFFSET's body for a C++ client: a list instead of a map."""

    offset_table: list = member(ListOf(BeanOf(MessageQueueForC)), factory=list)
