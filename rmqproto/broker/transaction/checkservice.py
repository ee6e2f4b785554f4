"""The check-back service of a master: Java's ``TransactionalMessageCheckService``.

Every ``transactionCheckInterval`` ms (the first pass one interval after start) each half
queue gets a pass (:func:`~rmqproto.broker.transaction.check.plan_queue_check`): a half
message older than ``transactionTimeOut`` with no op record is put back at the end of the
half queue with ``TRANSACTION_CHECK_TIMES`` one up and CHECK_TRANSACTION_STATE goes,
oneway, to one connection of its producer group; after ``transactionCheckMax`` checks it
is moved to ``TRANS_CHECK_MAX_TIME_TOPIC``. The offsets reached are committed as the
``CID_RMQ_SYS_TRANS`` group's.
"""

import itertools

from twisted.internet import defer
from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from rmqproto.broker.transaction.bridge import TransactionalMessageBridge
from rmqproto.broker.transaction.check import Step, plan_queue_check
from rmqproto.broker.transaction.records import (
    HalfMessageError, check_state_request, discarded_record, immunity_half, producer_group,
    renewed_half,
)
from rmqproto.broker.topicconfig import (
    TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC,
)
from rmqproto.codec.bodies.topic import PERM_READ, PERM_WRITE
from rmqproto.store.results import PUT_OK

__all__ = ["TransactionCheckService", "TCMT_QUEUE_NUMS"]

log = Logger()

#: ``AbstractTransactionalMessageCheckListener.TCMT_QUEUE_NUMS``.
TCMT_QUEUE_NUMS = 1


class TransactionCheckService:
    """Runs check passes on ``controller.reactor``; :meth:`check` is one pass."""

    def __init__(self, controller, bridge=None):
        self.controller = controller
        self.bridge = bridge or TransactionalMessageBridge(controller)
        self._loop = None
        self._channel_counter = itertools.count(1)
        self.checks_sent = 0

    def start(self):
        """Pass every ``transactionCheckInterval`` ms; starting twice is harmless."""
        if self._loop is not None:
            return
        self._loop = LoopingCall(self._pass)
        self._loop.clock = self.controller.reactor
        self._loop.start(self.controller.config["transactionCheckInterval"] / 1000, now=False)

    def stop(self):
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None

    def _pass(self):
        return self.check().addErrback(lambda failure: log.failure("Check error", failure))

    @defer.inlineCallbacks
    def check(self):
        """One pass over every half queue (``TransactionalMessageServiceImpl#check``)."""
        config = self.controller.config
        for queue_id in self.bridge.half_queue_ids():
            start = self.bridge.now()
            half_offset = self.bridge.fetch_consume_offset(TRANS_HALF_TOPIC, queue_id)
            op_offset = self.bridge.fetch_consume_offset(TRANS_OP_HALF_TOPIC, queue_id)
            if half_offset < 0 or op_offset < 0:
                log.error("illegal offsets of half queue {queue}: {half}, op {op}; skipped",
                          queue=queue_id, half=half_offset, op=op_offset)
                continue
            read = self.bridge.read_ops(queue_id, op_offset)
            if read is None:
                continue
            ops, op_offset = read
            plan = plan_queue_check(
                half_offset, op_offset, ops, self.bridge.half_reader(queue_id), self.bridge.now(),
                start, config["transactionTimeOut"], config["transactionCheckMax"],
                config["fileReservedTime"] * 3600 * 1000)
            new_half, new_op = plan.half_offset, plan.op_offset
            for index, step in enumerate(plan.steps):
                carried_out = yield self._carry_out(step)
                if not carried_out:
                    new_half, new_op = plan.offsets_before(index)
                    break
            if new_half != half_offset:
                self.bridge.update_consume_offset(TRANS_HALF_TOPIC, queue_id, new_half)
            if new_op != op_offset:
                self.bridge.update_consume_offset(TRANS_OP_HALF_TOPIC, queue_id, new_op)

    @defer.inlineCallbacks
    def _carry_out(self, step):
        """Do one step; False when a put back failed (the pass stops there)."""
        if step.kind is Step.DISCARD:
            yield self._discard(step)
        elif step.kind in (Step.IMMUNE, Step.CHECK):
            copy = (immunity_half if step.kind is Step.IMMUNE else renewed_half)(
                step.record, step.properties)
            result = yield self.bridge.put(copy)
            if result.status is not PUT_OK:
                log.error("putting back half message at {offset} failed: {status}",
                          offset=step.offset, status=result.status.name)
                return False
            if step.kind is Step.CHECK:
                self._send_check(step.record, step.properties, result.append_result)
        return True

    @defer.inlineCallbacks
    def _discard(self, step):
        """``resolveDiscardMsg``: to ``TRANS_CHECK_MAX_TIME_TOPIC`` (a failure is logged)."""
        log.warn("half message at {offset} has been checked too many times, so discard it by "
                 "moving it to system topic TRANS_CHECK_MAXTIME_TOPIC", offset=step.offset)
        self.controller.topic_config_manager.create_topic_in_send_message_back_method(
            TRANS_CHECK_MAX_TIME_TOPIC, TCMT_QUEUE_NUMS, PERM_READ | PERM_WRITE, 0)
        result = yield self.bridge.put(discarded_record(step.record, step.properties))
        if result.status is not PUT_OK:
            log.error("Put checked-too-many-time half message to TRANS_CHECK_MAXTIME_TOPIC "
                      "failed: {status}", status=result.status.name)

    def _send_check(self, half, properties, append):
        """``sendCheckMessage``: CHECK_TRANSACTION_STATE, oneway, to a connection of the
        message's producer group (``ProducerManager#getAvailableChannel``: the next in turn)."""
        group = producer_group(half)
        channels = self.controller.client_manager.producers.group_channel_table.get(group)
        if not channels:
            log.warn("Check transaction failed, channel is null. groupId={group}", group=group)
            return
        try:
            request = check_state_request(half, properties, append)
        except HalfMessageError as error:
            log.error("Send check message error: {error}", error=error)
            return
        connections = list(channels)
        connection = connections[next(self._channel_counter) % len(connections)]
        self.checks_sent += 1
        connection.send_oneway(request).addErrback(
            lambda failure: log.warn("Check transaction failed because invoke producer exception. "
                                     "group={group}: {error}", group=group,
                                     error=failure.getErrorMessage()))
