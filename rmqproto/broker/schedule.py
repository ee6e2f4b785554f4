"""Delayed delivery: Java's ``ScheduleMessageService`` and ``config/delayOffset.json``.

The store keeps a message with a ``DELAY`` level in ``SCHEDULE_TOPIC_XXXX``, queue
``level - 1``, with its real topic and queue in the ``REAL_TOPIC`` / ``REAL_QID``
properties. This service walks each level's queue from its delay offset, and once a
message's time has come (store timestamp + the level's delay, ``messageDelayLevel``)
stores it again under its real topic and queue and moves the offset on. Offsets are
persisted every ``flushDelayOffsetInterval`` ms and at shutdown, and served by
GET_ALL_DELAY_OFFSET. Only a master delivers.

The pure helpers (:func:`deliver_timestamp`, :func:`message_timeup`) take time as an
argument; ``messageDelayLevel`` is parsed by the store's ``parse_delay_levels``.
"""

import os

from twisted.internet.defer import inlineCallbacks
from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from rmqproto.broker import configfile
from rmqproto.broker.topicconfig import SCHEDULE_TOPIC
from rmqproto.codec.bodies.offsets import DelayOffsetSerializeWrapper
from rmqproto.codec.message import (
    PROPERTY_DELAY_TIME_LEVEL, PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC, MessageRecord,
    decode_record,
)
from rmqproto.errors import CodecError
from rmqproto.store.dispatch import delay_level_to_queue_id, parse_delay_levels
from rmqproto.store.results import GetMessageStatus

__all__ = ["SCHEDULE_CONSUMER_GROUP", "DELAY_FOR_A_WHILE", "DELAY_FOR_A_PERIOD",
           "delay_offset_path", "queue_id_to_delay_level", "deliver_timestamp", "message_timeup",
           "ScheduleMessageService"]

log = Logger()

#: ``MixAll.SCHEDULE_CONSUMER_GROUP``, the group name the service reads with.
SCHEDULE_CONSUMER_GROUP = "SCHEDULE_CONSUMER"
#: ms between two looks at a level's queue.
DELAY_FOR_A_WHILE = 100
#: ms to wait after a failed delivery before trying the same message again.
DELAY_FOR_A_PERIOD = 10_000
#: messages read from a level's queue per look.
_BATCH = 32

def delay_offset_path(store_root):
    """``StorePathConfigHelper.getDelayOffsetStorePath``."""
    return os.path.join(store_root, "config", "delayOffset.json")


def queue_id_to_delay_level(queue_id):
    return queue_id + 1


def deliver_timestamp(delay_millis, store_timestamp, now):
    """When a message stored at ``store_timestamp`` with a delay of ``delay_millis`` is due.

    A time further away than ``now + delay`` (the clock went back) is corrected to ``now``,
    as Java's ``correctDeliverTimestamp`` does.
    """
    due = store_timestamp + delay_millis
    return now if due > now + delay_millis else due


def message_timeup(record):
    """The message to store when ``record`` (read from the schedule topic) is due: its real
    topic and queue, the same body, flags, hosts, times and properties, ``DELAY`` removed.

    Java keeps ``DELAY`` in the stored properties text by accident (it renders the text
    before clearing it); here it is removed, since the store reads the level from it.
    """
    properties = dict(record.properties)
    properties.pop(PROPERTY_DELAY_TIME_LEVEL, None)
    try:
        topic = properties[PROPERTY_REAL_TOPIC]
        queue_id = int(properties[PROPERTY_REAL_QUEUE_ID])
    except (KeyError, ValueError):
        raise CodecError("a scheduled message without REAL_TOPIC / REAL_QID: %r"
                         % (record.properties,)) from None
    return MessageRecord(
        topic, record.body, properties, queue_id=queue_id, flag=record.flag,
        sys_flag=record.sys_flag, born_timestamp=record.born_timestamp,
        born_host=record.born_host, store_host=record.store_host,
        reconsume_times=record.reconsume_times)


class ScheduleMessageService:
    """Delivers delayed messages of one broker. ``controller`` gives ``config``
    (``messageDelayLevel``, ``flushDelayOffsetInterval``, ``storePathRootDir``,
    ``brokerRole``), ``store`` and ``reactor``. (The store announces each delivered
    message to long polling, as it does every stored message.)
    """

    def __init__(self, controller):
        self.controller = controller
        config = controller.config
        self.delay_level_table = parse_delay_levels(config["messageDelayLevel"])
        self.max_delay_level = max(self.delay_level_table)
        self.path = delay_offset_path(config["storePathRootDir"])
        self.offset_table = {}
        self._not_before = {}  # level -> ms before which its queue is not looked at
        self._busy = set()  # levels with a delivery under way
        self._tick = None
        self._persist = None

    @property
    def started(self):
        return self._tick is not None

    def now(self):
        return int(self.controller.reactor.seconds() * 1000)

    # ------------------------------------------------------------ offsets

    def encode(self):
        """``delayOffset.json`` and GET_ALL_DELAY_OFFSET's body."""
        return DelayOffsetSerializeWrapper(offset_table=self.offset_table).to_json()

    def load(self):
        """Read the offsets (file or ``.bak``) and clamp them into each level's queue."""
        wrapper = configfile.load(self.path, DelayOffsetSerializeWrapper.from_json)
        if wrapper is not None:
            self.offset_table.update(wrapper.offset_table)
        self.correct_delay_offset()
        return wrapper is not None

    def correct_delay_offset(self):
        store = self.controller.store
        for level, offset in list(self.offset_table.items()):
            queue_id = delay_level_to_queue_id(level)
            low = store.get_min_offset_in_queue(SCHEDULE_TOPIC, queue_id)
            high = store.get_max_offset_in_queue(SCHEDULE_TOPIC, queue_id)
            corrected = min(max(offset, low), high)
            if corrected != offset:
                log.error("correct delay offset [delayLevel {delay_level}] from {old} to {new}",
                          delay_level=level, old=offset, new=corrected)
                self.offset_table[level] = corrected

    def persist(self):
        configfile.persist(self.path, self.encode())

    # ------------------------------------------------------------ delivery

    def deliver_pending(self):
        """Look at every level whose queue holds undelivered messages."""
        now = self.now()
        store = self.controller.store
        for level in self.delay_level_table:
            if level in self._busy or self._not_before.get(level, 0) > now:
                continue
            queue_id = delay_level_to_queue_id(level)
            if store.get_max_offset_in_queue(SCHEDULE_TOPIC, queue_id) > self.offset_table.get(level, 0):
                self._busy.add(level)
                self._deliver_level(level).addBoth(self._level_done, level)

    def _level_done(self, result, level):
        self._busy.discard(level)
        if hasattr(result, "getErrorMessage"):
            log.failure("deliver delayed messages of level {delay_level}", result, delay_level=level)
            self._not_before[level] = self.now() + DELAY_FOR_A_PERIOD

    @inlineCallbacks
    def _deliver_level(self, level):
        store = self.controller.store
        queue_id = delay_level_to_queue_id(level)
        offset = self.offset_table.get(level, 0)
        result = store.get_message(SCHEDULE_CONSUMER_GROUP, SCHEDULE_TOPIC, queue_id, offset, _BATCH)
        if result.status in (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_OVERFLOW_BADLY,
                             GetMessageStatus.OFFSET_FOUND_NULL,
                             GetMessageStatus.MESSAGE_WAS_REMOVING):
            log.error("schedule CQ offset invalid. offset={offset}, status={status}, level={delay_level}",
                      offset=offset, status=result.status.name, delay_level=level)
            self.offset_table[level] = result.next_begin_offset
            return
        for raw in result.messages:
            record = decode_record(raw)
            now = self.now()
            due = deliver_timestamp(self.delay_level_table[level], record.store_timestamp, now)
            if due > now:
                # later messages of a level are due later still: nothing to do until then
                self._not_before[level] = due
                return
            try:
                inner = message_timeup(record)
            except CodecError as exc:
                log.error("drop a scheduled message: {error}", error=exc)
            else:
                put = yield store.put_message(inner, wait_store_msg_ok=False)  # Java: messageTimeup
                if not put.ok:
                    log.error("ScheduleMessageService, a message time up, but reput it failed, "
                              "topic: {topic} msgId {msg_id} status {status}", topic=inner.topic,
                              msg_id=record.msg_id, status=put.status.name)
                    self._not_before[level] = self.now() + DELAY_FOR_A_PERIOD
                    return
                if self.controller.config.get("enableScheduleMessageStats", True):
                    self.controller.broker_stats_manager.on_scheduled_delivery(
                        inner.topic, level, put.append_result.msg_num,
                        put.append_result.wrote_bytes)
            self.offset_table[level] = record.queue_offset + 1

    # ------------------------------------------------------------ life cycle

    def start(self):
        """Load the offsets and deliver from now on (masters only: a slave does nothing)."""
        if self.started or self.controller.config.get("brokerRole") == "SLAVE":
            return
        self.load()
        reactor = self.controller.reactor
        self._tick = LoopingCall(self.deliver_pending)
        self._tick.clock = reactor
        self._tick.start(DELAY_FOR_A_WHILE / 1000, now=False)
        self._persist = LoopingCall(self.persist)
        self._persist.clock = reactor
        self._persist.start(self.controller.config.get("flushDelayOffsetInterval", 10_000) / 1000,
                            now=False)

    def shutdown(self):
        """Stop delivering and persist the offsets."""
        if not self.started:
            return
        for loop in (self._tick, self._persist):
            if loop.running:
                loop.stop()
        self._tick = self._persist = None
        self.persist()
