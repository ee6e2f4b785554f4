"""``mqadmin``'s upkeep and inspection requests, answered as Java 4.9.7's
``AdminBrokerProcessor`` does: GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305, ``mqadmin`` 5.x
``exportMetrics``), CLEAN_EXPIRED_CONSUMEQUEUE (306, ``cleanExpiredCQ``), CLEAN_UNUSED_TOPIC
(316, ``cleanUnusedTopic``), CLONE_GROUP_OFFSET (314, ``cloneGroupOffset``) and
QUERY_CONSUME_QUEUE (321, ``queryCq``)."""

from twisted.logger import Logger

from rmqproto.codec import headers as h
from rmqproto.codec.bodies.queue import ConsumeQueueData, QueryConsumeQueueResponseBody
from rmqproto.codec.bodies.route import TopicList
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R

__all__ = ["MaintenanceProcessor"]

log = Logger()


class MaintenanceProcessor:
    """The upkeep requests of one broker (``controller``: topic_config_manager, store,
    consumer_offset_manager, client_manager)."""

    def __init__(self, controller):
        self.controller = controller

    def register_with(self, dispatcher):
        dispatcher.register(int(RC.GET_SYSTEM_TOPIC_LIST_FROM_BROKER), self.get_system_topic_list)
        dispatcher.register(int(RC.CLEAN_UNUSED_TOPIC), self.clean_unused_topic)
        dispatcher.register(int(RC.CLONE_GROUP_OFFSET), self.clone_group_offset)
        dispatcher.register(int(RC.CLEAN_EXPIRED_CONSUMEQUEUE), self.clean_expired_consume_queue)
        dispatcher.register(int(RC.QUERY_CONSUME_QUEUE), self.query_consume_queue)

    def get_system_topic_list(self, request, context):
        """``TopicValidator.getSystemTopicSet()``: Java's fixed system topics and this broker's
        own (cluster name, broker name, …)."""
        topics = sorted(self.controller.topic_config_manager.system_topic_set())
        return request.response(R.SUCCESS, body=TopicList(topic_list=topics).to_json())

    def clean_unused_topic(self, request, context):
        """Drop the consume queues of every topic no longer configured."""
        log.warn("invoke cleanUnusedTopic by {peer}", peer=context.peer)
        self.controller.store.clean_unused_topic(
            set(self.controller.topic_config_manager.topic_config_table))
        return request.response(R.SUCCESS)

    def clean_expired_consume_queue(self, request, context):
        """Destroy the consume queues whose messages the commit log no longer holds."""
        log.warn("invoke cleanExpiredConsumeQueue by {peer}", peer=context.peer)
        self.controller.store.clean_expired_consumer_queue()
        return request.response(R.SUCCESS)

    def query_consume_queue(self, request, context):
        """A queue's min and max offsets and up to ``count`` units from ``index``; with a
        ``consumerGroup``, its subscription of the topic. An ``index`` not in the queue is
        answered SUCCESS with a remark and no body, as Java answers it."""
        header = h.QueryConsumeQueueRequestHeader.from_ext_fields(request.ext_fields)
        topic, queue_id, index = header.topic, header.queue_id, header.index
        found = None if topic is None else self.controller.store.query_consume_queue(
            topic, queue_id, index, header.count)
        if found is None:
            return request.response(R.SYSTEM_ERROR, remark="%d@%s is not exist!" % (queue_id, topic))
        min_offset, max_offset, units = found
        body = QueryConsumeQueueResponseBody(max_queue_index=max_offset, min_queue_index=min_offset)
        if header.consumer_group is not None:
            subscription = self.controller.client_manager.consumers.find_subscription_data(
                header.consumer_group, topic)
            body.subscription_data = subscription
            # the group's ConsumerFilterData as JSON: tag subscriptions have none
            body.filter_data = ("%s@%s is not online!" % (header.consumer_group, topic)
                                if subscription is None else "null")
        if units is None:
            return request.response(R.SUCCESS, remark="Index %d of %d@%s is not exist!"
                                     % (index, queue_id, topic))
        body.queue_data = [ConsumeQueueData(*unit) for unit in units]
        return request.response(R.SUCCESS, body=body.to_json())

    def clone_group_offset(self, request, context):
        """Copy ``srcGroup``'s offsets of ``topic`` (or of all its topics) to ``destGroup``;
        unless ``offline``, only topics the source group still subscribes to when it has any
        subscription. Java clones the header's topic in the loop (nothing when it is blank);
        here each topic of the loop."""
        header = h.CloneGroupOffsetRequestHeader.from_ext_fields(request.ext_fields)
        offsets = self.controller.consumer_offset_manager
        consumers = self.controller.client_manager.consumers
        if header.topic is None or not header.topic.strip():
            topics = sorted(offsets.which_topic_by_consumer(header.src_group))
        else:
            topics = [header.topic]
        for topic in topics:
            if self.controller.topic_config_manager.select_topic_config(topic) is None:
                log.warn("[cloneGroupOffset], topic config not exist, {topic}", topic=topic)
                continue
            if (not header.offline and consumers.find_subscription_data_count(header.src_group) > 0
                    and consumers.find_subscription_data(header.src_group, topic) is None):
                log.warn("[cloneGroupOffset], the consumer group[{group}], topic[{topic}] not "
                         "exist", group=header.src_group, topic=topic)
                continue
            offsets.clone_offset(header.src_group, header.dest_group, topic)
        return request.response(R.SUCCESS)
