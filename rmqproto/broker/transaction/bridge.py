"""The transaction path's access to the store and to the checked offsets: Java's
``TransactionalMessageBridge``.

Half and op queues are read as the system group ``CID_RMQ_SYS_TRANS`` reads them; how far
each has been checked is that group's consumer offset (``consumerOffset.json``), so a
restarted broker checks on from where it stopped.
"""

from twisted.internet import defer
from twisted.logger import Logger

from rmqproto.broker.config import store_host
from rmqproto.broker.transaction.check import HalfRead, OpRecord
from rmqproto.broker.transaction.records import CHECK_GROUP, op_record
from rmqproto.broker.topicconfig import TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC
from rmqproto.codec.bodies.topic import PERM_READ, PERM_WRITE
from rmqproto.codec.message import PROPERTY_TAGS, decode_record
from rmqproto.errors import CodecError
from rmqproto.store.results import GetMessageStatus as G

__all__ = ["TransactionalMessageBridge", "OP_PULL_BATCH"]

log = Logger()

#: Op records read per ``getMessage`` (``fillOpRemoveMap``).
OP_PULL_BATCH = 32

#: Statuses after which a queue has nothing more to read (Java's ``NO_NEW_MSG``).
_NO_NEW = (G.NO_MESSAGE_IN_QUEUE, G.OFFSET_OVERFLOW_ONE)


def _half_offset(body):
    """``getLong`` of an op record's body: -1 when it is no number."""
    try:
        return int(bytes(body).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return -1


class TransactionalMessageBridge:
    """``controller`` gives ``config``, ``reactor``, ``store``, ``topic_config_manager`` and
    ``consumer_offset_manager``."""

    def __init__(self, controller):
        self.controller = controller
        self.store_host = store_host(controller.config)

    def now(self):
        return int(self.controller.reactor.seconds() * 1000)

    # ------------------------------------------------------------ offsets

    def half_queue_ids(self):
        """``fetchMessageQueues`` of the half topic, whose config is made (1 queue) on first use."""
        topic_config = self.controller.topic_config_manager.create_topic_in_send_message_back_method(
            TRANS_HALF_TOPIC, 1, PERM_READ | PERM_WRITE, 0)
        return range(topic_config.read_queue_nums)

    def fetch_consume_offset(self, topic, queue_id):
        """The group's offset, else the queue's minimum."""
        offset = self.controller.consumer_offset_manager.query_offset(CHECK_GROUP, topic, queue_id)
        if offset == -1:
            offset = self.controller.store.get_min_offset_in_queue(topic, queue_id)
        return offset

    def update_consume_offset(self, topic, queue_id, offset):
        self.controller.consumer_offset_manager.commit_offset(CHECK_GROUP, topic, queue_id, offset)

    # ------------------------------------------------------------ reading

    def read_ops(self, queue_id, op_offset):
        """``(op records from op_offset on, op_offset)``, or None when the store cannot be read.
        An illegal op offset (removed, beyond the queue) moves to where the store says
        reading goes on, as ``fillOpRemoveMap`` does."""
        store, ops, offset = self.controller.store, [], op_offset
        while True:
            result = store.get_message(CHECK_GROUP, TRANS_OP_HALF_TOPIC, queue_id, offset,
                                       OP_PULL_BATCH)
            if result is None:
                return None
            if result.status is G.FOUND:
                for raw in result.messages:
                    try:
                        record = decode_record(raw)
                    except CodecError as error:
                        log.error("unreadable op record: {error}", error=error)
                        continue
                    ops.append(OpRecord(record.queue_offset, record.properties.get(PROPERTY_TAGS),
                                        _half_offset(record.body)))
                if result.next_begin_offset <= offset:
                    break
                offset = result.next_begin_offset
                continue
            if (result.status not in _NO_NEW and not ops and offset == op_offset
                    and result.next_begin_offset != offset):
                log.warn("The miss op offset={offset} in queue={queue} is illegal: {status}",
                         offset=offset, queue=queue_id, status=result.status.name)
                op_offset = offset = result.next_begin_offset
                self.update_consume_offset(TRANS_OP_HALF_TOPIC, queue_id, op_offset)
                continue
            break
        return ops, op_offset

    def half_reader(self, queue_id):
        """``read_half(offset)`` of one half queue, for :func:`plan_queue_check`."""
        store = self.controller.store

        def read_half(offset):
            result = store.get_message(CHECK_GROUP, TRANS_HALF_TOPIC, queue_id, offset, 1)
            if result is None:
                return HalfRead(None, offset, no_new=True)
            if result.status is G.FOUND and result.messages:
                try:
                    return HalfRead(decode_record(result.messages[0]))
                except CodecError as error:
                    log.error("unreadable half message at {offset}: {error}", offset=offset,
                              error=error)
                    return HalfRead(None, offset + 1)
            return HalfRead(None, result.next_begin_offset, no_new=result.status in _NO_NEW)

        return read_half

    def look_message_by_offset(self, commit_log_offset):
        return self.controller.store.look_message_by_offset(commit_log_offset)

    # ------------------------------------------------------------ writing

    def put(self, record, wait_store_msg_ok=False):
        """A Deferred of the store's ``PutMessageResult``."""
        return defer.maybeDeferred(self.controller.store.put_message, record, wait_store_msg_ok)

    def put_op(self, half):
        """``deletePrepareMessage``: the op record saying ``half`` is done; a Deferred of
        the put's result. Java waits for it as for a ``WAIT=true`` message."""
        return self.put(op_record(half, self.store_host, self.now()), True)
