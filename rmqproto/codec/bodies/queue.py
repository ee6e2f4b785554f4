"""QUERY_CONSUME_QUEUE's answer (``mqadmin queryCq``): a consume queue's bounds and units,
Java's ``QueryConsumeQueueResponseBody`` and ``ConsumeQueueData``."""

from rmqproto.codec.bodies._bean import (
    BOOL, INT, LONG, STRING, BeanOf, JsonBean, ListOf, json_bean, member,
)
from rmqproto.codec.bodies.client import SubscriptionData

__all__ = ["ConsumeQueueData", "QueryConsumeQueueResponseBody"]


@json_bean
class ConsumeQueueData(JsonBean):
    """One consume-queue unit; the extension members are set only for units kept in a
    ``ConsumeQueueExt`` (never here: this store writes no extension file)."""

    physic_offset: int = member(LONG, default=0)
    physic_size: int = member(INT, default=0)
    tags_code: int = member(LONG, default=0)
    extend_data_json: str = member(STRING, default=None)
    bit_map: str = member(STRING, default=None)
    eval: bool = member(BOOL, default=False)
    msg: str = member(STRING, default=None)


@json_bean
class QueryConsumeQueueResponseBody(JsonBean):
    """The queue's min and max logical offsets, the units asked for and, when a group was
    named, its subscription (``filterData`` says whether it is online)."""

    subscription_data: SubscriptionData = member(BeanOf(SubscriptionData), default=None)
    filter_data: str = member(STRING, default=None)
    queue_data: list = member(ListOf(BeanOf(ConsumeQueueData)), default=None)
    max_queue_index: int = member(LONG, default=0)
    min_queue_index: int = member(LONG, default=0)
