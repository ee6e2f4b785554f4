"""The records of the transaction path, made from a stored half message: the committed
message, the op record, the half message put back for a check, the discarded message and
the CHECK_TRANSACTION_STATE request. Pure: no store, no clock.

The rules are those of ``TransactionalMessageBridge``, ``EndTransactionProcessor``,
``DefaultTransactionalMessageCheckListener`` and
``AbstractTransactionalMessageCheckListener#sendCheckMessage`` (4.9.7).
"""

from rmqproto.broker.processors.send import java_property_order, wait_store_msg_ok
from rmqproto.broker.topicconfig import (
    TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC,
)
from rmqproto.codec import headers as h
from rmqproto.codec.codes import RequestCode
from rmqproto.codec.frame import RemotingCommand
from rmqproto.codec.message import (
    PROPERTY_PRODUCER_GROUP, PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC, PROPERTY_TAGS,
    PROPERTY_TRANSACTION_CHECK_TIMES, PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    PROPERTY_WAIT_STORE_MSG_OK, TRANSACTION_ROLLBACK_TYPE, MessageRecord, encode_record,
)

__all__ = ["CHECK_GROUP", "REMOVE_TAG", "HalfMessageError", "real_queue", "committed_record",
           "op_record", "renewed_half", "immunity_half", "discarded_record",
           "check_state_request", "producer_group", "reset_transaction_type"]

#: ``MixAll.CID_SYS_RMQ_TRANS``: the group whose consumer offsets say how far the half and
#: op queues have been checked.
CHECK_GROUP = "CID_RMQ_SYS_TRANS"
#: ``TransactionalMessageUtil.REMOVETAG``: the tag of an op record (its half message is done).
REMOVE_TAG = "d"


class HalfMessageError(ValueError):
    """A stored message that is not a usable half message (no ``REAL_TOPIC`` / ``REAL_QID``)."""


def reset_transaction_type(sys_flag, transaction_type):
    """``MessageSysFlag.resetTransactionValue``."""
    return (sys_flag & ~TRANSACTION_ROLLBACK_TYPE) | transaction_type


def real_queue(half):
    """``(REAL_TOPIC, REAL_QID)`` of a half message; :class:`HalfMessageError` when missing
    or not a number (Java fails there with a NullPointerException or NumberFormatException)."""
    topic = half.properties.get(PROPERTY_REAL_TOPIC)
    queue_id = half.properties.get(PROPERTY_REAL_QUEUE_ID)
    if topic:
        try:
            return topic, int(queue_id)
        except (TypeError, ValueError):
            pass
    raise HalfMessageError("message at %d is no half message (REAL_TOPIC %r, REAL_QID %r)"
                           % (half.commit_log_offset, topic, queue_id))


def committed_record(half, transaction_type, prepared_offset):
    """``EndTransactionProcessor#endMessageTransaction``: the real message a commit puts, and
    its ``WAIT``. Java builds the stored properties string before it clears ``REAL_TOPIC``,
    ``REAL_QID`` and ``TRAN_MSG`` from the map, so the stored message keeps all three; the
    sysFlag's transaction type becomes ``transaction_type`` (COMMIT)."""
    topic, queue_id = real_queue(half)
    record = MessageRecord(
        topic, half.body, java_property_order(half.properties), queue_id, half.flag, 0, 0,
        reset_transaction_type(half.sys_flag, transaction_type), half.born_timestamp,
        half.born_host, 0, half.store_host, half.reconsume_times, prepared_offset)
    return record, wait_store_msg_ok(half.properties)


def op_record(half, store_host, now):
    """``TransactionalMessageBridge#addRemoveTagInTransactionOp``: tag ``d``, the half
    message's queue offset as its body, in the op queue of the half message's queue id; born
    at the broker. Its properties are the op ``Message``'s (``TAGS``, ``WAIT=true``: the
    ``UNIQ_KEY`` Java sets afterwards is not in the stored string)."""
    properties = java_property_order({PROPERTY_TAGS: REMOVE_TAG, PROPERTY_WAIT_STORE_MSG_OK: "true"})
    record = MessageRecord(
        TRANS_OP_HALF_TOPIC, str(half.queue_offset).encode(), properties, half.queue_id, 0, 0, 0,
        0, now, store_host, 0, store_host)
    return record


def renewed_half(half, properties):
    """``TransactionalMessageBridge#renewHalfMessageInner``: the half message again at the
    end of its queue, with ``properties`` (the check count raised). As in Java it keeps no
    flag and no reconsume count, and is put without waiting (``WAIT`` false)."""
    return MessageRecord(
        half.topic, half.body, java_property_order(properties), half.queue_id, 0, 0, 0,
        half.sys_flag, half.born_timestamp, half.born_host, 0, half.store_host)


def immunity_half(half, properties):
    """``renewImmunityHalfMessageInner``: :func:`renewed_half` with
    ``TRAN_PREPARED_QUEUE_OFFSET`` (the first copy's queue offset, kept across copies); its
    string is rebuilt after Java set ``WAIT=false`` in the shared map."""
    properties = dict(properties)
    properties.setdefault(PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET, str(half.queue_offset))
    properties[PROPERTY_WAIT_STORE_MSG_OK] = "false"
    return renewed_half(half, properties)


def discarded_record(half, properties):
    """``DefaultTransactionalMessageCheckListener#toMessageExtBrokerInner``: a half message
    checked too often (or older than the files are kept) goes to queue 0 of
    ``TRANS_CHECK_MAX_TIME_TOPIC`` as it is."""
    return MessageRecord(
        TRANS_CHECK_MAX_TIME_TOPIC, half.body, java_property_order(properties), 0, half.flag,
        0, 0, half.sys_flag, half.born_timestamp, half.born_host, 0, half.store_host,
        half.reconsume_times)


def resumed_half(message):
    """``AdminBrokerProcessor#toMessageExtBrokerInner`` (RESUME_CHECK_HALF_MESSAGE): a stored
    message (a discarded half message, say) put again in queue 0 of the half topic with its
    check count back at 0, so that the check-back takes it up again."""
    properties = dict(message.properties, **{PROPERTY_TRANSACTION_CHECK_TIMES: "0"})
    return MessageRecord(
        TRANS_HALF_TOPIC, message.body, java_property_order(properties), 0, message.flag, 0, 0,
        message.sys_flag, message.born_timestamp, message.born_host, 0, message.store_host,
        message.reconsume_times)


def check_state_request(half, properties, append):
    """CHECK_TRANSACTION_STATE for ``half`` whose copy ``append`` (an
    ``AppendMessageResult``) stored: the copy's offsets in the header, the message itself in
    the body with its real topic and queue (``Broker2Client#checkProducerTransactionState``)."""
    uniq_key = properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    header = h.CheckTransactionStateRequestHeader(
        tran_state_table_offset=append.logics_offset, commit_log_offset=append.wrote_offset,
        msg_id=uniq_key, transaction_id=uniq_key, offset_msg_id=append.msg_id)
    topic, queue_id = real_queue(half)
    shown = dict(properties)
    shown[PROPERTY_WAIT_STORE_MSG_OK] = "false"  # set on the shared map by renewHalfMessageInner
    body = encode_record(MessageRecord(
        topic, half.body, java_property_order(shown), queue_id, half.flag,
        append.logics_offset, append.wrote_offset, half.sys_flag, half.born_timestamp,
        half.born_host, half.store_timestamp, half.store_host, half.reconsume_times,
        half.prepared_transaction_offset, half.body_crc))
    return RemotingCommand(int(RequestCode.CHECK_TRANSACTION_STATE),
                           ext_fields=header.to_ext_fields(), body=body)


def producer_group(half):
    """The ``PGROUP`` a half message was sent with, or None."""
    return half.properties.get(PROPERTY_PRODUCER_GROUP)
