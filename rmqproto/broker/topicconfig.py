"""The broker's topic table: Java's ``TopicConfigManager``.

Holds every :class:`~rmqproto.codec.bodies.topic.TopicConfig` with its
:class:`~rmqproto.codec.bodies.topic.DataVersion`, creates the system topics at start,
creates topics on send from a default topic (``createTopicInSendMessageMethod``) and
retry/DLQ topics (``createTopicInSendMessageBackMethod``), and persists the table as
Java's ``config/topics.json``. Time comes from ``clock.seconds()``.

Callables in ``created_listeners`` get each topic created on the send path (the
controller then re-registers with the NameServers, as Java does).
"""

import os
from functools import lru_cache

from twisted.logger import Logger

from rmqproto.broker import configfile
from rmqproto.codec.bodies.topic import (
    PERM_INHERIT, PERM_READ, PERM_WRITE, DataVersion, TopicConfig, TopicConfigSerializeWrapper,
    TopicFilterType, perm_to_string,
)

__all__ = [
    "AUTO_CREATE_TOPIC_KEY_TOPIC", "SCHEDULE_TOPIC", "BENCHMARK_TOPIC", "TRANS_HALF_TOPIC",
    "TRACE_TOPIC", "TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC", "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT", "RETRY_GROUP_TOPIC_PREFIX", "DLQ_GROUP_TOPIC_PREFIX", "REPLY_TOPIC_POSTFIX",
    "SYSTEM_TOPIC_PREFIX", "TOPIC_MAX_LENGTH", "MAX_QUEUE_NUMS", "validate_topic",
    "validate_queue_nums", "is_system_topic",
    "is_not_allowed_send_topic", "retry_topic", "dlq_topic", "TopicConfigManager",
    "topic_config_path", "topic_config_string",
]

log = Logger()

# TopicValidator / MixAll constants
AUTO_CREATE_TOPIC_KEY_TOPIC = "TBW102"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
BENCHMARK_TOPIC = "BenchmarkTest"
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
REPLY_TOPIC_POSTFIX = "REPLY_TOPIC"
TOPIC_MAX_LENGTH = 127
SCHEDULE_TOPIC_QUEUE_NUM = 18

_SYSTEM_TOPICS = frozenset((
    AUTO_CREATE_TOPIC_KEY_TOPIC, SCHEDULE_TOPIC, BENCHMARK_TOPIC, TRANS_HALF_TOPIC, TRACE_TOPIC,
    TRANS_OP_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC, SELF_TEST_TOPIC, OFFSET_MOVED_EVENT))
_NOT_ALLOWED_SEND_TOPICS = frozenset((
    SCHEDULE_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC,
    SELF_TEST_TOPIC, OFFSET_MOVED_EVENT))
_VALID_CHARS = frozenset("%|-_0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


@lru_cache(maxsize=4096)  # every send checks its topic; a broker's topics repeat
def validate_topic(topic):
    """``TopicValidator.validateTopic``: ``None`` when valid, else Java's remark (the
    caller answers SYSTEM_ERROR). Length counts UTF-16 units, as Java's ``length()``."""
    if topic is None or not topic.strip():
        return "The specified topic is blank."
    if not _VALID_CHARS.issuperset(topic):
        return "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(topic) > TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    return None


#: The most read or write queues UPDATE_AND_CREATE_TOPIC gives a topic. Java takes any int,
#: and every GET_TOPIC_STATS_INFO and GET_CONSUME_STATS then walks that many queues (a
#: mistyped count would stall this broker's one reactor thread).
MAX_QUEUE_NUMS = 65536


def validate_queue_nums(read_queue_nums, write_queue_nums):
    """``None`` when both counts are within 0..:data:`MAX_QUEUE_NUMS`, else the remark of the
    SYSTEM_ERROR that refuses them (0 is allowed: it is how queues are taken out of use)."""
    if 0 <= read_queue_nums <= MAX_QUEUE_NUMS and 0 <= write_queue_nums <= MAX_QUEUE_NUMS:
        return None
    return ("readQueueNums and writeQueueNums must be within 0..%d, got %d and %d"
            % (MAX_QUEUE_NUMS, read_queue_nums, write_queue_nums))


#: ``TopicValidator.isNotAllowedSendTopic(topic)`` (the set's own test: every send asks)
is_not_allowed_send_topic = _NOT_ALLOWED_SEND_TOPICS.__contains__


def retry_topic(group):
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group):
    return DLQ_GROUP_TOPIC_PREFIX + group


def topic_config_path(store_root):
    """``BrokerPathConfigHelper.getTopicConfigPath``: ``<storePathRootDir>/config/topics.json``."""
    return os.path.join(store_root, "config", "topics.json")


def is_system_topic(topic, extra=()):
    """``TopicValidator.isSystemTopic``; ``extra`` holds the broker's own system topics
    (cluster name, broker name, …) that Java adds at start."""
    return topic in _SYSTEM_TOPICS or topic in extra or topic.startswith(SYSTEM_TOPIC_PREFIX)


class TopicConfigManager:
    """The topic table of one broker (Java's ``TopicConfigManager``).

    ``config`` is the broker's settings dict; ``path`` the ``topics.json`` file (``None``:
    not persisted). :meth:`load` reads the file over the system topics created here.
    """

    def __init__(self, config, clock, path=None):
        self.config = config
        self.clock = clock
        self.path = path
        self.topic_config_table = {}
        self.data_version = DataVersion(timestamp=self.now())
        self.system_topics = set()
        self.created_listeners = []
        self._create_system_topics()

    def now(self):
        return int(self.clock.seconds() * 1000)

    def _system_topic(self, name, queues=16, perm=PERM_READ | PERM_WRITE):
        self.system_topics.add(name)
        self.topic_config_table[name] = TopicConfig(name, queues, queues, perm)

    def _create_system_topics(self):
        c = self.config
        self._system_topic(SELF_TEST_TOPIC, 1)
        if c["autoCreateTopicEnable"]:
            self._system_topic(AUTO_CREATE_TOPIC_KEY_TOPIC, c["defaultTopicQueueNums"],
                               PERM_INHERIT | PERM_READ | PERM_WRITE)
        self._system_topic(BENCHMARK_TOPIC, 1024)
        rw = PERM_READ | PERM_WRITE
        self._system_topic(c["brokerClusterName"], 16,
                           PERM_INHERIT | (rw if c["clusterTopicEnable"] else 0))
        self._system_topic(c["brokerName"], 1, PERM_INHERIT | (rw if c["brokerTopicEnable"] else 0))
        self._system_topic(OFFSET_MOVED_EVENT, 1)
        self._system_topic(SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUM)
        if c["traceTopicEnable"]:
            self._system_topic(c["msgTraceTopicName"], 1)
        self._system_topic("%s_%s" % (c["brokerClusterName"], REPLY_TOPIC_POSTFIX), 1)

    # ------------------------------------------------------------ queries

    def select_topic_config(self, topic):
        return self.topic_config_table.get(topic)

    def is_order_topic(self, topic):
        topic_config = self.topic_config_table.get(topic)
        return topic_config is not None and topic_config.order

    def is_system_topic(self, topic):
        return is_system_topic(topic, self.system_topics)

    def system_topic_set(self):
        """``TopicValidator.getSystemTopicSet()``: Java's fixed system topics and this broker's."""
        return _SYSTEM_TOPICS | self.system_topics

    def build_topic_config_serialize_wrapper(self):
        """The table and its data version (a snapshot: later changes do not show in it)."""
        return TopicConfigSerializeWrapper(topic_config_table=dict(self.topic_config_table),
                                           data_version=DataVersion(self.data_version.timestamp,
                                                                    self.data_version.counter))

    def encode(self):
        """``topics.json`` / GET_ALL_TOPIC_CONFIG's body."""
        return self.build_topic_config_serialize_wrapper().to_json()

    # ------------------------------------------------------------ changes

    def _changed(self):
        self.data_version = self.data_version.next_version(self.now())
        self.persist()

    def update_topic_config(self, topic_config):
        """Create or replace a topic (UPDATE_AND_CREATE_TOPIC); bumps the data version."""
        old = self.topic_config_table.get(topic_config.topic_name)
        self.topic_config_table[topic_config.topic_name] = topic_config
        log.info("{what} topic config {new}", what="update" if old else "create new",
                 new=topic_config)
        self._changed()

    def delete_topic_config(self, topic):
        if self.topic_config_table.pop(topic, None) is None:
            log.warn("delete topic config failed, topic: {topic} not exists", topic=topic)
            return False
        self._changed()
        return True

    def create_topic_in_send_message_method(self, topic, default_topic, remote_address,
                                            client_default_topic_queue_nums, topic_sys_flag):
        """Create ``topic`` from ``default_topic`` if that one has the INHERIT perm; ``None`` if not."""
        existing = self.topic_config_table.get(topic)
        if existing is not None:
            return existing
        default = self.topic_config_table.get(default_topic)
        if default is None:
            log.warn("Create new topic failed, because the default topic[{default}] not exist. "
                     "producer:[{peer}]", default=default_topic, peer=remote_address)
            return None
        if default_topic == AUTO_CREATE_TOPIC_KEY_TOPIC and not self.config["autoCreateTopicEnable"]:
            default.perm = PERM_READ | PERM_WRITE
        if not default.perm & PERM_INHERIT:
            log.warn("Create new topic failed, because the default topic[{default}] has no perm "
                     "[{perm}] producer:[{peer}]", default=default_topic, perm=default.perm,
                     peer=remote_address)
            return None
        queue_nums = max(0, min(client_default_topic_queue_nums, default.write_queue_nums))
        topic_config = TopicConfig(topic, queue_nums, queue_nums, default.perm & ~PERM_INHERIT,
                                   topic_filter_type=default.topic_filter_type,
                                   topic_sys_flag=topic_sys_flag)
        log.info("Create new topic by default topic:[{default}] config:[{config}] producer:[{peer}]",
                 default=default_topic, config=topic_config, peer=remote_address)
        return self._created(topic_config)

    def create_topic_in_send_message_back_method(self, topic, queue_nums, perm, topic_sys_flag):
        """Create a retry or DLQ topic with ``queue_nums`` queues unless it exists."""
        existing = self.topic_config_table.get(topic)
        if existing is not None:
            return existing
        topic_config = TopicConfig(topic, queue_nums, queue_nums, perm, topic_sys_flag=topic_sys_flag)
        log.info("create new topic {config}", config=topic_config)
        return self._created(topic_config)

    def _created(self, topic_config):
        self.topic_config_table[topic_config.topic_name] = topic_config
        self._changed()
        for listener in list(self.created_listeners):
            listener(topic_config)
        return topic_config

    def update_order_topic_config(self, order_topics):
        """``updateOrderTopicConfig``: a topic is ordered exactly when ``order_topics`` (the
        NameServer's ORDER_TOPIC_CONFIG table) names it."""
        changed = False
        for name, topic_config in self.topic_config_table.items():
            order = name in order_topics
            if topic_config.order != order:
                topic_config.order = order
                changed = True
                log.info("update order topic config, topic={topic}, order={order}",
                         topic=name, order=order)
        if changed:
            self._changed()

    # ------------------------------------------------------------ persistence

    def persist(self):
        if self.path is not None:
            configfile.persist(self.path, self.encode())

    def load(self):
        """Read ``topics.json`` (or its ``.bak``) over the table; whether a file was read."""
        if self.path is None:
            return False
        wrapper = configfile.load(self.path, TopicConfigSerializeWrapper.from_json)
        if wrapper is None:
            return False
        self.topic_config_table.update(wrapper.topic_config_table)
        self.data_version = wrapper.data_version
        for topic_config in wrapper.topic_config_table.values():
            log.info("load exist local topic, {config}", config=topic_config)
        return True


def topic_config_string(topic_config):
    """``TopicConfig.toString()``, as Java quotes it in remarks."""
    tc = topic_config
    return ("TopicConfig [topicName=%s, readQueueNums=%d, writeQueueNums=%d, perm=%s, "
            "topicFilterType=%s, topicSysFlag=%d, order=%s]" % (
                tc.topic_name, tc.read_queue_nums, tc.write_queue_nums, perm_to_string(tc.perm),
                TopicFilterType(tc.topic_filter_type).value, tc.topic_sys_flag,
                "true" if tc.order else "false"))
