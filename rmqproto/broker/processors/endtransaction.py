"""END_TRANSACTION (37): a producer commits or rolls back a half message, answered as
Java's ``EndTransactionProcessor`` (4.9.7) answers it.

A slave refuses with SLAVE_NOT_AVAILABLE. ``commitOrRollback`` NOT_TYPE (the producer does
not know yet) is not answered. Otherwise the half message at ``commitLogOffset`` must have
the request's producer group, queue offset (``tranStateTableOffset``) and commit-log offset,
else SYSTEM_ERROR with Java's remark. A commit puts the real message
(:func:`~rmqproto.broker.transaction.records.committed_record`) and, once stored, the op
record; a rollback only puts the op record. Java clients send END_TRANSACTION oneway, so
the answer is mostly for other clients.

RESUME_CHECK_HALF_MESSAGE (323, ``DefaultMQAdminExt#resumeCheckHalfMessage``) puts the message
an offset msgId names back into the half topic with its check count at 0
(``AdminBrokerProcessor#resumeCheckHalfMessage``).
"""

from twisted.internet import defer
from twisted.logger import Logger

from rmqproto.broker.processors.send import put_status_response
from rmqproto.broker.transaction.bridge import TransactionalMessageBridge
from rmqproto.broker.transaction.records import (
    HalfMessageError, committed_record, producer_group, resumed_half,
)
from rmqproto.codec import headers as h
from rmqproto.codec.codes import RequestCode, ResponseCode as R
from rmqproto.codec.message import (
    TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE, decode_message_id,
)
from rmqproto.errors import CodecError
from rmqproto.store.results import PutMessageStatus as S

__all__ = ["EndTransactionProcessor", "register"]

log = Logger()

#: ``sendFinalMessage``'s remarks where they differ from the send path's.
_FINAL_REMARKS = {
    S.CREATE_MAPEDFILE_FAILED: "Create mapped file failed.",
    S.SERVICE_NOT_AVAILABLE: "Service not available now.",
    S.OS_PAGECACHE_BUSY: "OS page cache busy, please try another machine",
}


def check_prepare_message(half, header):
    """``checkPrepareMessage``: None when ``half`` is the message ``header`` names, else
    Java's remark."""
    if half is None:
        return "Find prepared transaction message failed"
    if producer_group(half) != header.producer_group:
        return "The producer group wrong"
    if half.queue_offset != header.tran_state_table_offset:
        return "The transaction state table offset wrong"
    if half.commit_log_offset != header.commit_log_offset:
        return "The commit log offset wrong"
    return None


class EndTransactionProcessor:
    """END_TRANSACTION for one broker (``controller``: config, store)."""

    def __init__(self, controller, bridge=None):
        self.controller = controller
        self.bridge = bridge or TransactionalMessageBridge(controller)

    def register_with(self, dispatcher):
        dispatcher.register(int(RequestCode.END_TRANSACTION), self.process_request)
        dispatcher.register(int(RequestCode.RESUME_CHECK_HALF_MESSAGE), self.resume_check_half_message)

    def process_request(self, request, context):
        header = h.EndTransactionRequestHeader.from_ext_fields(request.ext_fields)
        if self.controller.config["brokerRole"] == "SLAVE":
            log.warn("Message store is slave mode, so end transaction is forbidden. ")
            return request.response(int(R.SLAVE_NOT_AVAILABLE))
        kind = header.commit_or_rollback
        if kind not in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
            log.warn("The producer[{peer}] end transaction {header} with pending status",
                     peer=context.peer, header=header)
            return None
        if kind == TRANSACTION_ROLLBACK_TYPE or header.from_transaction_check:
            log.warn("The producer[{peer}] ends transaction {msg_id}: {what}{checked}",
                     peer=context.peer, msg_id=header.msg_id,
                     what="commit" if kind == TRANSACTION_COMMIT_TYPE else "rollback",
                     checked=" (check)" if header.from_transaction_check else "")
        half = self.bridge.look_message_by_offset(header.commit_log_offset)
        refused = check_prepare_message(half, header)
        if refused is not None:
            return request.response(int(R.SYSTEM_ERROR), remark=refused)
        if kind == TRANSACTION_ROLLBACK_TYPE:
            return self.bridge.put_op(half).addCallback(lambda _: request.response(int(R.SUCCESS)))
        try:
            record, wait = committed_record(half, kind, header.commit_log_offset)
        except HalfMessageError as error:
            return request.response(int(R.SYSTEM_ERROR), remark=str(error))
        return self.bridge.put(record, wait).addCallback(self._committed, request, half)

    def _committed(self, result, request, half):
        """``sendFinalMessage``'s answer; the op record once the real message is stored."""
        status = result.status
        if status.stored:  # PUT_OK and the three "stored, but" statuses: SUCCESS
            return self.bridge.put_op(half).addCallback(lambda _: request.response(int(R.SUCCESS)))
        code, remark = put_status_response(status, self.controller.config)
        if code == R.MESSAGE_ILLEGAL:
            remark = "T" + remark[1:]  # the send path's remark, capitalised as Java's here
        return defer.succeed(request.response(int(code), remark=_FINAL_REMARKS.get(status, remark)))

    def resume_check_half_message(self, request, context):
        """The message ``msgId`` names, again in the half topic to be checked from the start."""
        header = h.ResumeCheckHalfMessageRequestHeader.from_ext_fields(request.ext_fields)
        try:
            message = self.bridge.look_message_by_offset(decode_message_id(header.msg_id or "")[1])
        except CodecError:
            message = None
        if message is None:
            return request.response(int(R.SYSTEM_ERROR), remark="Exception was thrown when "
                                    "putting message back to RMQ_SYS_TRANS_HALF_TOPIC.")

        def answer(result):
            if result.status is S.PUT_OK:
                log.info("Put message back to RMQ_SYS_TRANS_HALF_TOPIC. real topic={topic}",
                         topic=message.properties.get("REAL_TOPIC"))
                return request.response(int(R.SUCCESS))
            log.error("Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.")
            return request.response(int(R.SYSTEM_ERROR),
                                    remark="Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.")

        # the half topic's config, made here as the check service makes it, so that a
        # cleanUnusedTopic before the first check keeps this message's queue
        self.bridge.half_queue_ids()
        return self.bridge.put(resumed_half(message)).addCallback(answer)


def register(controller):
    """Make the processor and register it with ``controller.dispatcher``."""
    processor = EndTransactionProcessor(controller)
    processor.register_with(controller.dispatcher)
    return processor
