"""The bodies of the broker statistics requests: VIEW_BROKER_STATS_DATA's
``BrokerStatsData`` (``mqadmin statsAll``) and GET_BROKER_CONSUME_STATS'
``ConsumeStatsList`` (``mqadmin brokerConsumeStats``)."""

from rmqproto.codec.bodies._bean import (
    DOUBLE, LONG, STRING, BeanOf, JsonBean, ListOf, MapOf, json_bean, member,
)
from rmqproto.codec.bodies.offsets import ConsumeStats

__all__ = ["BrokerStatsItem", "BrokerStatsData", "ConsumeStatsList"]


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
