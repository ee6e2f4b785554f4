"""The consume side of the broker, answered as Java's ``PullMessageProcessor``,
``ConsumerManageProcessor``, ``ClientManageProcessor`` and the consumer parts of
``SendMessageProcessor`` and ``AdminBrokerProcessor`` do.

PULL_MESSAGE (every store status → response code row, sysFlag bits, tag filtering by
tags code, ``suggestWhichBrokerId``, long polling), QUERY/UPDATE_CONSUMER_OFFSET,
HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP, LOCK/UNLOCK_BATCH_MQ,
CONSUMER_SEND_MSG_BACK, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, GET_ALL_CONSUMER_OFFSET,
GET_ALL_DELAY_OFFSET, GET_ALL_SUBSCRIPTIONGROUP_CONFIG and GET_CONSUME_STATS.

:func:`register` wires everything to a broker controller. The decisions that do not
need a broker (:func:`pull_response_code`, :func:`suggest_which_broker_id`,
:func:`tags_filter`, :func:`send_back_target`) are plain functions.
"""

import os
import random

from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from rmqproto.broker.dledgerconfig import is_dledger
from rmqproto.broker.longpolling import PullRequest, PullRequestHoldService
from rmqproto.broker.processors.send import DLQ_NUMS_PER_GROUP, FAQ_SUFFIX, java_property_order
from rmqproto.broker.processors.stats import add_topic_offsets, consumed_topic_config
from rmqproto.broker.rebalancelock import REBALANCE_LOCK_MAX_LIVE_TIME, RebalanceLockManager
from rmqproto.broker.topicconfig import dlq_topic, retry_topic
from rmqproto.codec import headers as h
from rmqproto.codec.bodies.client import (
    EXPRESSION_TYPE_TAG, SUB_ALL, Connection, ConsumerConnection,
    GetConsumerListByGroupResponseBody, GroupList, HeartbeatData, LockBatchRequestBody,
    LockBatchResponseBody, MessageModel, MessageQueue, ProducerConnection, SubscriptionData,
    UnlockBatchRequestBody,
)
from rmqproto.codec.bodies.offsets import (
    ConsumeStats, MessageQueueForC, ResetOffsetBody, ResetOffsetBodyForC,
    SubscriptionGroupConfig,
)
from rmqproto.codec.bodies.topic import PERM_READ, PERM_WRITE, TOPIC_SYS_FLAG_UNIT_SUB
from rmqproto.codec.codes import MQVersion, RequestCode as RC, ResponseCode as R, version_desc
from rmqproto.codec.frame import RemotingCommand
from rmqproto.codec.message import (
    PROPERTY_DELAY_TIME_LEVEL, PROPERTY_ORIGIN_MESSAGE_ID, PROPERTY_RETRY_TOPIC,
    PROPERTY_WAIT_STORE_MSG_OK, MessageRecord,
)
from rmqproto.store.consumequeue import names_a_directory
from rmqproto.store.results import GetMessageStatus as G, PutMessageStatus

__all__ = [
    "PULL_COMMIT_OFFSET", "PULL_SUSPEND", "PULL_SUBSCRIPTION", "PULL_CLASS_FILTER",
    "PULL_LITE_PULL_MESSAGE", "MASTER_ID", "pull_response_code", "suggest_which_broker_id",
    "tags_filter", "SendBackTarget", "send_back_target", "ConsumeProcessor", "register",
]

log = Logger()

# PullSysFlag bits (Java ``PullSysFlag``)
PULL_COMMIT_OFFSET = 0x1
PULL_SUSPEND = 0x2
PULL_SUBSCRIPTION = 0x4
PULL_CLASS_FILTER = 0x8
PULL_LITE_PULL_MESSAGE = 0x10

MASTER_ID = 0
#: The lock lease (ms); Java reads this name as a system property.
LOCK_MAX_LIVE_TIME_SETTING = "rocketmq.broker.rebalance.lockMaxLiveTime"
_RW = PERM_READ | PERM_WRITE
_SLAVE_REMARK = ("Can't modify topic or subscription group from slave broker, "
                 "please execute it from master broker.")

# ---------------------------------------------------------------- pure rules

_STATUS_CODES = {
    G.FOUND: R.SUCCESS,
    G.MESSAGE_WAS_REMOVING: R.PULL_RETRY_IMMEDIATELY,
    G.NO_MATCHED_MESSAGE: R.PULL_RETRY_IMMEDIATELY,
    G.OFFSET_FOUND_NULL: R.PULL_NOT_FOUND,
    G.OFFSET_OVERFLOW_BADLY: R.PULL_OFFSET_MOVED,
    G.OFFSET_OVERFLOW_ONE: R.PULL_NOT_FOUND,
    G.OFFSET_TOO_SMALL: R.PULL_OFFSET_MOVED,
}


def pull_response_code(status, requested_offset):
    """The response code of a store status (``PullMessageProcessor#processRequest``).

    An empty or unknown queue is PULL_OFFSET_MOVED unless the pull asked for offset 0.
    """
    if status in (G.NO_MATCHED_LOGIC_QUEUE, G.NO_MESSAGE_IN_QUEUE):
        return R.PULL_OFFSET_MOVED if requested_offset != 0 else R.PULL_NOT_FOUND
    return _STATUS_CODES[status]


def suggest_which_broker_id(suggest_pulling_from_slave, slave_read_enable, group_config):
    """``suggestWhichBrokerId`` (RMQ4): with ``slaveReadEnable`` the group's
    ``whichBrokerWhenConsumeSlowly`` when the consumer lags, else its ``brokerId``;
    without it always the master."""
    if not slave_read_enable:
        return MASTER_ID
    if suggest_pulling_from_slave:
        return group_config.which_broker_when_consume_slowly
    return group_config.broker_id


def _java_int(value):
    """``Long.intValue``: the low 32 bits, signed."""
    return ((value + 0x80000000) & 0xFFFFFFFF) - 0x80000000


def tags_filter(subscription_data):
    """The consume-queue filter of a subscription (Java's ``isMatchedByConsumeQueue``):
    ``None`` (everything matches) for ``*`` and class-filter mode, else a callable
    ``filter(tags_code)`` true when the low 32 bits of the code are in the ``codeSet``."""
    if (subscription_data is None or subscription_data.class_filter_mode
            or subscription_data.expression_type != EXPRESSION_TYPE_TAG
            or subscription_data.sub_string == SUB_ALL):
        return None
    codes = frozenset(subscription_data.code_set)
    return lambda tags_code: tags_code is None or _java_int(tags_code) in codes


class SendBackTarget:
    """Where CONSUMER_SEND_MSG_BACK puts a message: ``topic``, ``queue_nums`` of that topic,
    ``delay_level`` to set (0 for the DLQ) and whether it is the ``dlq``."""

    __slots__ = ("topic", "queue_nums", "delay_level", "dlq")

    def __init__(self, topic, queue_nums, delay_level, dlq):
        self.topic = topic
        self.queue_nums = queue_nums
        self.delay_level = delay_level
        self.dlq = dlq

    def __eq__(self, other):
        return isinstance(other, SendBackTarget) and all(
            getattr(self, n) == getattr(other, n) for n in self.__slots__)

    def __repr__(self):
        return "SendBackTarget(%r, %d, delay_level=%d, dlq=%s)" % (
            self.topic, self.queue_nums, self.delay_level, self.dlq)


def send_back_target(group, group_config, reconsume_times, delay_level, max_reconsume_times=None):
    """The retry/DLQ decision of CONSUMER_SEND_MSG_BACK.

    ``max_reconsume_times`` (the header's, honoured from clients ≥ V3_4_9) overrides the
    group's ``retryMaxTimes``. Reconsumed that often, or a negative delay level: the
    group's ``%DLQ%`` topic. Otherwise its ``%RETRY%`` topic, with delay level
    3 + reconsume times when the client asked for level 0.
    """
    max_times = group_config.retry_max_times if max_reconsume_times is None else max_reconsume_times
    if reconsume_times >= max_times or delay_level < 0:
        return SendBackTarget(dlq_topic(group), DLQ_NUMS_PER_GROUP, 0, True)
    if delay_level == 0:
        delay_level = 3 + reconsume_times
    return SendBackTarget(retry_topic(group), group_config.retry_queue_nums, delay_level, False)


# ---------------------------------------------------------------- the processor

class ConsumeProcessor:
    """The consume-side requests of one broker.

    ``controller`` gives ``config``, ``reactor``, ``store``, ``topic_config_manager``,
    ``consumer_offset_manager``, ``subscription_group_manager``, ``client_manager`` and
    ``schedule_service``. The processor adds ``pull_request_hold_service`` and
    ``rebalance_lock_manager`` to it.
    """

    def __init__(self, controller):
        self.controller = controller
        self.config = controller.config
        self.hold_service = PullRequestHoldService(
            controller.reactor, controller.store, self.execute_request_when_wakeup,
            _check_interval(self.config))
        self.lock_manager = RebalanceLockManager(int(self.config.get(
            LOCK_MAX_LIVE_TIME_SETTING, REBALANCE_LOCK_MAX_LIVE_TIME)))
        controller.pull_request_hold_service = self.hold_service
        listeners = getattr(controller.store, "dispatch_listeners", None)
        if listeners is not None:
            listeners.append(self.hold_service.notify_dispatched)
        controller.rebalance_lock_manager = self.lock_manager
        self._persist_offsets = None

    def setting(self, name, default):
        return self.config.get(name, default)

    def now(self):
        return int(self.controller.reactor.seconds() * 1000)

    @property
    def is_slave(self):
        return self.setting("brokerRole", "ASYNC_MASTER") == "SLAVE"

    def register_with(self, dispatcher):
        handlers = {
            RC.PULL_MESSAGE: self.pull_message,
            RC.QUERY_CONSUMER_OFFSET: self.query_consumer_offset,
            RC.UPDATE_CONSUMER_OFFSET: self.update_consumer_offset,
            RC.HEART_BEAT: self.heart_beat,
            RC.UNREGISTER_CLIENT: self.unregister_client,
            RC.GET_CONSUMER_LIST_BY_GROUP: self.get_consumer_list_by_group,
            RC.LOCK_BATCH_MQ: self.lock_batch_mq,
            RC.UNLOCK_BATCH_MQ: self.unlock_batch_mq,
            RC.CONSUMER_SEND_MSG_BACK: self.consumer_send_msg_back,
            RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.update_and_create_subscription_group,
            RC.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: self.get_all_subscription_group,
            RC.GET_ALL_CONSUMER_OFFSET: self.get_all_consumer_offset,
            RC.GET_ALL_DELAY_OFFSET: self.get_all_delay_offset,
            RC.GET_CONSUME_STATS: self.get_consume_stats,
            RC.GET_CONSUMER_CONNECTION_LIST: self.get_consumer_connection_list,
            RC.INVOKE_BROKER_TO_RESET_OFFSET: self.invoke_broker_to_reset_offset,
            RC.GET_PRODUCER_CONNECTION_LIST: self.get_producer_connection_list,
            RC.DELETE_SUBSCRIPTIONGROUP: self.delete_subscription_group,
            RC.QUERY_TOPIC_CONSUME_BY_WHO: self.query_topic_consume_by_who,
        }
        for code, handler in handlers.items():
            dispatcher.register(int(code), handler)

    # ------------------------------------------------------------ life cycle

    def start(self):
        """Start long-polling checks, idle-client scans, periodic offset persistence
        (every ``flushConsumerOffsetInterval`` ms, first after 10 s) and delayed delivery."""
        self.hold_service.start()
        self.controller.client_manager.start()
        offsets = self.controller.consumer_offset_manager
        self._persist_offsets = LoopingCall(offsets.persist)
        self._persist_offsets.clock = self.controller.reactor
        self._persist_offsets.start(self.setting("flushConsumerOffsetInterval", 5000) / 1000,
                                    now=False)
        if not is_dledger(self.controller.config):  # else the role changes start it
            self.controller.schedule_service.start()

    def stop(self):
        """Answer parked pulls, stop the timers, persist offsets and delay offsets."""
        self.hold_service.stop()
        self.controller.client_manager.stop()
        if self._persist_offsets is not None and self._persist_offsets.running:
            self._persist_offsets.stop()
        self._persist_offsets = None
        self.controller.consumer_offset_manager.persist()
        self.controller.schedule_service.shutdown()

    # ------------------------------------------------------------ PULL_MESSAGE

    def pull_message(self, request, context):
        return self.process_pull(request, context.connection, allow_suspend=True)

    def execute_request_when_wakeup(self, pull_request):
        """Run a parked pull again, now without suspension (its response)."""
        return self.process_pull(pull_request.request, pull_request.connection, allow_suspend=False)

    def process_pull(self, request, connection, allow_suspend):
        """``PullMessageProcessor.processRequest``: a response, or the Deferred of a parked pull."""
        header = h.PullMessageRequestHeader.from_ext_fields(request.ext_fields)
        refuse = request.response
        if not self.setting("brokerPermission", 6) & PERM_READ:
            return refuse(R.NO_PERMISSION, remark="the broker[%s] pulling message is forbidden"
                          % self.setting("brokerIP1", ""))
        groups = self.controller.subscription_group_manager
        group_config = groups.find_subscription_group_config(header.consumer_group)
        if group_config is None:
            return refuse(R.SUBSCRIPTION_GROUP_NOT_EXIST, remark="subscription group [%s] does not "
                          "exist, %s" % (header.consumer_group, FAQ_SUFFIX))
        if not group_config.consume_enable:
            return refuse(R.NO_PERMISSION,
                          remark="subscription group no permission, " + header.consumer_group)
        has_suspend = bool(header.sys_flag & PULL_SUSPEND)
        has_commit_offset = bool(header.sys_flag & PULL_COMMIT_OFFSET)
        topic_config = self.controller.topic_config_manager.select_topic_config(header.topic)
        if topic_config is None:
            log.error("the topic {topic} not exist, consumer: {peer}", topic=header.topic,
                      peer=getattr(connection, "peer", None))
            return refuse(R.TOPIC_NOT_EXIST, remark="topic[%s] not exist, apply first please! %s"
                          % (header.topic, FAQ_SUFFIX))
        if not topic_config.perm & PERM_READ:
            return refuse(R.NO_PERMISSION,
                          remark="the topic[%s] pulling message is forbidden" % header.topic)
        if not 0 <= header.queue_id < topic_config.read_queue_nums:
            remark = ("queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] "
                      "consumer:[%s]" % (header.queue_id, header.topic,
                                         topic_config.read_queue_nums,
                                         getattr(connection, "peer", None)))
            log.warn(remark)
            return refuse(R.SYSTEM_ERROR, remark=remark)
        subscription, refused = self._pull_subscription(header, group_config, request)
        if refused is not None:
            return refused
        if subscription.expression_type != EXPRESSION_TYPE_TAG:
            return refuse(R.SYSTEM_ERROR, remark="The broker does not support consumer to filter "
                          "message by " + subscription.expression_type)
        message_filter = tags_filter(subscription)
        result = self.controller.store.get_message(
            header.consumer_group, header.topic, header.queue_id, header.queue_offset,
            header.max_msg_nums, message_filter)
        self.controller.consumer_offset_manager.commit_pull_offset(
            header.consumer_group, header.topic, header.queue_id, result.next_begin_offset)
        response = self._pull_response(request, header, group_config, result)
        if (response.code == R.PULL_NOT_FOUND and allow_suspend and has_suspend):
            timeout = (header.suspend_timeout_millis if self.setting("longPollingEnable", True)
                       else self.setting("shortPollingTimeMills", 1000))
            parked = PullRequest(request, connection, timeout, self.now(), header.queue_offset,
                                 message_filter)
            response = self.hold_service.suspend_pull_request(header.topic, header.queue_id, parked)
        if allow_suspend and has_commit_offset and not self.is_slave:
            self.controller.consumer_offset_manager.commit_offset(
                header.consumer_group, header.topic, header.queue_id, header.commit_offset)
        return response

    def _pull_subscription(self, header, group_config, request):
        """The subscription of a pull: from the request (SUBSCRIPTION flag) or from the
        group's heartbeats. ``(subscription, None)`` or ``(None, refusal)``."""
        refuse = request.response
        if header.sys_flag & PULL_SUBSCRIPTION:
            expression_type = header.expression_type or EXPRESSION_TYPE_TAG
            if header.subscription is None and expression_type == EXPRESSION_TYPE_TAG:
                log.warn("Parse the consumer's subscription[{sub}] failed, group: {group}",
                         sub=header.subscription, group=header.consumer_group)
                return None, refuse(R.SUBSCRIPTION_PARSE_FAILED,
                                    remark="parse the consumer's subscription failed")
            return SubscriptionData.for_expression(header.topic, header.subscription,
                                                   header.sub_version, expression_type), None
        group_info = self.controller.client_manager.consumer_group_info(header.consumer_group)
        if group_info is None:
            log.warn("the consumer's group info not exist, group: {group}", group=header.consumer_group)
            return None, refuse(R.SUBSCRIPTION_NOT_EXIST,
                                remark="the consumer's group info not exist" + FAQ_SUFFIX)
        if (not group_config.consume_broadcast_enable
                and group_info.message_model == MessageModel.BROADCASTING):
            return None, refuse(R.NO_PERMISSION, remark="the consumer group[%s] can not consume "
                                "by broadcast way" % header.consumer_group)
        subscription = group_info.find_subscription_data(header.topic)
        if subscription is None:
            log.warn("the consumer's subscription not exist, group: {group}, topic:{topic}",
                     group=header.consumer_group, topic=header.topic)
            return None, refuse(R.SUBSCRIPTION_NOT_EXIST,
                                remark="the consumer's subscription not exist" + FAQ_SUFFIX)
        if subscription.sub_version < header.sub_version:
            log.warn("The broker's subscription is not latest, group: {group} {sub}",
                     group=header.consumer_group, sub=subscription.sub_string)
            return None, refuse(R.SUBSCRIPTION_NOT_LATEST,
                                remark="the consumer's subscription not latest")
        return subscription, None

    def _pull_response(self, request, header, group_config, result):
        """The response to a store result: code, the four header fields and the records."""
        code = pull_response_code(result.status, header.queue_offset)
        suggest = suggest_which_broker_id(result.suggest_pulling_from_slave,
                                          self.setting("slaveReadEnable", False), group_config)
        if code == R.PULL_OFFSET_MOVED:
            if not self.is_slave or self.setting("offsetCheckInSlave", False):
                log.warn("PULL_OFFSET_MOVED:correction offset. topic={topic}, groupId={group}, "
                         "requestOffset={old}, newOffset={new}, suggestBrokerId={suggest}",
                         topic=header.topic, group=header.consumer_group,
                         old=header.queue_offset, new=result.next_begin_offset, suggest=suggest)
            else:
                suggest = group_config.broker_id
                code = R.PULL_RETRY_IMMEDIATELY
        response_header = h.PullMessageResponseHeader(
            suggest_which_broker_id=suggest, next_begin_offset=result.next_begin_offset,
            min_offset=result.min_offset, max_offset=result.max_offset)
        body = b""
        if code == R.SUCCESS:
            body = b"".join(result.messages)
            self.controller.broker_stats_manager.on_get(
                header.consumer_group, header.topic, header.queue_id, len(result.messages),
                len(body))
        return request.response(
            int(code), remark=result.status.name, body=body,
            ext_fields=response_header.to_ext_fields(request.serialize_type))

    # ------------------------------------------------------------ offsets

    def query_consumer_offset(self, request, context):
        header = h.QueryConsumerOffsetRequestHeader.from_ext_fields(request.ext_fields)
        offset = self.controller.consumer_offset_manager.query_offset(
            header.consumer_group, header.topic, header.queue_id)
        if offset < 0 and self._consumable_from_start(header.topic, header.queue_id):
            offset = 0
        if offset < 0:
            return request.response(
                R.QUERY_NOT_FOUND, remark="Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
        return request.response(R.SUCCESS, ext_fields=h.QueryConsumerOffsetResponseHeader(
            offset=offset).to_ext_fields(request.serialize_type))

    def _consumable_from_start(self, topic, queue_id):
        """No offset stored: Java answers 0 when the queue still starts at offset 0 and its
        first message is not yet "on disk" only (``checkInDiskByConsumeOffset`` is false)."""
        store = self.controller.store
        if store.get_min_offset_in_queue(topic, queue_id) > 0:
            return False
        if store.get_max_offset_in_queue(topic, queue_id) <= 0:
            return True
        first = store.get_commit_log_offset_in_queue(topic, queue_id, 0)
        memory = _total_physical_memory() * self.setting("accessMessageInMemoryMaxRatio", 40) / 100
        return store.get_max_phy_offset() - first <= memory

    def update_consumer_offset(self, request, context):
        header = h.UpdateConsumerOffsetRequestHeader.from_ext_fields(request.ext_fields)
        self.controller.consumer_offset_manager.commit_offset(
            header.consumer_group, header.topic, header.queue_id, header.commit_offset)
        return request.response(R.SUCCESS)

    def get_all_consumer_offset(self, request, context):
        return request.response(R.SUCCESS, body=self.controller.consumer_offset_manager.encode())

    def get_all_delay_offset(self, request, context):
        schedule = getattr(self.controller, "schedule_service", None)
        if schedule is None:
            return request.response(R.SYSTEM_ERROR,
                                    remark="Delay offset not supported in this messagetore")
        return request.response(R.SUCCESS, body=schedule.encode())

    # ------------------------------------------------------------ clients

    def heart_beat(self, request, context):
        data = HeartbeatData.from_json(request.body)
        self.controller.client_manager.heartbeat(context.connection, data, request.language,
                                                 request.version)
        return request.response(R.SUCCESS)

    def unregister_client(self, request, context):
        header = h.UnregisterClientRequestHeader.from_ext_fields(request.ext_fields)
        self.controller.client_manager.unregister(context.connection, header.producer_group,
                                                  header.consumer_group)
        return request.response(R.SUCCESS)

    def get_consumer_list_by_group(self, request, context):
        header = h.GetConsumerListByGroupRequestHeader.from_ext_fields(request.ext_fields)
        info = self.controller.client_manager.consumer_group_info(header.consumer_group)
        ids = info.all_client_ids() if info is not None else []
        if not ids:
            log.warn("getConsumerGroupInfo failed, {group} {peer}", group=header.consumer_group,
                     peer=context.peer)
            return request.response(R.SYSTEM_ERROR,
                                    remark="no consumer for this group, " + header.consumer_group)
        return request.response(R.SUCCESS, body=GetConsumerListByGroupResponseBody(
            consumer_id_list=ids).to_json())

    def get_consumer_connection_list(self, request, context):
        """``mqadmin consumerConnection`` and message tracks: a group's members and subscriptions."""
        header = h.GetConsumerConnectionListRequestHeader.from_ext_fields(request.ext_fields)
        info = self.controller.client_manager.consumer_group_info(header.consumer_group)
        if info is None:
            return request.response(R.CONSUMER_NOT_ONLINE, remark="the consumer group[%s] not online"
                                    % header.consumer_group)
        connections = [_connection(c) for c in info.channel_info_table.values()]
        return request.response(R.SUCCESS, body=ConsumerConnection(
            connection_set=connections, subscription_table=dict(info.subscription_table),
            consume_type=info.consume_type, message_model=info.message_model,
            consume_from_where=info.consume_from_where).to_json())

    def invoke_broker_to_reset_offset(self, request, context):
        """``mqadmin resetOffsetByTime``: the offset of each write queue at ``timestamp`` (-1:
        the end; kept where the group already is unless it is ahead or ``isForce``), sent to
        every online consumer of the group with RESET_CONSUMER_CLIENT_OFFSET (oneway; a
        list body for C++ clients) and answered (``Broker2Client#resetOffset``). The
        consumers move and commit; the broker's stored offsets follow from their commits."""
        header = h.ResetOffsetRequestHeader.from_ext_fields(request.ext_fields)
        log.info("[reset-offset] reset offset started by {peer}. topic={topic}, group={group}, "
                 "timestamp={ts}, isForce={force}", peer=context.peer, topic=header.topic,
                 group=header.group, ts=header.timestamp, force=header.is_force)
        topic_config = self.controller.topic_config_manager.select_topic_config(header.topic)
        if topic_config is None:
            return request.response(R.SYSTEM_ERROR, remark="[reset-offset] reset offset failed, "
                                    "no topic in this broker. topic=" + header.topic)
        offsets = {}
        for queue_id in range(topic_config.write_queue_nums):
            current = self.controller.consumer_offset_manager.query_offset(
                header.group, header.topic, queue_id)
            if current == -1:
                return request.response(R.SYSTEM_ERROR,
                                        remark="THe consumer group <%s> not exist" % header.group)
            store = self.controller.store
            wanted = max(store.get_max_offset_in_queue(header.topic, queue_id)
                         if header.timestamp == -1 else
                         store.get_offset_in_queue_by_time(header.topic, queue_id, header.timestamp),
                         0)
            queue = MessageQueue(header.topic, self.setting("brokerName", ""), queue_id)
            offsets[queue] = wanted if header.is_force or wanted < current else current
        info = self.controller.client_manager.consumer_group_info(header.group)
        members = list(info.channel_info_table.values()) if info is not None else []
        if not members:
            return request.response(R.CONSUMER_NOT_ONLINE, remark=(
                "Consumer not online, so can not reset offset, Group: %s Topic: %s Timestamp: %d"
                % (header.group, header.topic, header.timestamp)))
        too_old = [m for m in members if m.version < MQVersion.V3_0_7_SNAPSHOT]
        if too_old:
            return request.response(R.SYSTEM_ERROR, remark="the client does not support this "
                                    "feature. version=" + version_desc(too_old[0].version))
        for member in members:
            body = ResetOffsetBody(offset_table=offsets) if member.language != "CPP" else \
                ResetOffsetBodyForC(offset_table=[
                    MessageQueueForC(q.topic, q.broker_name, q.queue_id, offset)
                    for q, offset in offsets.items()])
            command = RemotingCommand(int(RC.RESET_CONSUMER_CLIENT_OFFSET),
                                      ext_fields=header.to_ext_fields(), body=body.to_json())
            member.connection.send_oneway(command).addErrback(
                lambda failure, client=member.client_id: log.warn(
                    "[reset-offset] reset offset to {client} failed: {error}", client=client,
                    error=failure.getErrorMessage()))
        return request.response(R.SUCCESS, body=ResetOffsetBody(offset_table=offsets).to_json())

    def get_producer_connection_list(self, request, context):
        """``mqadmin producerConnection``: the connections of a producer group."""
        header = h.GetProducerConnectionListRequestHeader.from_ext_fields(request.ext_fields)
        channels = self.controller.client_manager.producers.group_channel_table.get(
            header.producer_group)
        if channels is None:
            return request.response(R.SYSTEM_ERROR, remark="the producer group[%s] not exist"
                                    % header.producer_group)
        return request.response(R.SUCCESS, body=ProducerConnection(connection_set=[
            _connection(info) for info in channels.values()]).to_json())

    def delete_subscription_group(self, request, context):
        """``mqadmin deleteSubGroup``: forget a group's configuration, and its offsets when
        ``removeOffset`` is set (``AdminBrokerProcessor#deleteSubscriptionGroup``)."""
        if self.is_slave:
            return request.response(R.SYSTEM_ERROR, remark=_SLAVE_REMARK)
        header = h.DeleteSubscriptionGroupRequestHeader.from_ext_fields(request.ext_fields)
        log.info("deleteSubscriptionGroup called by {peer}", peer=context.peer)
        self.controller.subscription_group_manager.delete_subscription_group_config(
            header.group_name)
        if header.remove_offset:
            self.controller.consumer_offset_manager.remove_offset(header.group_name)
        if self.setting("autoDeleteUnusedStats", False):
            self.controller.broker_stats_manager.on_group_deleted(header.group_name)
        return request.response(R.SUCCESS)

    def query_topic_consume_by_who(self, request, context):
        """The groups subscribed to a topic now, and those with offsets stored for it."""
        header = h.QueryTopicConsumeByWhoRequestHeader.from_ext_fields(request.ext_fields)
        groups = self.controller.client_manager.consumers.query_topic_consume_by_who(header.topic)
        groups |= set(self.controller.consumer_offset_manager.which_group_by_topic(header.topic))
        return request.response(R.SUCCESS, body=GroupList(group_list=sorted(groups)).to_json())

    def lock_batch_mq(self, request, context):
        body = LockBatchRequestBody.from_json(request.body)
        locked = self.lock_manager.try_lock_batch(body.consumer_group, body.mq_set,
                                                  body.client_id, self.now())
        return request.response(R.SUCCESS, body=LockBatchResponseBody(
            lock_ok_mq_set=locked).to_json())

    def unlock_batch_mq(self, request, context):
        body = UnlockBatchRequestBody.from_json(request.body)
        self.lock_manager.unlock_batch(body.consumer_group, body.mq_set, body.client_id)
        return request.response(R.SUCCESS)

    # ------------------------------------------------------------ CONSUMER_SEND_MSG_BACK

    def consumer_send_msg_back(self, request, context):
        """Put a message the consumer failed on into its group's retry topic (delayed) or DLQ."""
        header = h.ConsumerSendMsgBackRequestHeader.from_ext_fields(request.ext_fields)
        group_config = self.controller.subscription_group_manager.find_subscription_group_config(
            header.group)
        if group_config is None:
            return request.response(R.SUBSCRIPTION_GROUP_NOT_EXIST, remark="subscription group not "
                                    "exist, %s %s" % (header.group, FAQ_SUFFIX))
        if not self.setting("brokerPermission", 6) & PERM_WRITE:
            return request.response(R.NO_PERMISSION, remark="the broker[%s] sending message is "
                                    "forbidden" % self.setting("brokerIP1", ""))
        if group_config.retry_queue_nums <= 0:
            return request.response(R.SUCCESS)
        topics = self.controller.topic_config_manager
        retry = retry_topic(header.group)
        if not names_a_directory(retry):
            # the store refuses such a topic, delayed or not (and its DLQ): refused before
            # the retry topic is created or the message read, with the store's answer
            return request.response(R.SYSTEM_ERROR, remark=PutMessageStatus.MESSAGE_ILLEGAL.name)
        topic_config = topics.create_topic_in_send_message_back_method(
            retry, group_config.retry_queue_nums, _RW,
            TOPIC_SYS_FLAG_UNIT_SUB if header.unit_mode else 0)
        if topic_config is None:
            return request.response(R.SYSTEM_ERROR, remark="topic[%s] not exist" % retry)
        if not topic_config.perm & PERM_WRITE:
            return request.response(R.NO_PERMISSION,
                                    remark="the topic[%s] sending message is forbidden" % retry)
        original = self.controller.store.look_message_by_offset(header.offset)
        if original is None:
            return request.response(R.SYSTEM_ERROR,
                                    remark="look message by offset failed, %d" % header.offset)
        max_times = header.max_reconsume_times if request.version >= MQVersion.V3_4_9 else None
        target = send_back_target(header.group, group_config, original.reconsume_times,
                                  header.delay_level, max_times)
        if target.dlq:
            topic_config = topics.create_topic_in_send_message_back_method(
                target.topic, target.queue_nums, _RW, 0)
            if topic_config is None:
                return request.response(R.SYSTEM_ERROR, remark="topic[%s] not exist" % target.topic)
        record = self.send_back_record(original, target)
        put = self.controller.store.put_message(record, wait_store_msg_ok=False)
        back_topic = original.properties.get(PROPERTY_RETRY_TOPIC, original.topic)
        return put.addCallback(self._send_back_done, request, header.group, back_topic, record)

    def send_back_record(self, original, target):
        """The record CONSUMER_SEND_MSG_BACK stores for ``original`` (a decoded record)."""
        properties = dict(original.properties)
        properties.setdefault(PROPERTY_RETRY_TOPIC, original.topic)
        properties[PROPERTY_WAIT_STORE_MSG_OK] = "false"  # Java: msgExt.setWaitStoreMsgOK(false)
        properties[PROPERTY_DELAY_TIME_LEVEL] = str(target.delay_level)
        if not properties.get(PROPERTY_ORIGIN_MESSAGE_ID, "").strip():
            properties[PROPERTY_ORIGIN_MESSAGE_ID] = original.msg_id
        return MessageRecord(
            target.topic, original.body, java_property_order(properties),
            queue_id=random.randrange(99999999) % target.queue_nums, flag=original.flag,
            sys_flag=original.sys_flag, born_timestamp=original.born_timestamp,
            born_host=original.born_host, store_host=original.store_host,
            reconsume_times=original.reconsume_times + 1)

    def _send_back_done(self, result, request, group, back_topic, record):
        if not result.ok:
            return request.response(R.SYSTEM_ERROR, remark=result.status.name)
        self.controller.broker_stats_manager.on_send_back(group, back_topic, record.topic,
                                                          result.append_result.wrote_bytes)
        return request.response(R.SUCCESS)

    # ------------------------------------------------------------ subscription groups

    def update_and_create_subscription_group(self, request, context):
        if self.is_slave:
            return request.response(R.SYSTEM_ERROR, remark=_SLAVE_REMARK)
        log.info("updateAndCreateSubscriptionGroup called by {peer}", peer=context.peer)
        if request.body:
            config = SubscriptionGroupConfig.from_json(request.body)
            self.controller.subscription_group_manager.update_subscription_group_config(config)
        return request.response(R.SUCCESS)

    def get_all_subscription_group(self, request, context):
        return request.response(R.SUCCESS, body=self.controller.subscription_group_manager.encode())

    # ------------------------------------------------------------ GET_CONSUME_STATS

    def get_consume_stats(self, request, context):
        """``mqadmin consumerProgress``: broker and consumer offsets of every read queue, and
        the group's get TPS of the last minute (``consumeTps``), and
        RocketMQ 5's ``pullOffset`` (where the last pull ended: 5.x prints "#Inflight")."""
        header = h.GetConsumeStatsRequestHeader.from_ext_fields(request.ext_fields)
        group = header.consumer_group
        if header.topic is None or not header.topic.strip():
            topics = sorted(self.controller.consumer_offset_manager.which_topic_by_consumer(group))
        else:
            topics = [header.topic]
        stats = ConsumeStats()
        for topic in topics:
            topic_config = consumed_topic_config(self.controller, group, topic)
            if topic_config is not None:
                add_topic_offsets(self.controller, stats, group, topic,
                                  topic_config.read_queue_nums)
        return request.response(R.SUCCESS, body=stats.to_json())


def _connection(info):
    """The :class:`Connection` mqadmin shows of a client's ``ClientChannelInfo``."""
    return Connection(client_id=info.client_id, client_addr=getattr(info.connection, "peer", None),
                      language=info.language, version=info.version)


def _check_interval(config):
    """ms between the hold service's checks: 5 s, or ``shortPollingTimeMills`` without long polling."""
    if config.get("longPollingEnable", True):
        return 5000
    return config.get("shortPollingTimeMills", 1000)


def _total_physical_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 8 << 30


def register(controller):
    """Create the consume-side processor of ``controller`` and route its request codes
    through ``controller.dispatcher``; the processor (call its ``start()`` when the broker
    starts and ``stop()`` when it stops)."""
    if getattr(controller, "schedule_service", None) is None:
        from rmqproto.broker.schedule import ScheduleMessageService
        controller.schedule_service = ScheduleMessageService(controller)
    processor = ConsumeProcessor(controller)
    processor.register_with(controller.dispatcher)
    controller.consume_processor = processor
    return processor
