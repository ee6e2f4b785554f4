"""NameServer answers: routes, cluster info, topic lists, key-value tables (``TopicRouteData``, ``ClusterInfo``, …).

``brokerAddrs`` maps broker ids (Java ``Long``) to addresses: fastjson's default
mode writes the ids unquoted (``{0:"10.0.0.1:10911"}``), the standard variant
(``to_json(standard=True)``) quotes them and sorts every map. Decoding accepts both
and yields the same object.
"""

from rmqproto.codec.bodies._bean import (
    INT, LONG, STRING, BeanOf, JsonBean, ListOf, MapOf, json_bean, member,
)

__all__ = ["MASTER_ID", "QueueData", "BrokerData", "TopicRouteData", "ClusterInfo", "TopicList", "KVTable"]

#: ``MixAll.MASTER_ID``: the broker id of a master.
MASTER_ID = 0


@json_bean
class QueueData(JsonBean):
    """One broker's queues of a topic (``topicSysFlag``; spelled ``topicSynFlag`` before 4.9.0)."""

    broker_name: str = member(STRING)
    read_queue_nums: int = member(INT, default=0)
    write_queue_nums: int = member(INT, default=0)
    perm: int = member(INT, default=0)
    topic_sys_flag: int = member(INT, default=0)


@json_bean
class BrokerData(JsonBean):
    """A broker name's addresses by broker id (0 = master)."""

    broker_name: str = member(STRING)
    cluster: str = member(STRING, default=None)
    broker_addrs: dict = member(MapOf(LONG, STRING), default=None)

    def master_addr(self):
        """The master's address, or ``None``."""
        return (self.broker_addrs or {}).get(MASTER_ID)


@json_bean
class TopicRouteData(JsonBean):
    """GET_ROUTEINFO_BY_TOPIC's body (``TopicRouteData``, ``QueueData``, ``BrokerData``)."""

    queue_datas: list = member(ListOf(BeanOf(QueueData)), default=None)
    broker_datas: list = member(ListOf(BeanOf(BrokerData)), default=None)
    filter_server_table: dict = member(MapOf(STRING, ListOf(STRING)), default=None)
    order_topic_conf: str = member(STRING, default=None)


@json_bean
class ClusterInfo(JsonBean):
    """GET_BROKER_CLUSTER_INFO's body: brokers by name, broker names by cluster."""

    broker_addr_table: dict = member(MapOf(STRING, BeanOf(BrokerData)), default=None)
    cluster_addr_table: dict = member(MapOf(STRING, ListOf(STRING)), default=None)


@json_bean
class TopicList(JsonBean):
    """``{"topicList":[…]}``, with ``brokerAddr`` for some broker-side lists."""

    topic_list: list = member(ListOf(STRING), factory=list)
    broker_addr: str = member(STRING, default=None)


@json_bean
class KVTable(JsonBean):
    """``{"table":{…}}``: REGISTER_BROKER's answer, GET_KVLIST_BY_NAMESPACE, GET_BROKER_RUNTIME_INFO."""

    table: dict = member(MapOf(STRING, STRING), factory=dict)
