"""Topic administration, broker information and message queries, answered as Java's
``AdminBrokerProcessor`` and ``QueryMessageProcessor`` do.

UPDATE_AND_CREATE_TOPIC, GET_ALL_TOPIC_CONFIG, GET_BROKER_RUNTIME_INFO, GET_BROKER_CONFIG,
UPDATE_BROKER_CONFIG, DELETE_TOPIC_IN_BROKER, GET_MAX_OFFSET, GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME,
GET_TOPIC_STATS_INFO, VIEW_MESSAGE_BY_ID, QUERY_MESSAGE and DELETE_EXPIRED_COMMITLOG.
"""

import os
import shutil

from twisted.logger import Logger

from rmqproto.broker.config import SETTINGS, is_slave
from rmqproto.broker.topicconfig import validate_queue_nums, validate_topic
from rmqproto.codec import headers as h
from rmqproto.codec.bodies.client import MessageQueue
from rmqproto.codec.bodies.offsets import TopicOffset, TopicStatsTable
from rmqproto.codec.bodies.route import KVTable
from rmqproto.codec.bodies.topic import TopicConfig
from rmqproto.codec.codes import CURRENT_VERSION, RequestCode as RC, ResponseCode as R, version_desc
from rmqproto.broker.configfile import persist
from rmqproto.broker.stats import message_totals
from rmqproto.config import ConfigError, dump_properties, parse_properties
from rmqproto.errors import CodecError

__all__ = ["AdminBrokerProcessor", "human_readable_byte_count", "UNIQUE_MSG_QUERY_FLAG"]

log = Logger()

#: ``MixAll.UNIQUE_MSG_QUERY_FLAG``: QUERY_MESSAGE looks the key up as a UNIQ_KEY.
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"

_SLAVE_REMARK = ("Can't modify topic or subscription group from slave broker, "
                 "please execute it from master broker.")


def human_readable_byte_count(count, si=False):
    """``MixAll.humanReadableByteCount``: ``"512 B"``, ``"1.5 KiB"``, …"""
    unit = 1000 if si else 1024
    if count < unit:
        return "%d B" % count
    exp = 0
    value = float(count)
    while value >= unit and exp < 6:
        value /= unit
        exp += 1
    prefix = ("kMGTPE" if si else "KMGTPE")[exp - 1] + ("" if si else "i")
    return "%.1f %sB" % (count / unit ** exp, prefix)


class AdminBrokerProcessor:
    """Topic and broker administration of one broker (``controller``: config, store,
    topic_config_manager, registration)."""

    def __init__(self, controller):
        self.controller = controller
        self.config = controller.config

    @property
    def store(self):
        return self.controller.store

    def register_with(self, dispatcher):
        handlers = {
            RC.UPDATE_AND_CREATE_TOPIC: self.update_and_create_topic,
            RC.GET_ALL_TOPIC_CONFIG: self.get_all_topic_config,
            RC.GET_BROKER_RUNTIME_INFO: self.get_broker_runtime_info,
            RC.GET_BROKER_CONFIG: self.get_broker_config,
            RC.UPDATE_BROKER_CONFIG: self.update_broker_config,
            RC.GET_MAX_OFFSET: self.get_max_offset,
            RC.GET_MIN_OFFSET: self.get_min_offset,
            RC.SEARCH_OFFSET_BY_TIMESTAMP: self.search_offset_by_timestamp,
            RC.GET_EARLIEST_MSG_STORETIME: self.get_earliest_msg_storetime,
            RC.GET_TOPIC_STATS_INFO: self.get_topic_stats_info,
            RC.VIEW_MESSAGE_BY_ID: self.view_message_by_id,
            RC.QUERY_MESSAGE: self.query_message,
            RC.DELETE_EXPIRED_COMMITLOG: self.delete_expired_commit_log,
            RC.DELETE_TOPIC_IN_BROKER: self.delete_topic_in_broker,
        }
        for code, handler in handlers.items():
            dispatcher.register(int(code), handler)

    # ------------------------------------------------------------ topics

    def _refused_topic_change(self, request, topic, queue_nums=None):
        """The answer refusing a change of ``topic`` as Java's admin requests refuse it (an
        illegal name or queue counts, a system topic), or None."""
        invalid = validate_topic(topic)
        if invalid is None and queue_nums is not None:
            invalid = validate_queue_nums(*queue_nums)
        if invalid is not None:
            return request.response(R.SYSTEM_ERROR, remark=invalid)
        if self.controller.topic_config_manager.is_system_topic(topic):
            return request.response(R.SYSTEM_ERROR,
                                    remark="The topic[%s] is conflict with system topic." % topic)
        return None

    def update_and_create_topic(self, request, context):
        if is_slave(self.config):
            return request.response(R.SYSTEM_ERROR, remark=_SLAVE_REMARK)
        header = h.CreateTopicRequestHeader.from_ext_fields(request.ext_fields)
        log.info("updateAndCreateTopic called by {peer}", peer=context.peer)
        refused = self._refused_topic_change(
            request, header.topic, (header.read_queue_nums, header.write_queue_nums))
        if refused is not None:
            return refused
        topic_config = TopicConfig(header.topic, header.read_queue_nums, header.write_queue_nums,
                                   header.perm, topic_filter_type=header.topic_filter_type,
                                   topic_sys_flag=header.topic_sys_flag or 0)
        self.controller.topic_config_manager.update_topic_config(topic_config)
        # Java waits for the NameServers before answering (registerIncrementBrokerData)
        return self.controller.registration.register_increment(topic_config).addCallback(
            lambda _: request.response(R.SUCCESS))

    def delete_topic_in_broker(self, request, context):
        """``mqadmin deleteTopic``'s broker half: the topic's configuration goes (and with the
        next registration its route), and so do the consume queues of every topic no longer
        configured (``AdminBrokerProcessor#deleteTopic``, ``cleanUnusedTopic``)."""
        if is_slave(self.config):
            return request.response(R.SYSTEM_ERROR, remark=_SLAVE_REMARK)
        header = h.DeleteTopicRequestHeader.from_ext_fields(request.ext_fields)
        log.info("deleteTopic called by {peer}", peer=context.peer)
        topic = header.topic
        refused = self._refused_topic_change(request, topic)
        if refused is not None:
            return refused
        manager = self.controller.topic_config_manager
        manager.delete_topic_config(topic)
        self.store.clean_unused_topic(set(manager.topic_config_table))
        if self.config["autoDeleteUnusedStats"]:
            self.controller.broker_stats_manager.on_topic_deleted(topic)
        return request.response(R.SUCCESS)

    def get_all_topic_config(self, request, context):
        return request.response(R.SUCCESS, body=self.controller.topic_config_manager.encode())

    def get_topic_stats_info(self, request, context):
        header = h.GetTopicStatsInfoRequestHeader.from_ext_fields(request.ext_fields)
        topic = header.topic
        topic_config = self.controller.topic_config_manager.select_topic_config(topic)
        if topic_config is None:
            return request.response(R.TOPIC_NOT_EXIST, remark="topic[%s] not exist" % topic)
        table = {}
        for queue_id in range(topic_config.write_queue_nums):
            low = max(0, self.store.get_min_offset_in_queue(topic, queue_id))
            high = max(0, self.store.get_max_offset_in_queue(topic, queue_id))
            stamp = self.store.get_message_store_timestamp(topic, queue_id, high - 1) if high else 0
            queue = MessageQueue(topic=topic, broker_name=self.config["brokerName"], queue_id=queue_id)
            table[queue] = TopicOffset(min_offset=low, max_offset=high, last_update_timestamp=stamp)
        return request.response(R.SUCCESS, body=TopicStatsTable(offset_table=table).to_json())

    # ------------------------------------------------------------ broker

    def runtime_info(self):
        """``prepareRuntimeInfo``: the store's table plus the broker's own keys."""
        info = dict(self.store.runtime_info())
        info["brokerVersionDesc"] = version_desc(CURRENT_VERSION)
        info["brokerVersion"] = str(CURRENT_VERSION)
        info.update(self.controller.broker_stats.runtime_info(*message_totals(
            self.store, self.controller.broker_stats_manager)))
        for queue, capacity in (("sendThreadPoolQueue", "sendThreadPoolQueueCapacity"),
                                ("pullThreadPoolQueue", "pullThreadPoolQueueCapacity"),
                                ("queryThreadPoolQueue", "queryThreadPoolQueueCapacity")):
            info[queue + "Size"] = "0"
            info[capacity] = str(self.config[capacity])
            info[queue + "HeadWaitTimeMills"] = "0"
        info["EndTransactionQueueSize"] = "0"
        info["EndTransactionThreadPoolQueueCapacity"] = str(self.config["endTransactionPoolQueueCapacity"])
        info["dispatchBehindBytes"] = str(self.store.dispatch_behind_bytes())
        info.setdefault("pageCacheLockTimeMills", "0")
        info["startAcceptSendRequestTimeStamp"] = str(self.config["startAcceptSendRequestTimeStamp"])
        root = self.config["storePathRootDir"]
        if os.path.exists(root):
            usage = shutil.disk_usage(root)
            info["commitLogDirCapacity"] = "Total : %s, Free : %s." % (
                human_readable_byte_count(usage.total), human_readable_byte_count(usage.free))
        return info

    def get_broker_runtime_info(self, request, context):
        return request.response(R.SUCCESS, body=KVTable(table=self.runtime_info()).to_json())

    def delete_expired_commit_log(self, request, context):
        """``deleteExpiredCommitLog``: the store's next retention passes delete expired
        commit-log segments whatever the hour (``executeDeleteFilesManually``). This request
        (329) is the trigger; Java 4.9.x answers TRIGGER_DELETE_FILES (27) with
        REQUEST_CODE_NOT_SUPPORTED, and so do we."""
        log.warn("invoke deleteExpiredCommitLog by {peer}", peer=context.peer)
        self.store.delete_files_manually()
        return request.response(R.SUCCESS)

    def get_broker_config(self, request, context):
        """The settings as a properties text and the configuration's data version."""
        version = self.controller.config_data_version.to_json().decode("utf-8")
        ext = h.GetBrokerConfigResponseHeader(version=version).to_ext_fields(request.serialize_type)
        return request.response(R.SUCCESS, ext_fields=ext,
                                body=dump_properties(self.config).encode("utf-8"))

    def update_broker_config(self, request, context):
        """``updateBrokerConfig``: the body's settings (properties text) replace the current
        ones and the whole configuration is written to the broker's config file, as Java's
        ``Configuration#update`` does. Names no setting has are ignored as Java ignores them;
        unlike Java, a value its setting refuses fails the request and changes nothing.
        A new ``brokerPermission`` is registered with the NameServers at once."""
        log.info("updateBrokerConfig called by {peer}", peer=context.peer)
        if not request.body:
            return request.response(R.SUCCESS)
        try:
            given = parse_properties(request.body.decode("utf-8"))
            changes = {name: SETTINGS.by_name[name].parse(text)
                       for name, text in given.items() if name in SETTINGS.by_name}
        except (UnicodeDecodeError, CodecError, ConfigError) as exc:
            return request.response(R.SYSTEM_ERROR, remark="updateBrokerConfig refused: %s" % exc)
        log.info("updateBrokerConfig, new config: {changes}", changes=changes)
        self.config.update(changes)
        controller = self.controller
        controller.config_data_version = controller.config_data_version.next_version(
            int(controller.reactor.seconds() * 1000))
        if "brokerPermission" in changes:
            manager = controller.topic_config_manager
            manager.data_version = manager.data_version.next_version(manager.now())
            controller.registration.register_all(oneway=True)
        path = controller.config_file
        if not persist(path, dump_properties(self.config).encode("utf-8")):  # logged there
            return request.response(R.SYSTEM_ERROR, remark="the settings apply now, but %s could "
                                    "not be saved" % path)
        return request.response(R.SUCCESS)

    # ------------------------------------------------------------ offsets

    def _offset_answer(self, request, header_class, response_class, query):
        header = header_class.from_ext_fields(request.ext_fields)
        value = query(header)
        field = "timestamp" if response_class is h.GetEarliestMsgStoretimeResponseHeader else "offset"
        ext = response_class(**{field: value}).to_ext_fields(request.serialize_type)
        return request.response(R.SUCCESS, ext_fields=ext)

    def get_max_offset(self, request, context):
        return self._offset_answer(
            request, h.GetMaxOffsetRequestHeader, h.GetMaxOffsetResponseHeader,
            lambda q: self.store.get_max_offset_in_queue(q.topic, q.queue_id))

    def get_min_offset(self, request, context):
        return self._offset_answer(
            request, h.GetMinOffsetRequestHeader, h.GetMinOffsetResponseHeader,
            lambda q: self.store.get_min_offset_in_queue(q.topic, q.queue_id))

    def search_offset_by_timestamp(self, request, context):
        return self._offset_answer(
            request, h.SearchOffsetRequestHeader, h.SearchOffsetResponseHeader,
            lambda q: self.store.get_offset_in_queue_by_time(q.topic, q.queue_id, q.timestamp))

    def get_earliest_msg_storetime(self, request, context):
        return self._offset_answer(
            request, h.GetEarliestMsgStoretimeRequestHeader, h.GetEarliestMsgStoretimeResponseHeader,
            lambda q: self.store.get_earliest_message_time(q.topic, q.queue_id))

    # ------------------------------------------------------------ messages

    def view_message_by_id(self, request, context):
        header = h.ViewMessageRequestHeader.from_ext_fields(request.ext_fields)
        data = self.store.select_one_message_by_offset(header.offset)
        if data is None:
            return request.response(R.SYSTEM_ERROR,
                                    remark="can not find message by the offset, %d" % header.offset)
        return request.response(R.SUCCESS, body=bytes(data))

    def query_message(self, request, context):
        header = h.QueryMessageRequestHeader.from_ext_fields(request.ext_fields)
        if (request.ext_fields or {}).get(UNIQUE_MSG_QUERY_FLAG) == "true":
            header.max_num = self.config["defaultQueryMaxNum"]
        result = self.store.query_message(header.topic, header.key, header.max_num,
                                          header.begin_timestamp, header.end_timestamp)
        ext = h.QueryMessageResponseHeader(
            index_last_update_timestamp=result.index_last_update_timestamp,
            index_last_update_phyoffset=result.index_last_update_phyoffset,
        ).to_ext_fields(request.serialize_type)
        if not result.messages:
            return request.response(R.QUERY_NOT_FOUND, ext_fields=ext,
                                    remark="can not find message, maybe time range not correct")
        return request.response(R.SUCCESS, ext_fields=ext,
                                body=b"".join(bytes(m) for m in result.messages))
