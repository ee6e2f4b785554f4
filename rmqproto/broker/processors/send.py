"""SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE, answered as Java's
``SendMessageProcessor`` does.

The checks run in Java's order (``preSend`` → ``msgCheck``): start-accept time, broker
permission for order topics, topic name, not-allowed-send topics, topic lookup or
auto-creation from the default topic (``%RETRY%`` topics with one queue), queue id.
Then a message to a ``%RETRY%`` topic that has been reconsumed too often goes to the
group's ``%DLQ%`` topic, the broker adds ``CLUSTER``, and the record goes to the store,
whose :class:`~rmqproto.store.results.PutMessageStatus` becomes the response code.
Every answer carries ``MSG_REGION`` and ``TRACE_ON``.

Stored properties are written in the order Java's ``HashMap`` iterates them, without
``WAIT`` (Java drops it from the stored string to save space); the store is told the
``WAIT`` value apart (``wait_store_msg_ok``), so a ``WAIT=false`` send is answered as soon
as it is stored, without the SYNC_FLUSH or SYNC_MASTER wait.
"""

import random
import time
from functools import lru_cache

from twisted.logger import Logger
from twisted.python.failure import Failure

from rmqproto.broker.config import store_host
from rmqproto.broker.topicconfig import (
    RETRY_GROUP_TOPIC_PREFIX, TRANS_HALF_TOPIC, dlq_topic, is_not_allowed_send_topic,
    topic_config_string, validate_topic,
)
from rmqproto.codec import headers as h
from rmqproto.codec.bodies.topic import PERM_READ, PERM_WRITE, TopicFilterType
from rmqproto.codec.codes import CURRENT_VERSION, MQVersion, RequestCode as RC, ResponseCode as R
from rmqproto.codec.fastjson import java_hashmap_order
from rmqproto.codec.frame import SERIALIZE_JSON, JsonResponseTemplate
from rmqproto.codec.message import (
    MULTI_TAGS_FLAG, PROPERTY_CLUSTER, PROPERTY_MSG_REGION,
    PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC, PROPERTY_TRACE_SWITCH,
    PROPERTY_TRANSACTION_PREPARED, PROPERTY_WAIT_STORE_MSG_OK, TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE, MessageRecord, pack_batch, pick_properties,
    string_to_properties,
)
from rmqproto.codec.native import speedups
from rmqproto.errors import CodecError
from rmqproto.store.config import store_paths
from rmqproto.store.results import PUT_OK, PutMessageResult, PutMessageStatus as S
from rmqproto.store.retention import disk_partition_used_ratio

__all__ = ["SendMessageProcessor", "FAQ_SUFFIX", "java_property_order", "put_status_response",
           "python_send_record", "send_record", "wait_store_msg_ok"]

log = Logger()

#: ``FAQUrl.suggestTodo(...)``: every FAQ constant of 4.9.x is the same page.
FAQ_SUFFIX = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."

#: ``DLQ_NUMS_PER_GROUP``: a dead-letter topic has one queue.
DLQ_NUMS_PER_GROUP = 1

_RW = PERM_READ | PERM_WRITE

# members every send reads, as names (through their enum class each read costs a hook)
_SEND_MESSAGE = RC.SEND_MESSAGE
_SUCCESS = R.SUCCESS
_MULTI_TAG = TopicFilterType.MULTI_TAG
_V2_AS_V1 = h.SendMessageRequestHeaderV2.v1_from_ext_fields


#: The born host of a record from a connection whose peer is not ``host:port``.
_NO_BORN_HOST = ("127.0.0.1", 0)


def _born_host(context):
    """A record's born host: the sending connection's ``(ip, port)``."""
    return context.address or _NO_BORN_HOST


@lru_cache(maxsize=1024)
def _order(keys):
    return tuple(java_hashmap_order(keys))


def java_property_order(properties, drop=()):
    """``properties`` re-ordered as Java's ``HashMap`` iterates them, without the names in
    ``drop`` (removed after insertion, as Java does, so they still count for the capacity)."""
    return pick_properties(properties, _order(tuple(properties)), drop)


def wait_store_msg_ok(properties):
    """``isWaitStoreMsgOK``: the ``WAIT`` property, true unless it is there and is not
    ``true`` (any case, as ``Boolean.parseBoolean``)."""
    value = properties.get(PROPERTY_WAIT_STORE_MSG_OK)
    return value is None or value.lower() == "true"


def python_send_record(plan, topic, body, properties_text, cluster, queue_id, flag, sys_flag,
                       born_timestamp, born_host, store_host, reconsume_times):
    """``(record, WAIT)`` of one message as ``asyncSendMessage`` builds it: the record
    (``plan[0]``, :class:`MessageRecord`) with the properties of ``properties_text`` and
    ``CLUSTER`` in ``HashMap`` order, without ``WAIT`` (Java drops it from the stored string
    to save space); offsets, store timestamp and body CRC are the store's append's. None for
    a prepared transaction message (``TRAN_MSG`` true), which goes to the half topic."""
    properties = string_to_properties(properties_text)
    properties[PROPERTY_CLUSTER] = cluster
    if properties.get(PROPERTY_TRANSACTION_PREPARED, "").lower() == "true":
        return None
    # in the constructor's order: keywords would cost a dict per send
    record = plan[0](
        topic, body, java_property_order(properties, _DROP_WAIT), queue_id, flag, 0, 0, sys_flag,
        born_timestamp, born_host or _NO_BORN_HOST, 0, store_host, reconsume_times or 0, 0, 0)
    return record, wait_store_msg_ok(properties)


#: :func:`python_send_record`, in C where the speedups are built.
send_record = python_send_record if speedups is None else speedups.send_record
_RECORD_PLAN = (MessageRecord, python_send_record)
_DROP_WAIT = (PROPERTY_WAIT_STORE_MSG_OK,)


def _human_time(ms):
    """``UtilAll.timeMillisToHumanString2``: local time ``yyyy-MM-dd HH:mm:ss,SSS``."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) + ",%03d" % (ms % 1000)


def _disk_util(config):
    """``diskUtil``: the used fractions of the commit-log, consume-queue and index disks as
    the retention measures them (``getDiskPartitionSpaceUsedPercent``), Java's format."""
    paths = store_paths(config)
    return "CL: %5.2f CQ: %5.2f INDEX: %5.2f" % tuple(
        disk_partition_used_ratio(paths[name]) for name in ("commitlog", "consumequeue", "index"))


def put_status_response(status, config):
    """``handlePutMessageResult``: ``(response code, remark)`` of a store status."""
    if status is S.PUT_OK:
        return R.SUCCESS, None
    if status in (S.FLUSH_DISK_TIMEOUT, S.FLUSH_SLAVE_TIMEOUT, S.SLAVE_NOT_AVAILABLE):
        return R[status.name], None
    if status is S.CREATE_MAPEDFILE_FAILED:
        return R.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."
    if status in (S.MESSAGE_ILLEGAL, S.PROPERTIES_SIZE_EXCEEDED):
        return R.MESSAGE_ILLEGAL, (
            "the message is illegal, maybe msg body or properties length not matched. msg body "
            "length limit %dB, msg properties length limit 32KB." % config["maxMessageSize"])
    if status is S.SERVICE_NOT_AVAILABLE:
        return R.SERVICE_NOT_AVAILABLE, (
            "service not available now. It may be caused by one of the following reasons: the "
            "broker's disk is full [%s], messages are put to the slave, message store has been "
            "shut down, etc." % _disk_util(config))
    if status is S.OS_PAGECACHE_BUSY:
        return R.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
    if status is S.UNKNOWN_ERROR:
        return R.SYSTEM_ERROR, "UNKNOWN_ERROR"
    return R.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT"


def _header_topic(request):
    """The topic a send asked for (SEND_MESSAGE_V2 abbreviates it ``b``)."""
    fields = request.ext_fields
    return fields.get("b") or fields.get("topic")


class _Refused(Exception):
    """A check failed: answer ``code`` with ``remark``."""

    def __init__(self, code, remark=None):
        super().__init__(remark)
        self.code = code
        self.remark = remark


class SendMessageProcessor:
    """The send path of one broker (``controller``: config, store, topic_config_manager,
    subscription_group_manager)."""

    def __init__(self, controller):
        self.controller = controller
        self.config = controller.config
        self.store_host = store_host(self.config)
        self._answer_templates = {}  # (serialize type, regionId, traceOn) -> extFields
        self._frame_templates = {}  # (regionId, traceOn) -> JsonResponseTemplate
        self._version = CURRENT_VERSION  # the dispatcher's, which answers
        store = controller.store
        # where the store can, a put whose result is final at once comes without a Deferred,
        # and a later one to _stored_later (*_later: None for a store that cannot)
        self._put_message_later = getattr(store, "put_message_at_once", None)
        self._put_batch_later = getattr(store, "put_messages_at_once", None)
        self._put_message = self._put_message_later or store.put_message
        self._put_batch = self._put_batch_later or store.put_messages
        self._then = self._stored_later  # bound once: every send passes it
        self._dispatcher = None  # register_with's, which answers through write_answer
        self._count_put = controller.broker_stats_manager.on_put

    def register_with(self, dispatcher):
        self._version = dispatcher.version
        self._dispatcher = dispatcher
        for code in (RC.SEND_MESSAGE, RC.SEND_MESSAGE_V2, RC.SEND_BATCH_MESSAGE):
            dispatcher.register(int(code), self.process_request)

    # ------------------------------------------------------------ answers

    def _response_ext(self):
        return {PROPERTY_MSG_REGION: self.config["regionId"],
                PROPERTY_TRACE_SWITCH: "true" if self.config["traceOn"] else "false"}

    def _answer(self, request, code, remark=None, header=None):
        header = header or h.SendMessageResponseHeader()
        ext = header.to_ext_fields(request.serialize_type, extra=self._response_ext())
        return request.response(int(code), remark=remark, ext_fields=ext)

    def _ext_template(self, serialize_type):
        key = (serialize_type, self.config["regionId"], self.config["traceOn"])
        template = self._answer_templates.get(key)
        if template is None:
            template = self._answer_templates[key] = h.SendMessageResponseHeader(
                msg_id="", queue_id=0, queue_offset=0).to_ext_fields(
                    serialize_type, extra=self._response_ext())
        return template

    def _new_frame_template(self, key):
        """The answer frames' template for ``key`` (``regionId``, ``traceOn``), made once."""
        frames = self._frame_templates[key] = JsonResponseTemplate(
            self._ext_template(SERIALIZE_JSON), ("msgId", "queueId", "queueOffset"),
            self._version)
        return frames

    # ------------------------------------------------------------ processing

    def process_request(self, request, context):
        # parseRequestHeader: V1 for SEND_MESSAGE, V2 (turned into V1) for 310 and 320
        if request.code == _SEND_MESSAGE:
            header = h.SendMessageRequestHeader.from_ext_fields(request.ext_fields)
        else:
            header = _V2_AS_V1(request.ext_fields)
        try:
            topic_config = self.pre_send(header, context)
            queue_id = header.queue_id
            if queue_id < 0:
                queue_id = random.randrange(99999999) % topic_config.write_queue_nums
            if self.config["brokerRole"] == "SLAVE":
                raise _Refused(*put_status_response(S.SERVICE_NOT_AVAILABLE, self.config))
            if header.batch:
                stored, wait = self.batch_records(header, request.body, topic_config, queue_id,
                                                  context)
                put_later, put_now = self._put_batch_later, self._put_batch
            else:
                stored, wait = self.message_record(header, request, topic_config, queue_id,
                                                   context)
                put_later, put_now = self._put_message_later, self._put_message
            write = context.write
            if write is not None and put_later is not None:
                put = put_later(stored, wait, self._then, (request, queue_id, write))
                if put is None:
                    return None  # answered by _stored_later
            else:
                put = put_now(stored, wait)
        except _Refused as refused:
            return self._answer(request, refused.code, refused.remark)
        if type(put) is PutMessageResult:  # final at once: stored without a wait, or refused
            return self._put_done(put, request, queue_id)
        if put.called and not put.paused:  # then its result is final
            # a plugged-in store's put stored without a flush or replica wait (ASYNC_FLUSH,
            # WAIT=false): answer now, sparing the callback chains
            if not isinstance(put.result, Failure):
                return self._put_done(put.result, request, queue_id)
            return put  # the dispatcher answers the failure
        return put.addCallback(self._put_done, request, queue_id)

    def _stored_later(self, result, waiting):
        """The store's ``then`` for a put that waited (a flush, a slave ack): the answer,
        written to the request's connection; ``waiting`` is ``(request, queue id, write)``."""
        request, queue_id, write = waiting
        self._dispatcher.write_answer(request, write, self._put_done, result, request, queue_id)

    def _put_done(self, result, request, queue_id):
        status = result.status
        if status is PUT_OK:
            code = _SUCCESS
        else:
            code, remark = put_status_response(status, self.config)
            if not status.stored:
                return self._answer(request, code, remark)
        append = result.append_result
        # Java counts the topic the message was stored under (SCHEDULE_TOPIC_XXXX when delayed)
        fields = append.dispatch_fields
        self._count_put(fields[0][0] if fields else _header_topic(request), append.msg_num,
                        append.wrote_bytes)
        # the answer: what _answer builds from a SendMessageResponseHeader, from a per-broker
        # template of its extFields (their order depends only on the key set; transactionId
        # stays null). A JSON request's answer is the whole frame, from a
        # JsonResponseTemplate (message ids are hex).
        if request.serialize_type == SERIALIZE_JSON:
            key = (self.config["regionId"], self.config["traceOn"])
            frames = self._frame_templates.get(key)
            if frames is None:
                frames = self._new_frame_template(key)
            return frames.frame(code, request.opaque, append.msg_id, queue_id,
                                append.logics_offset)
        ext = self._ext_template(request.serialize_type).copy()  # values below keep their places
        ext["msgId"] = append.msg_id
        ext["queueId"] = str(queue_id)  # Integer / Long toString
        ext["queueOffset"] = str(append.logics_offset)
        return request.response(int(code), ext_fields=ext)

    def pre_send(self, header, context):
        """``preSend`` / ``msgCheck``: the topic's config, or :class:`_Refused`."""
        start = self.config["startAcceptSendRequestTimeStamp"]
        # the clock never reads below 0, so only a start after 0 can refuse
        if start > 0 and int(self.controller.reactor.seconds() * 1000) < start:
            raise _Refused(R.SYSTEM_ERROR, "broker unable to service, until %s" % _human_time(start))
        manager = self.controller.topic_config_manager
        topic = header.topic
        if not self.config["brokerPermission"] & PERM_WRITE and manager.is_order_topic(topic):
            raise _Refused(R.NO_PERMISSION, "the broker[%s] sending message is forbidden"
                           % self.config["brokerIP1"])
        invalid = validate_topic(topic)
        if invalid is not None:
            raise _Refused(R.SYSTEM_ERROR, invalid)
        if is_not_allowed_send_topic(topic):
            raise _Refused(R.NO_PERMISSION, "Sending message to topic[%s] is forbidden." % topic)
        topic_config = manager.topic_config_table.get(topic)  # select_topic_config, inlined
        if topic_config is None:
            topic_config = self._create_topic(header, context)
        # queueId >= max(writeQueueNums, readQueueNums), without the call
        if (header.queue_id >= topic_config.write_queue_nums
                and header.queue_id >= topic_config.read_queue_nums):
            remark = "request queueId[%d] is illegal, %s Producer: %s" % (
                header.queue_id, topic_config_string(topic_config), context.peer)
            log.warn(remark)
            raise _Refused(R.SYSTEM_ERROR, remark)
        return topic_config

    def _create_topic(self, header, context):
        manager = self.controller.topic_config_manager
        topic = header.topic
        retry = topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
        sys_flag = 0
        if header.unit_mode:
            sys_flag = 2 if retry else 1  # TopicSysFlag.buildSysFlag(unit, hasUnitSub)
        log.warn("the topic {topic} not exist, producer: {peer}", topic=topic, peer=context.peer)
        topic_config = manager.create_topic_in_send_message_method(
            topic, header.default_topic, context.peer, header.default_topic_queue_nums, sys_flag)
        if topic_config is None and retry:
            topic_config = manager.create_topic_in_send_message_back_method(topic, 1, _RW, sys_flag)
        if topic_config is None:
            raise _Refused(R.TOPIC_NOT_EXIST, "topic[%s] not exist, apply first please!%s"
                           % (topic, FAQ_SUFFIX))
        return topic_config

    # ------------------------------------------------------------ records

    def _sys_flag(self, header, topic_config):
        sys_flag = header.sys_flag
        if topic_config.topic_filter_type == _MULTI_TAG:
            sys_flag |= MULTI_TAGS_FLAG
        return sys_flag

    def _retry_or_dlq(self, header, request, topic_config, queue_id):
        """``handleRetryAndDLQ`` of a message to a ``%RETRY%`` topic: ``(topic config, queue
        id)`` it goes to.

        Like Java, a message redirected to the DLQ keeps its properties (a ``DELAY`` too:
        Java's ``setDelayTimeLevel(0)`` is overwritten when the properties are set).
        """
        group = header.topic[len(RETRY_GROUP_TOPIC_PREFIX):]
        groups = getattr(self.controller, "subscription_group_manager", None)
        group_config = groups.find_subscription_group_config(group) if groups else None
        if group_config is None:
            raise _Refused(R.SUBSCRIPTION_GROUP_NOT_EXIST, "subscription group not exist, %s %s"
                           % (group, FAQ_SUFFIX))
        max_times = group_config.retry_max_times
        if request.version >= MQVersion.V3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        if (header.reconsume_times or 0) < max_times:
            return topic_config, queue_id
        dlq = dlq_topic(group)
        created = self.controller.topic_config_manager.create_topic_in_send_message_back_method(
            dlq, DLQ_NUMS_PER_GROUP, _RW, 0)
        if created is None:
            raise _Refused(R.SYSTEM_ERROR, "topic[%s] not exist" % dlq)
        return created, random.randrange(99999999) % DLQ_NUMS_PER_GROUP


    def message_record(self, header, request, topic_config, queue_id, context):
        """The record ``asyncSendMessage`` builds for one message, and its ``WAIT``."""
        if header.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            topic_config, queue_id = self._retry_or_dlq(header, request, topic_config, queue_id)
        sys_flag = header.sys_flag  # _sys_flag(), without the call
        if topic_config.topic_filter_type == _MULTI_TAG:
            sys_flag |= MULTI_TAGS_FLAG
        made = send_record(_RECORD_PLAN, topic_config.topic_name, request.body, header.properties,
                           self.config["brokerClusterName"], queue_id, header.flag, sys_flag,
                           header.born_timestamp, context.address, self.store_host,
                           header.reconsume_times)
        if made is None:
            return self._half_message_record(header, request, topic_config, queue_id, context)
        return made

    def _half_message_record(self, header, request, topic_config, queue_id, context):
        """A prepared transaction message's record, parked in the half topic as
        ``TransactionalMessageBridge.parseHalfMessageInner`` does (its properties string is
        rebuilt there, ``WAIT`` included), and its ``WAIT``."""
        if self.config["rejectTransactionMessage"]:
            raise _Refused(R.NO_PERMISSION, "the broker[%s] sending transaction message is "
                           "forbidden" % self.config["brokerIP1"])
        properties = string_to_properties(header.properties)
        properties[PROPERTY_CLUSTER] = self.config["brokerClusterName"]
        properties[PROPERTY_REAL_TOPIC] = topic_config.topic_name
        properties[PROPERTY_REAL_QUEUE_ID] = str(queue_id)
        sys_flag = ((self._sys_flag(header, topic_config) & ~TRANSACTION_ROLLBACK_TYPE)
                    | TRANSACTION_NOT_TYPE)
        record = MessageRecord(
            TRANS_HALF_TOPIC, request.body, java_property_order(properties), 0, header.flag,
            0, 0, sys_flag, header.born_timestamp, _born_host(context), 0, self.store_host,
            header.reconsume_times or 0, 0, 0)
        return record, wait_store_msg_ok(properties)

    def batch_records(self, header, body, topic_config, queue_id, context):
        """The records ``asyncSendBatchMessage`` stores (``MessageExtBatchEncoder``): each batch message's
        own properties bytes, then the batch's string (the header's properties and
        ``CLUSTER``, in ``HashMap`` order), as ``decode_batch_records`` gives them (packed:
        ``pack_batch``, which makes them only when read); and the batch's ``WAIT`` (the
        header's, as Java's ``MessageExtBatch``). A request without a body raises
        CodecError (Java: a NullPointerException, SYSTEM_ERROR)."""
        if not body:
            raise CodecError("a batch request needs a body")
        batch_properties = string_to_properties(header.properties)
        batch_properties[PROPERTY_CLUSTER] = self.config["brokerClusterName"]
        batch_properties = java_property_order(batch_properties)
        # what the batch's records share; the body CRC is the store's append's to compute
        prototype = MessageRecord(
            header.topic, queue_id=queue_id, sys_flag=self._sys_flag(header, topic_config),
            born_timestamp=header.born_timestamp, born_host=_born_host(context),
            store_host=self.store_host, reconsume_times=header.reconsume_times or 0, body_crc=0)
        return (pack_batch(body, batch_properties, prototype),
                wait_store_msg_ok(batch_properties))
