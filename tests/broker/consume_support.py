"""A broker controller for consume-side tests: an in-memory store with Java's
``getMessage`` statuses, real managers, a fake clock and connections that record what
the broker sends them."""

from twisted.internet.defer import succeed
from twisted.internet.task import Clock

from rmqproto.broker.clients import ClientManager
from rmqproto.broker.config import SETTINGS
from rmqproto.broker.offsets import ConsumerOffsetManager, consumer_offset_path
from rmqproto.broker.processors import consume
from rmqproto.broker.schedule import ScheduleMessageService
from rmqproto.broker.subscriptions import SubscriptionGroupManager, subscription_group_path
from rmqproto.broker.topicconfig import SCHEDULE_TOPIC, TopicConfigManager
from rmqproto.codec.bodies.topic import TopicConfig
from rmqproto.codec.frame import RemotingCommand, decode_frame
from rmqproto.codec.message import (
    PROPERTY_DELAY_TIME_LEVEL, PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC, decode_record,
    encode_record,
)
from rmqproto.remoting import RequestContext, RequestDispatcher
from rmqproto.store.dispatch import delay_level_to_queue_id
from rmqproto.store.results import (
    AppendMessageResult, AppendMessageStatus, GetMessageResult, GetMessageStatus as G,
    PutMessageResult, PutMessageStatus,
)

NOW = 1_700_000_000


class MemoryStore:
    """Records in a list, consume queues as lists of (phy offset, tags code)."""

    def __init__(self, clock, max_delay_level=18):
        self.clock = clock
        self.log = bytearray()
        self.queues = {}
        self.min_offsets = {}
        self.puts = []
        self.max_delay_level = max_delay_level
        self.fail_puts = False
        self.suggest_slave = False
        self.message_arriving_listeners = []

    def now(self):
        return int(self.clock.seconds() * 1000)

    def put_message(self, record):
        if self.fail_puts:
            return succeed(PutMessageResult(PutMessageStatus.CREATE_MAPEDFILE_FAILED))
        level = int(record.properties.get(PROPERTY_DELAY_TIME_LEVEL, "0") or 0)
        tags_code = record.tags_code
        if level > 0:
            level = min(level, self.max_delay_level)
            record.properties[PROPERTY_REAL_TOPIC] = record.topic
            record.properties[PROPERTY_REAL_QUEUE_ID] = str(record.queue_id)
            record.topic, record.queue_id = SCHEDULE_TOPIC, delay_level_to_queue_id(level)
        queue = self.queues.setdefault((record.topic, record.queue_id), [])
        record.queue_offset = len(queue) + self.min_offsets.get((record.topic, record.queue_id), 0)
        record.commit_log_offset = len(self.log)
        record.store_timestamp = self.now()
        record.store_size = None
        raw = encode_record(record)
        self.log += raw
        queue.append((record.commit_log_offset, len(raw), tags_code))
        self.puts.append(record)
        for listener in self.message_arriving_listeners:
            listener(record.topic, record.queue_id, record.queue_offset + 1, tags_code,
                     record.store_timestamp, record.properties)
        return succeed(PutMessageResult(PutMessageStatus.PUT_OK, AppendMessageResult(
            AppendMessageStatus.PUT_OK, record.commit_log_offset, len(raw), record.msg_id,
            record.store_timestamp, record.queue_offset)))

    def _queue(self, topic, queue_id):
        return self.queues.get((topic, queue_id))

    def get_min_offset_in_queue(self, topic, queue_id):
        return self.min_offsets.get((topic, queue_id), 0)

    def get_max_offset_in_queue(self, topic, queue_id):
        queue = self._queue(topic, queue_id)
        return 0 if queue is None else len(queue) + self.get_min_offset_in_queue(topic, queue_id)

    def get_message(self, group, topic, queue_id, offset, max_msg_nums, message_filter=None):
        queue = self._queue(topic, queue_id)
        if queue is None:
            return GetMessageResult(G.NO_MATCHED_LOGIC_QUEUE)
        low, high = self.get_min_offset_in_queue(topic, queue_id), self.get_max_offset_in_queue(topic, queue_id)
        if high == 0:
            return GetMessageResult(G.NO_MESSAGE_IN_QUEUE)
        if offset < low:
            return GetMessageResult(G.OFFSET_TOO_SMALL, next_begin_offset=low, min_offset=low, max_offset=high)
        if offset == high:
            return GetMessageResult(G.OFFSET_OVERFLOW_ONE, next_begin_offset=offset, min_offset=low, max_offset=high)
        if offset > high:
            return GetMessageResult(G.OFFSET_OVERFLOW_BADLY, next_begin_offset=high, min_offset=low, max_offset=high)
        found, offsets, position = [], [], offset
        while position < high and len(found) < max_msg_nums:
            phy, size, tags_code = queue[position - low]
            position += 1
            if message_filter is not None and not message_filter(tags_code):
                continue
            found.append(bytes(self.log[phy:phy + size]))
            offsets.append(position - 1)
        return GetMessageResult(G.FOUND if found else G.NO_MATCHED_MESSAGE, found, position, low, high,
                                self.suggest_slave, offsets)

    def look_message_by_offset(self, commit_log_offset):
        if not 0 <= commit_log_offset < len(self.log):
            return None
        return decode_record(self.log, commit_log_offset)

    def get_commit_log_offset_in_queue(self, topic, queue_id, offset):
        queue = self._queue(topic, queue_id) or []
        return queue[offset][0] if offset < len(queue) else 0

    def get_message_store_timestamp(self, topic, queue_id, offset):
        queue = self._queue(topic, queue_id) or []
        if not 0 <= offset < len(queue):
            return -1
        return decode_record(self.log, queue[offset][0]).store_timestamp

    def get_max_phy_offset(self):
        return len(self.log)


class Connection:
    """A client connection: records oneway requests the broker sends."""

    def __init__(self, peer="127.0.0.1:50000"):
        self.peer = peer
        self.oneway = []
        self.closed = False

    def send_oneway(self, request):
        self.oneway.append(request)
        return succeed(None)

    def close(self):
        self.closed = True


class Controller:
    """What ``BrokerController`` gives the consume side."""

    def __init__(self, tmp_path, **settings):
        self.reactor = Clock()
        self.reactor.advance(NOW)
        values = {"storePathRootDir": str(tmp_path), "brokerName": "broker-a",
                  "brokerIP1": "127.0.0.1"}
        values.update(settings)
        self.config, _ = SETTINGS.resolve(values)
        self.store = MemoryStore(self.reactor)
        self.topic_config_manager = TopicConfigManager(self.config, self.reactor)
        self.dispatcher = RequestDispatcher()
        root = self.config["storePathRootDir"]
        self.consumer_offset_manager = ConsumerOffsetManager(consumer_offset_path(root))
        self.subscription_group_manager = SubscriptionGroupManager(
            subscription_group_path(root), self.config["autoCreateSubscriptionGroup"],
            self.reactor.seconds)
        self.client_manager = ClientManager(self)
        self.schedule_service = ScheduleMessageService(self)
        self.processor = consume.register(self)

    def topic(self, name, queues=4, **kw):
        self.topic_config_manager.update_topic_config(TopicConfig(name, queues, queues, **kw))

    def call(self, code, header=None, body=b"", connection=None, version=409, **ext):
        """Dispatch a request; the decoded response, a Deferred of it, or ``None``."""
        connection = connection or Connection()
        fields = header.to_ext_fields() if header is not None else (ext or None)
        request = RemotingCommand(int(code), opaque=7, ext_fields=fields, body=body, version=version)
        frame = self.dispatcher.dispatch(request, RequestContext(connection, connection.peer))
        if frame is None:
            return None
        if hasattr(frame, "addCallback"):
            return frame.addCallback(lambda f: decode_frame(f[4:]))
        return decode_frame(frame[4:])


def result_of(deferred):
    """The current result of a fired Deferred (fails the test when it has not fired)."""
    results = []
    deferred.addBoth(results.append)
    assert results, "the Deferred has not fired"
    return results[0]
