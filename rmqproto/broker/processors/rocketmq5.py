"""Requests of RocketMQ 5 that a 4.9-style broker can answer, answered as RocketMQ 5.3 does.

Current tools and clients send them and a Java 4.9.7 broker refuses them
(REQUEST_CODE_NOT_SUPPORTED); docs/broker.md, "Request codes", lists them with the rest:

* GET_TOPIC_CONFIG (351): one topic's config (``AdminBrokerProcessor#getTopicConfig``).
  ``mqadmin`` 5.x ``topicStatus`` and ``consumerProgress -g`` ask it of every broker of the
  route before they print anything.
* LITE_PULL_MESSAGE (361): the pull of the 5.x ``DefaultLitePullConsumer``, served by the
  pull path (``PullMessageProcessor``, which Java 5 also registers for it).
* GET_BROKER_HA_STATUS (907): replication state, ``HARuntimeInfo``
  (``AdminBrokerProcessor#getBrokerHaStatus``), for ``mqadmin haStatus``.
"""

from twisted.logger import Logger

from rmqproto.codec.bodies.topic import TopicConfigAndQueueMapping
from rmqproto.codec.codes import RequestCodeV5 as RC5, ResponseCode as R

__all__ = ["RocketMQ5Processor"]

log = Logger()


class RocketMQ5Processor:
    """The RocketMQ 5 requests of one broker (``controller``: topic_config_manager,
    consume_processor, ha_runtime_info)."""

    def __init__(self, controller):
        self.controller = controller

    def register_with(self, dispatcher):
        dispatcher.register(int(RC5.GET_TOPIC_CONFIG), self.get_topic_config)
        dispatcher.register(int(RC5.GET_BROKER_HA_STATUS), self.get_broker_ha_status)
        if self.controller.consume_processor is not None:
            dispatcher.register(int(RC5.LITE_PULL_MESSAGE), self.lite_pull_message)

    def get_topic_config(self, request, context):
        """The topic's config as ``TopicConfigAndQueueMapping`` JSON, or TOPIC_NOT_EXIST."""
        topic = (request.ext_fields or {}).get("topic")
        if topic is None:
            return request.response(R.SYSTEM_ERROR, remark="the custom field <topic> is null")
        topic_config = self.controller.topic_config_manager.select_topic_config(topic)
        if topic_config is None:
            log.error("No topic in this broker, client: {peer} topic: {topic}",
                      peer=context.peer, topic=topic)
            return request.response(R.TOPIC_NOT_EXIST,
                                    remark="No topic in this broker. topic: " + topic)
        return request.response(R.SUCCESS, body=TopicConfigAndQueueMapping.of(topic_config).to_json())

    def lite_pull_message(self, request, context):
        """A pull like PULL_MESSAGE (Java 5's ``litePullMessageEnable`` is always true here)."""
        return self.controller.consume_processor.pull_message(request, context)

    def get_broker_ha_status(self, request, context):
        """The HA service's ``HARuntimeInfo``; Java's SYSTEM_ERROR when there is none."""
        runtime_info = self.controller.ha_runtime_info
        if runtime_info is None:
            return request.response(R.SYSTEM_ERROR,
                                    remark="Can not get HARuntimeInfo, may be duplicationEnable is true")
        return request.response(R.SUCCESS, body=runtime_info().to_json())
