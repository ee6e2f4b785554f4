"""VIEW_BROKER_STATS_DATA, GET_BROKER_CONSUME_STATS and QUERY_CONSUME_TIME_SPAN, answered as
Java's ``AdminBrokerProcessor#ViewBrokerStatsData``, ``#fetchAllConsumeStatsInBroker`` and
``#queryConsumeTimeSpan`` do, and the per-topic part of GET_CONSUME_STATS they share
(:func:`add_topic_offsets`).
"""

from twisted.logger import Logger

from rmqproto.broker.stats import DAY, HOUR, MINUTE
from rmqproto.codec import headers as h
from rmqproto.codec.bodies.client import MessageQueue
from rmqproto.codec.bodies.offsets import ConsumeStats, OffsetWrapper
from rmqproto.codec.bodies.stats import (
    BrokerStatsData, BrokerStatsItem, ConsumeStatsList, QueryConsumeTimeSpanBody, QueueTimeSpan,
)
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R

__all__ = ["StatsProcessor", "consumed_topic_config", "add_topic_offsets"]

log = Logger()


def consumed_topic_config(controller, group, topic):
    """The config of ``topic`` if the consume statistics of ``group`` include it: the topic
    exists, and ``group`` subscribes to it or has no subscription at all."""
    topic_config = controller.topic_config_manager.select_topic_config(topic)
    if topic_config is None:
        log.warn("consumeStats, topic config not exist, {topic}", topic=topic)
        return None
    consumers = controller.client_manager.consumers
    if (consumers.find_subscription_data(group, topic) is None
            and consumers.find_subscription_data_count(group) > 0):
        log.warn("consumeStats, the consumer group[{group}], topic[{topic}] not exist",
                 group=group, topic=topic)
        return None
    return topic_config


def add_topic_offsets(controller, stats, group, topic, queue_count):
    """Add to ``stats`` (a ``ConsumeStats``) the broker and consumer offsets of ``group`` in
    queues ``0 … queue_count - 1`` of ``topic`` (with RocketMQ 5's ``pullOffset``, where the
    last pull ended), and the group's get TPS of the topic."""
    store = controller.store
    offsets = controller.consumer_offset_manager
    broker_name = controller.config["brokerName"]
    for queue_id in range(queue_count):
        broker_offset = max(0, store.get_max_offset_in_queue(topic, queue_id))
        consumer_offset = max(0, offsets.query_offset(group, topic, queue_id))
        pulled = offsets.query_pull_offset(group, topic, queue_id)
        wrapper = OffsetWrapper(broker_offset=broker_offset, consumer_offset=consumer_offset,
                                pull_offset=max(consumer_offset, pulled))
        if consumer_offset > 0:
            last = store.get_message_store_timestamp(topic, queue_id, consumer_offset - 1)
            if last > 0:
                wrapper.last_timestamp = last
        stats.offset_table[MessageQueue(topic, broker_name, queue_id)] = wrapper
    stats.consume_tps += controller.broker_stats_manager.tps_group_get_nums(group, topic)


def _item(snapshot):
    return BrokerStatsItem(sum=snapshot.sum, tps=snapshot.tps, avgpt=snapshot.avgpt)


class StatsProcessor:
    """The statistics requests of one broker (``controller``: broker_stats_manager, store,
    topic_config_manager, consumer_offset_manager, subscription_group_manager,
    client_manager)."""

    def __init__(self, controller):
        self.controller = controller

    def register_with(self, dispatcher):
        dispatcher.register(int(RC.VIEW_BROKER_STATS_DATA), self.view_broker_stats_data)
        dispatcher.register(int(RC.GET_BROKER_CONSUME_STATS), self.fetch_all_consume_stats)
        dispatcher.register(int(RC.QUERY_CONSUME_TIME_SPAN), self.query_consume_time_span)

    def view_broker_stats_data(self, request, context):
        """One counter's minute, hour and day figures (``mqadmin statsAll`` asks for
        ``TOPIC_PUT_NUMS`` of each topic and ``GROUP_GET_NUMS`` of each ``topic@group``)."""
        header = h.ViewBrokerStatsDataRequestHeader.from_ext_fields(request.ext_fields)
        item = self.controller.broker_stats_manager.stats_item(header.stats_name, header.stats_key)
        if item is None:
            return request.response(R.SYSTEM_ERROR, remark="The stats <%s> <%s> not exist"
                                    % (header.stats_name, header.stats_key))
        data = BrokerStatsData(stats_minute=_item(item.snapshot(MINUTE)),
                               stats_hour=_item(item.snapshot(HOUR)),
                               stats_day=_item(item.snapshot(DAY)))
        return request.response(R.SUCCESS, body=data.to_json())

    def fetch_all_consume_stats(self, request, context):
        """Every subscription group's offsets on each topic it has offsets for, over the
        topic's write queues (only ordered topics with ``isOrder``), and the total lag."""
        header = h.GetConsumeStatsInBrokerHeader.from_ext_fields(request.ext_fields)
        controller = self.controller
        groups = controller.subscription_group_manager.subscription_group_table
        offsets = controller.consumer_offset_manager
        answer = ConsumeStatsList(broker_addr=controller.broker_addr)
        for group in list(groups):
            per_topic = []
            for topic in sorted(offsets.which_topic_by_consumer(group)):
                topic_config = consumed_topic_config(controller, group, topic)
                if topic_config is None or (header.is_order and not topic_config.order):
                    continue
                stats = ConsumeStats()
                add_topic_offsets(controller, stats, group, topic, topic_config.write_queue_nums)
                answer.total_diff += stats.total_diff()
                per_topic.append(stats)
            answer.consume_stats_list.append({group: per_topic})
        return request.response(R.SUCCESS, body=answer.to_json())

    def query_consume_time_span(self, request, context):
        """For each write queue of the topic: the store times of its first and last message
        and of the group's last consumed one (the first's when it consumed none), and since
        when its next message waits (``DefaultMQAdminExt#queryConsumeTimeSpan``)."""
        header = h.QueryConsumeTimeSpanRequestHeader.from_ext_fields(request.ext_fields)
        controller = self.controller
        topic_config = controller.topic_config_manager.select_topic_config(header.topic)
        if topic_config is None:
            return request.response(R.TOPIC_NOT_EXIST, remark="topic[%s] not exist" % header.topic)
        store, topic = controller.store, header.topic
        now = int(controller.reactor.seconds() * 1000)
        spans = []
        for queue_id in range(topic_config.write_queue_nums):
            min_time = store.get_earliest_message_time(topic, queue_id)
            max_offset = store.get_max_offset_in_queue(topic, queue_id)
            max_time = store.get_message_store_timestamp(topic, queue_id, max_offset - 1)
            consumed = controller.consumer_offset_manager.query_offset(header.group, topic, queue_id)
            consume_time = (store.get_message_store_timestamp(topic, queue_id, consumed - 1)
                            if consumed > 0 else min_time)
            delay = 0
            if consumed < max_offset:
                delay = now - store.get_message_store_timestamp(topic, queue_id, consumed)
            spans.append(QueueTimeSpan.of(
                MessageQueue(topic, controller.config["brokerName"], queue_id),
                min_time, max_time, consume_time, delay))
        return request.response(R.SUCCESS, body=QueryConsumeTimeSpanBody(spans).to_json())
