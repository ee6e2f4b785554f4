"""The bodies of the broker statistics requests: VIEW_BROKER_STATS_DATA's
``BrokerStatsData`` (``mqadmin statsAll``), GET_BROKER_CONSUME_STATS'
``ConsumeStatsList`` (``mqadmin brokerConsumeStats``) and QUERY_CONSUME_TIME_SPAN's
``QueryConsumeTimeSpanBody``."""

import time

from rmqproto.codec.bodies._bean import (
    DOUBLE, LONG, STRING, BeanOf, JsonBean, ListOf, MapOf, json_bean, member,
)
from rmqproto.codec.bodies.client import MessageQueue
from rmqproto.codec.bodies.offsets import ConsumeStats

__all__ = ["BrokerStatsItem", "BrokerStatsData", "ConsumeStatsList", "QueueTimeSpan",
           "QueryConsumeTimeSpanBody", "format_store_time"]


def format_store_time(ms):
    """``UtilAll.formatDate(new Date(ms), "yyyy-MM-dd#HH:mm:ss:SSS")`` in local time."""
    seconds, millis = divmod(ms, 1000)
    return time.strftime("%Y-%m-%d#%H:%M:%S", time.localtime(seconds)) + ":%03d" % millis


@json_bean
class BrokerStatsItem(JsonBean):
    """One window's figures: ``sum``, ``tps``, ``avgpt``."""

    sum: int = member(LONG, default=0)
    tps: float = member(DOUBLE, default=0.0)
    avgpt: float = member(DOUBLE, default=0.0)


@json_bean
class BrokerStatsData(JsonBean):
    stats_minute: BrokerStatsItem = member(BeanOf(BrokerStatsItem), default=None)
    stats_hour: BrokerStatsItem = member(BeanOf(BrokerStatsItem), default=None)
    stats_day: BrokerStatsItem = member(BeanOf(BrokerStatsItem), default=None)


@json_bean
class ConsumeStatsList(JsonBean):
    """Per subscription group (one single-entry map each), a ``ConsumeStats`` per topic."""

    consume_stats_list: list = member(ListOf(MapOf(STRING, ListOf(BeanOf(ConsumeStats)))),
                                      factory=list)
    broker_addr: str = member(STRING, default=None)
    total_diff: int = member(LONG, default=0)


@json_bean
class QueueTimeSpan(JsonBean):
    """One queue's oldest, newest and consumed store times and how long its next message has
    waited (``delayTime``, 0 when all is consumed); fastjson also writes the ``…Str`` getters."""

    message_queue: MessageQueue = member(BeanOf(MessageQueue), default=None)
    min_time_stamp: int = member(LONG, default=0)
    max_time_stamp: int = member(LONG, default=0)
    consume_time_stamp: int = member(LONG, default=0)
    delay_time: int = member(LONG, default=0)
    min_time_stamp_str: str = member(STRING, default=None)
    max_time_stamp_str: str = member(STRING, default=None)
    consume_time_stamp_str: str = member(STRING, default=None)

    @classmethod
    def of(cls, message_queue, min_time, max_time, consume_time, delay_time):
        return cls(message_queue, min_time, max_time, consume_time, delay_time,
                   format_store_time(min_time), format_store_time(max_time),
                   format_store_time(consume_time))


@json_bean
class QueryConsumeTimeSpanBody(JsonBean):
    """QUERY_CONSUME_TIME_SPAN's answer: a :class:`QueueTimeSpan` per write queue."""

    consume_time_span_set: list = member(ListOf(BeanOf(QueueTimeSpan)), factory=list)
