"""Transactional messages, without I/O (``TransactionMQProducer`` 4.9.8:
``DefaultMQProducerImpl#sendMessageInTransaction``, ``#endTransaction`` and
``#checkTransactionState``, ``ClientRemotingProcessor#checkTransactionState``).

A half message is sent like any sync send with ``TRAN_MSG`` and ``PGROUP`` set and the
PREPARED sysFlag; the transport then runs the user's local transaction and sends the
END_TRANSACTION (oneway) built here. When the broker checks back (CHECK_TRANSACTION_STATE,
oneway) the transport asks the user's checker and sends the END_TRANSACTION
:func:`check_answer` builds to the broker that asked. The user's code is called by the
transports, never here.
"""

import enum

from rmqproto.client.lookup import REQUEST_TIMEOUT_MS, Call, request
from rmqproto.client.message import ReceivedMessage, SendResult, SendStatus
from rmqproto.codec import message as wire
from rmqproto.codec.codes import RequestCode
from rmqproto.codec.frame import FLAG_ONEWAY
from rmqproto.codec.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from rmqproto.errors import CodecError


class LocalTransactionState(enum.Enum):
    """``LocalTransactionState``: what a local transaction (or a check) decided."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"


#: ``commitOrRollback`` of END_TRANSACTION for each state (``MessageSysFlag``).
END_TYPES = {LocalTransactionState.COMMIT_MESSAGE: wire.TRANSACTION_COMMIT_TYPE,
             LocalTransactionState.ROLLBACK_MESSAGE: wire.TRANSACTION_ROLLBACK_TYPE,
             LocalTransactionState.UNKNOW: wire.TRANSACTION_NOT_TYPE}


class TransactionSendResult(SendResult):
    """``TransactionSendResult``: the half message's :class:`SendResult` and
    ``local_transaction_state``, what the local transaction decided."""

    __slots__ = ("local_transaction_state",)

    @classmethod
    def of(cls, result, state):
        self = cls(result.status, result.msg_id, result.offset_msg_id, result.queue,
                   result.queue_offset, result.transaction_id, result.region_id, result.trace_on)
        self.local_transaction_state = state
        return self


def half_message(outgoing, producer_group):
    """The half message of a prepared send (``sendMessageInTransaction``): ``TRAN_MSG`` and
    ``PGROUP`` set, the PREPARED sysFlag, no delay level."""
    properties = dict(outgoing.properties)
    properties.pop(wire.PROPERTY_DELAY_TIME_LEVEL, None)
    properties[wire.PROPERTY_TRANSACTION_PREPARED] = "true"
    properties[wire.PROPERTY_PRODUCER_GROUP] = producer_group
    return outgoing._replace(properties=properties,
                             sys_flag=outgoing.sys_flag | wire.TRANSACTION_PREPARED_TYPE)


def state_without_listener(result):
    """The state of a half message the broker did not store with SEND_OK: rolled back
    without running the local transaction; ``None`` when the listener is to run."""
    return None if result.status == SendStatus.SEND_OK else LocalTransactionState.ROLLBACK_MESSAGE


def _end_request(header, remark):
    command = request(RequestCode.END_TRANSACTION, header)
    command.remark = remark
    command.flag |= FLAG_ONEWAY
    return command


def end_transaction(route, producer_group, result, state, error=None):
    """``endTransaction``: the oneway END_TRANSACTION :class:`Call` for the half message of
    ``result`` to its broker's master (``route``: the topic's :class:`TopicRoute`), or
    ``None`` when that master is gone (the broker will check back). ``error``: what the
    local transaction raised, sent as the remark."""
    address = route.master(result.queue.broker_name)
    if address is None:
        return None
    _, commit_log_offset = wire.decode_message_id(result.offset_msg_id or result.msg_id)
    header = EndTransactionRequestHeader(
        producer_group=producer_group, tran_state_table_offset=result.queue_offset,
        commit_log_offset=commit_log_offset, commit_or_rollback=END_TYPES[state],
        from_transaction_check=False, msg_id=result.msg_id, transaction_id=result.transaction_id)
    remark = None if error is None else "executeLocalTransactionBranch exception: %r" % (error,)
    return Call(address, _end_request(header, remark), REQUEST_TIMEOUT_MS, True)


def checked_message(check, producer_group):
    """The half message a CHECK_TRANSACTION_STATE request ``check`` asks about, as a
    :class:`ReceivedMessage` (``msg_id``: its ``UNIQ_KEY``, the transaction id), or ``None``
    when it is not of ``producer_group`` or cannot be read (Java then only logs)."""
    try:
        record = wire.decode_record(check.body or b"")
    except CodecError:
        return None
    if record.properties.get(wire.PROPERTY_PRODUCER_GROUP) != producer_group:
        return None
    return ReceivedMessage.from_record(record, None, 0, 0)


def check_answer(check, address, producer_group, message, state, error=None):
    """``processTransactionState``: the oneway END_TRANSACTION :class:`Call` answering the
    check ``check`` (received from ``address``) about ``message`` with ``state``."""
    asked = CheckTransactionStateRequestHeader.from_ext_fields(check.ext_fields)
    header = EndTransactionRequestHeader(
        producer_group=producer_group, tran_state_table_offset=asked.tran_state_table_offset,
        commit_log_offset=asked.commit_log_offset, commit_or_rollback=END_TYPES[state],
        from_transaction_check=True, msg_id=message.msg_id, transaction_id=asked.transaction_id)
    remark = None if error is None else "checkLocalTransactionState Exception: %r" % (error,)
    return Call(address, _end_request(header, remark), REQUEST_TIMEOUT_MS, True)


def as_state(value):
    """A listener's answer as a :class:`LocalTransactionState` (its name accepted too)."""
    return value if isinstance(value, LocalTransactionState) else LocalTransactionState(value)
