"""Producer and consumer groups seen by the broker: Java's ``ProducerManager``,
``ConsumerManager``, ``ConsumerGroupInfo`` and ``ClientHousekeepingService``.

HEART_BEAT registers a client's connection in each of its producer and consumer groups
(consumers with their subscriptions, which pulls without the SUBSCRIPTION flag use);
UNREGISTER_CLIENT and a closed connection remove it; a connection without a heartbeat for
120 s is closed and forgotten (scanned every 10 s). When a consumer group's members or
subscriptions change, every member gets a oneway NOTIFY_CONSUMER_IDS_CHANGED.

:class:`ProducerTable` and :class:`ConsumerTable` are pure (time passed in, connections
are opaque keys); their methods return the groups whose members must be told.
:class:`ClientManager` wires them to a broker controller and the network.
"""

from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from rmqproto.broker.topicconfig import retry_topic
from rmqproto.codec import headers as h
from rmqproto.codec.bodies.client import ConsumeType
from rmqproto.codec.bodies.topic import PERM_READ, PERM_WRITE, TOPIC_SYS_FLAG_UNIT_SUB
from rmqproto.codec.codes import RequestCode
from rmqproto.codec.frame import RemotingCommand

__all__ = ["CHANNEL_EXPIRED_TIMEOUT", "SCAN_INTERVAL", "ClientChannelInfo", "ConsumerGroupInfo",
           "ProducerTable", "ConsumerTable", "ClientManager"]

log = Logger()

#: ms without a heartbeat after which a client's connection is dropped.
CHANNEL_EXPIRED_TIMEOUT = 120_000
#: ms between two scans for such connections.
SCAN_INTERVAL = 10_000


class ClientChannelInfo:
    """One client on one connection: its id, language, version and last heartbeat (ms)."""

    __slots__ = ("connection", "client_id", "language", "version", "last_update_timestamp")

    def __init__(self, connection, client_id, language="JAVA", version=0, last_update_timestamp=0):
        self.connection = connection
        self.client_id = client_id
        self.language = language
        self.version = version
        self.last_update_timestamp = last_update_timestamp

    def expired(self, now):
        return now - self.last_update_timestamp > CHANNEL_EXPIRED_TIMEOUT

    def __repr__(self):
        return "ClientChannelInfo(%r, %s, v%s)" % (self.client_id, self.language, self.version)


class ConsumerGroupInfo:
    """The members of one consumer group and the union of their subscriptions."""

    def __init__(self, group_name, consume_type=None, message_model=None, consume_from_where=None):
        self.group_name = group_name
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.subscription_table = {}
        self.channel_info_table = {}
        self.last_update_timestamp = 0

    def find_subscription_data(self, topic):
        return self.subscription_table.get(topic)

    def all_connections(self):
        return list(self.channel_info_table)

    def all_client_ids(self):
        return [info.client_id for info in self.channel_info_table.values()]

    def find_channel(self, client_id):
        for info in self.channel_info_table.values():
            if info.client_id == client_id:
                return info
        return None

    def update_channel(self, info, consume_type, message_model, consume_from_where, now):
        """Record a heartbeat; whether the connection is new to the group."""
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        old = self.channel_info_table.get(info.connection)
        if old is None or old.client_id != info.client_id:
            # a different client id on a known connection replaces it, but is no new member
            self.channel_info_table[info.connection] = info
            current = info
        else:
            current = old
        self.last_update_timestamp = current.last_update_timestamp = now
        return old is None

    def update_subscription(self, subscriptions, now):
        """Take the subscriptions of a heartbeat; whether a topic was added or removed.

        A topic already present is replaced only by a newer ``subVersion`` (which does not
        count as a change, as in Java).
        """
        changed = False
        topics = set()
        for sub in subscriptions:
            topics.add(sub.topic)
            old = self.subscription_table.get(sub.topic)
            if old is None:
                self.subscription_table[sub.topic] = sub
                changed = True
            elif sub.sub_version > old.sub_version:
                self.subscription_table[sub.topic] = sub
        for topic in [t for t in self.subscription_table if t not in topics]:
            log.warn("subscription changed, group: {group} remove topic {topic}",
                     group=self.group_name, topic=topic)
            del self.subscription_table[topic]
            changed = True
        self.last_update_timestamp = now
        return changed


class ProducerTable:
    """``group → {connection → ClientChannelInfo}`` of producers."""

    def __init__(self):
        self.group_channel_table = {}

    def register_producer(self, group, info, now):
        channels = self.group_channel_table.setdefault(group, {})
        existing = channels.get(info.connection)
        if existing is None:
            channels[info.connection] = existing = info
            log.info("new producer connected, group: {group} channel: {info}", group=group, info=info)
        existing.last_update_timestamp = now

    def unregister_producer(self, group, connection):
        channels = self.group_channel_table.get(group)
        if channels and channels.pop(connection, None) is not None and not channels:
            del self.group_channel_table[group]

    def connection_closed(self, connection):
        for group in list(self.group_channel_table):
            self.unregister_producer(group, connection)

    def scan_not_active(self, now):
        """Forget connections idle for too long; the :class:`ClientChannelInfo` of each."""
        expired = []
        for group, channels in list(self.group_channel_table.items()):
            for connection, info in list(channels.items()):
                if info.expired(now):
                    expired.append(info)
                    del channels[connection]
                    log.warn("remove expired producer channel {info}, group {group}",
                             info=info, group=group)
            if not channels:
                del self.group_channel_table[group]
        return expired

    def group_count(self):
        return len(self.group_channel_table)


class ConsumerTable:
    """``group → ConsumerGroupInfo``. Methods that change membership return the groups to
    notify as ``[(group, [connections])]`` (Java's ``ConsumerGroupEvent.CHANGE``)."""

    def __init__(self):
        self.consumer_table = {}

    def get(self, group):
        return self.consumer_table.get(group)

    def find_subscription_data(self, group, topic):
        info = self.consumer_table.get(group)
        return info.find_subscription_data(topic) if info is not None else None

    def find_subscription_data_count(self, group):
        info = self.consumer_table.get(group)
        return len(info.subscription_table) if info is not None else 0

    def query_topic_consume_by_who(self, topic):
        return {g for g, info in self.consumer_table.items() if topic in info.subscription_table}

    def register_consumer(self, group, info, consume_type, message_model, consume_from_where,
                          subscriptions, notify, now):
        """A consumer's heartbeat; the groups to notify."""
        group_info = self.consumer_table.get(group)
        if group_info is None:
            group_info = self.consumer_table[group] = ConsumerGroupInfo(
                group, consume_type, message_model, consume_from_where)
        new_channel = group_info.update_channel(info, consume_type, message_model,
                                                consume_from_where, now)
        new_subscription = group_info.update_subscription(subscriptions, now)
        if (new_channel or new_subscription) and notify:
            return [(group, group_info.all_connections())]
        return []

    def unregister_consumer(self, group, connection, notify):
        group_info = self.consumer_table.get(group)
        if group_info is None:
            return []
        group_info.channel_info_table.pop(connection, None)
        if not group_info.channel_info_table:
            del self.consumer_table[group]
        return [(group, group_info.all_connections())] if notify else []

    def connection_closed(self, connection):
        """Remove ``connection`` from every group; each such group is notified (Java always does)."""
        events = []
        for group, group_info in list(self.consumer_table.items()):
            if group_info.channel_info_table.pop(connection, None) is not None:
                if not group_info.channel_info_table:
                    del self.consumer_table[group]
                events.append((group, group_info.all_connections()))
        return events

    def scan_not_active(self, now):
        """Forget connections idle for too long (no notification, as in Java)."""
        expired = []
        for group, group_info in list(self.consumer_table.items()):
            for connection, info in list(group_info.channel_info_table.items()):
                if info.expired(now):
                    expired.append(info)
                    del group_info.channel_info_table[connection]
                    log.warn("remove expired consumer channel {info}, group {group}",
                             info=info, group=group)
            if not group_info.channel_info_table:
                del self.consumer_table[group]
        return expired


class ClientManager:
    """The broker's client tracking: heartbeats, unregistrations, closed and idle connections.

    ``controller`` gives ``reactor`` (time and timers), ``config``
    (``notifyConsumerIdsChangedEnable``), ``subscription_group_manager`` and
    ``topic_config_manager`` (retry topics are created on a consumer's heartbeat).
    """

    def __init__(self, controller):
        self.controller = controller
        self.producers = ProducerTable()
        self.consumers = ConsumerTable()
        self._scan = None

    def now(self):
        return int(self.controller.reactor.seconds() * 1000)

    # ------------------------------------------------------------ events

    def heartbeat(self, connection, heartbeat_data, language="JAVA", version=0):
        """Register every producer and consumer group of a HEART_BEAT body."""
        now = self.now()
        info = ClientChannelInfo(connection, heartbeat_data.client_id, language, version, now)
        for data in heartbeat_data.consumer_data_set:
            group_config = self.controller.subscription_group_manager.find_subscription_group_config(
                data.group_name)
            notify = True
            if group_config is not None:
                notify = group_config.notify_consumer_ids_changed_enable
                self.controller.topic_config_manager.create_topic_in_send_message_back_method(
                    retry_topic(data.group_name), group_config.retry_queue_nums,
                    PERM_READ | PERM_WRITE, TOPIC_SYS_FLAG_UNIT_SUB if data.unit_mode else 0)
            events = self.consumers.register_consumer(
                data.group_name, info, data.consume_type, data.message_model, data.consume_from_where,
                data.subscription_data_set, notify, now)
            self.notify(events)
        for data in heartbeat_data.producer_data_set:
            self.producers.register_producer(data.group_name, info, now)

    def unregister(self, connection, producer_group=None, consumer_group=None):
        """UNREGISTER_CLIENT."""
        if producer_group is not None:
            self.producers.unregister_producer(producer_group, connection)
        if consumer_group is not None:
            group_config = self.controller.subscription_group_manager.find_subscription_group_config(
                consumer_group)
            notify = group_config.notify_consumer_ids_changed_enable if group_config else True
            self.notify(self.consumers.unregister_consumer(consumer_group, connection, notify))

    def connection_lost(self, connection, reason=None):
        """A ``RemotingFactory.connection_lost_hooks`` hook: forget the connection's clients."""
        self.producers.connection_closed(connection)
        self.notify(self.consumers.connection_closed(connection))

    def scan_not_active_channel(self):
        """Close and forget connections silent for more than 120 s."""
        now = self.now()
        for info in self.producers.scan_not_active(now) + self.consumers.scan_not_active(now):
            close = getattr(info.connection, "close", None)
            if close is not None:
                close()

    def notify(self, events):
        """Send NOTIFY_CONSUMER_IDS_CHANGED (oneway) to each member of each changed group."""
        if not self.controller.config.get("notifyConsumerIdsChangedEnable", True):
            return
        for group, connections in events:
            header = h.NotifyConsumerIdsChangedRequestHeader(consumer_group=group)
            for connection in connections:
                request = RemotingCommand(int(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED),
                                          ext_fields=header.to_ext_fields())
                connection.send_oneway(request).addErrback(
                    lambda failure, g=group: log.warn(
                        "notifyConsumerIdsChanged to {group} failed: {error}", group=g,
                        error=failure.getErrorMessage()))

    # ------------------------------------------------------------ queries

    def consumer_group_info(self, group):
        return self.consumers.get(group)

    def find_subscription_data(self, group, topic):
        return self.consumers.find_subscription_data(group, topic)

    def is_push_consumer(self, group):
        info = self.consumers.get(group)
        return info is not None and info.consume_type == ConsumeType.CONSUME_PASSIVELY

    # ------------------------------------------------------------ housekeeping

    def start(self):
        """Scan for idle connections every 10 s (first after 10 s); starting twice is harmless."""
        if self._scan is not None:
            return
        self._scan = LoopingCall(self.scan_not_active_channel)
        self._scan.clock = self.controller.reactor
        self._scan.start(SCAN_INTERVAL / 1000, now=False)

    def stop(self):
        if self._scan is not None and self._scan.running:
            self._scan.stop()
        self._scan = None
