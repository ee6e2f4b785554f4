"""The NameServer's route tables as a pure object (Java ``RouteInfoManager``; ``docs/nameserver.md``).

Four tables as in Java's ``RouteInfoManager``: topic → {broker name → QueueData},
broker name → BrokerData, cluster → broker names, broker address → live info (last
update, data version, connection, HA server address); plus the filter-server table.
No I/O and no clock: every time-dependent call takes ``now`` in milliseconds, and a
connection is an opaque object the caller owns.
"""

from rmqproto.codec.bodies.route import (
    MASTER_ID, BrokerData, ClusterInfo, QueueData, TopicList, TopicRouteData,
)
from rmqproto.codec.bodies.topic import PERM_READ, PERM_WRITE

__all__ = ["BROKER_CHANNEL_EXPIRED_TIME", "BrokerLiveInfo", "RegisterBrokerResult",
           "RouteInfoManager", "TOPIC_SYS_FLAG_UNIT", "TOPIC_SYS_FLAG_UNIT_SUB"]

#: Java's ``BROKER_CHANNEL_EXPIRED_TIME``: a broker silent this long (ms) is dropped.
BROKER_CHANNEL_EXPIRED_TIME = 120_000

TOPIC_SYS_FLAG_UNIT = 1
TOPIC_SYS_FLAG_UNIT_SUB = 2


class BrokerLiveInfo:
    """When a broker address last reported, with what data version, over which connection."""

    __slots__ = ("last_update", "data_version", "connection", "ha_server_addr")

    def __init__(self, last_update, data_version, connection, ha_server_addr):
        self.last_update = last_update
        self.data_version = data_version
        self.connection = connection
        self.ha_server_addr = ha_server_addr


class RegisterBrokerResult:
    """What REGISTER_BROKER answers: a slave learns its master's HA and remoting addresses.

    ``first`` tells whether the address was not registered before (for logging).
    """

    __slots__ = ("ha_server_addr", "master_addr", "first")

    def __init__(self, ha_server_addr=None, master_addr=None, first=False):
        self.ha_server_addr = ha_server_addr
        self.master_addr = master_addr
        self.first = first


class RouteInfoManager:
    """Broker registrations and the topic routes derived from them."""

    def __init__(self, expired_time=BROKER_CHANNEL_EXPIRED_TIME):
        self.expired_time = expired_time
        self.version = 0  # bumped whenever a route could have changed (answer caches key on it)
        self.topic_queue_table = {}
        self.broker_addr_table = {}
        self.cluster_addr_table = {}  # cluster -> {broker name: None}, an ordered set
        self.broker_live_table = {}
        self.filter_server_table = {}

    # ------------------------------------------------------------ registration

    def register_broker(self, cluster_name, broker_addr, broker_name, broker_id, ha_server_addr,
                        topic_config_wrapper, filter_server_list, connection, now):
        """Record a broker's heartbeat and (for a master) its topics, as ``RouteInfoManager#registerBroker`` does."""
        self.cluster_addr_table.setdefault(cluster_name, {})[broker_name] = None
        broker_data = self.broker_addr_table.get(broker_name)
        register_first = broker_data is None
        if broker_data is None:
            broker_data = BrokerData(broker_name=broker_name, cluster=cluster_name, broker_addrs={})
            self.broker_addr_table[broker_name] = broker_data
        addrs = broker_data.broker_addrs
        # The same address may hold only one id: a slave promoted to master loses its old id.
        for old_id in [i for i, a in addrs.items() if a == broker_addr and i != broker_id]:
            del addrs[old_id]
            self.version += 1
        old_addr = addrs.get(broker_id)
        addrs[broker_id] = broker_addr
        register_first = register_first or old_addr is None
        if old_addr != broker_addr:
            self.version += 1

        data_version = topic_config_wrapper.data_version
        if broker_id == MASTER_ID and (register_first or self.is_broker_topic_config_changed(
                broker_addr, data_version)):
            for topic_config in topic_config_wrapper.topic_config_table.values():
                self._create_and_update_queue_data(broker_name, topic_config)
            self.version += 1

        previous = self.broker_live_table.get(broker_addr)
        self.broker_live_table[broker_addr] = BrokerLiveInfo(now, data_version, connection,
                                                             ha_server_addr)
        if filter_server_list is not None:
            previous_filters = self.filter_server_table.get(broker_addr)
            if filter_server_list:
                self.filter_server_table[broker_addr] = list(filter_server_list)
            else:
                self.filter_server_table.pop(broker_addr, None)
            if previous_filters != self.filter_server_table.get(broker_addr):
                self.version += 1

        result = RegisterBrokerResult(first=previous is None)
        if broker_id != MASTER_ID:
            master_addr = addrs.get(MASTER_ID)
            master_live = self.broker_live_table.get(master_addr) if master_addr else None
            if master_live is not None:
                result.ha_server_addr = master_live.ha_server_addr
                result.master_addr = master_addr
        return result

    def _create_and_update_queue_data(self, broker_name, topic_config):
        queue_data = QueueData(broker_name=broker_name,
                               read_queue_nums=topic_config.read_queue_nums,
                               write_queue_nums=topic_config.write_queue_nums,
                               perm=topic_config.perm, topic_sys_flag=topic_config.topic_sys_flag)
        self.topic_queue_table.setdefault(topic_config.topic_name, {})[broker_name] = queue_data

    def is_broker_topic_config_changed(self, broker_addr, data_version):
        """True unless the address is live with an equal data version."""
        return self.query_broker_topic_config(broker_addr) != data_version

    def query_broker_topic_config(self, broker_addr):
        """The data version last registered from ``broker_addr``, or ``None``."""
        live = self.broker_live_table.get(broker_addr)
        return live.data_version if live is not None else None

    def update_broker_info_update_timestamp(self, broker_addr, now):
        """Refresh a live broker's heartbeat time (QUERY_DATA_VERSION with an unchanged version)."""
        live = self.broker_live_table.get(broker_addr)
        if live is not None:
            live.last_update = now

    def unregister_broker(self, cluster_name, broker_addr, broker_name, broker_id):
        """Forget one address; its broker name, cluster entry and queues go once no address is left."""
        self.version += 1
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is None:
            return
        broker_data.broker_addrs.pop(broker_id, None)
        if broker_data.broker_addrs:
            return
        del self.broker_addr_table[broker_name]
        names = self.cluster_addr_table.get(cluster_name)
        if names is not None:
            names.pop(broker_name, None)
            if not names:
                del self.cluster_addr_table[cluster_name]
        self._remove_topics_of(broker_name)

    def _remove_topics_of(self, broker_name):
        for topic in list(self.topic_queue_table):
            queue_datas = self.topic_queue_table[topic]
            queue_datas.pop(broker_name, None)
            if not queue_datas:
                del self.topic_queue_table[topic]

    # ------------------------------------------------------------ liveness

    def scan_not_active_brokers(self, now):
        """Drop every broker silent for longer than ``expired_time``.

        Returns ``[(broker_addr, connection)]`` of the dropped ones: the caller closes
        those connections (as Java's ``scanNotActiveBroker`` does).
        """
        expired = [(addr, live.connection) for addr, live in self.broker_live_table.items()
                   if live.last_update + self.expired_time < now]
        for addr, connection in expired:
            del self.broker_live_table[addr]
            self.on_connection_closed(addr, connection)
        return expired

    def on_connection_closed(self, remote_addr, connection):
        """A connection closed: remove the broker address registered over it (or ``remote_addr``).

        Returns the broker address removed, or ``None``.
        """
        found = None
        if connection is not None:
            for addr, live in self.broker_live_table.items():
                if live.connection is connection:
                    found = addr
                    break
        found = found or remote_addr
        if not found:
            return None
        self.version += 1
        self.broker_live_table.pop(found, None)
        self.filter_server_table.pop(found, None)
        broker_name_found = None
        remove_broker_name = False
        for name, broker_data in list(self.broker_addr_table.items()):
            addrs = broker_data.broker_addrs
            for broker_id, addr in list(addrs.items()):
                if addr == found:
                    broker_name_found = name
                    del addrs[broker_id]
                    break
            if not addrs:
                remove_broker_name = True
                del self.broker_addr_table[name]
            if broker_name_found is not None:
                break
        if broker_name_found is None:
            return None
        if remove_broker_name:
            for cluster, names in list(self.cluster_addr_table.items()):
                if broker_name_found in names:
                    del names[broker_name_found]
                    if not names:
                        del self.cluster_addr_table[cluster]
                    break
            self._remove_topics_of(broker_name_found)
        return found

    # ------------------------------------------------------------ queries

    def pickup_topic_route_data(self, topic):
        """The route of ``topic``, or ``None`` when it has no queues or no live broker."""
        queue_datas = self.topic_queue_table.get(topic)
        if not queue_datas:
            return None
        broker_datas = []
        filter_servers = {}
        for name in queue_datas:
            broker_data = self.broker_addr_table.get(name)
            if broker_data is None:
                continue
            broker_datas.append(BrokerData(broker_name=broker_data.broker_name,
                                           cluster=broker_data.cluster,
                                           broker_addrs=dict(broker_data.broker_addrs)))
            for addr in broker_data.broker_addrs.values():
                if addr in self.filter_server_table:
                    filter_servers[addr] = list(self.filter_server_table[addr])
        if not broker_datas:
            return None
        return TopicRouteData(queue_datas=[_copy_queue_data(q) for q in queue_datas.values()],
                              broker_datas=broker_datas, filter_server_table=filter_servers)

    def get_all_cluster_info(self):
        """GET_BROKER_CLUSTER_INFO's body."""
        return ClusterInfo(broker_addr_table=dict(self.broker_addr_table),
                           cluster_addr_table={c: list(n) for c, n in self.cluster_addr_table.items()})

    def get_all_topic_list(self):
        return TopicList(topic_list=list(self.topic_queue_table))

    def get_topics_by_cluster(self, cluster):
        """Topics with queues on a broker of ``cluster`` (empty for an unknown cluster, as Java)."""
        topics = {}
        for name in self.cluster_addr_table.get(cluster, ()):
            for topic, queue_datas in self.topic_queue_table.items():
                if name in queue_datas:
                    topics[topic] = None
        return TopicList(topic_list=list(topics))

    def get_system_topic_list(self):
        """Cluster names and broker names (Java's "system topics"), with one broker address."""
        topics = {}
        for cluster, names in self.cluster_addr_table.items():
            topics[cluster] = None
            topics.update(names)
        broker_addr = None
        for broker_data in self.broker_addr_table.values():
            if broker_data.broker_addrs:
                broker_addr = next(iter(broker_data.broker_addrs.values()))
                break
        return TopicList(topic_list=list(topics), broker_addr=broker_addr)

    def topics_where(self, predicate):
        """Topics whose first queue data satisfies ``predicate`` (the unit-topic lists)."""
        return TopicList(topic_list=[topic for topic, queue_datas in self.topic_queue_table.items()
                                     if predicate(next(iter(queue_datas.values())))])

    # ------------------------------------------------------------ administration

    def delete_topic(self, topic, cluster_name=None):
        """Remove a topic everywhere, or only from the brokers of ``cluster_name``."""
        self.version += 1
        if not cluster_name:
            self.topic_queue_table.pop(topic, None)
            return
        queue_datas = self.topic_queue_table.get(topic)
        if queue_datas is None:
            return
        for name in self.cluster_addr_table.get(cluster_name, ()):
            queue_datas.pop(name, None)
        if not queue_datas:
            del self.topic_queue_table[topic]

    def wipe_write_perm_of_broker(self, broker_name):
        """Clear the WRITE bit of the broker's queues; the number of topics touched."""
        return self._set_perm(broker_name, lambda perm: perm & ~PERM_WRITE)

    def add_write_perm_of_broker(self, broker_name):
        """Set the broker's queues to READ|WRITE; the number of topics touched."""
        return self._set_perm(broker_name, lambda perm: PERM_READ | PERM_WRITE)

    def _set_perm(self, broker_name, change):
        self.version += 1
        count = 0
        for queue_datas in self.topic_queue_table.values():
            queue_data = queue_datas.get(broker_name)
            if queue_data is not None:
                queue_data.perm = change(queue_data.perm)
                count += 1
        return count


def _copy_queue_data(queue_data):
    return QueueData(broker_name=queue_data.broker_name,
                     read_queue_nums=queue_data.read_queue_nums,
                     write_queue_nums=queue_data.write_queue_nums,
                     perm=queue_data.perm, topic_sys_flag=queue_data.topic_sys_flag)

