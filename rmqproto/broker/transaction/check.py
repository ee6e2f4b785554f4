"""Which half messages of one half queue to check back, which to discard and which are
done: the decision of ``TransactionalMessageServiceImpl#check`` (4.9.7) as a pure plan.

Inputs: the queue's checked offsets (half and op), its op records, a reader of half
messages by queue offset, ``now`` and the pass's start (ms), and the settings. Output: a
:class:`CheckPlan`, whose steps the check service carries out in order. A step that puts
a message back into the half queue may fail; :meth:`CheckPlan.offsets_before` then says
how far the queue was checked (Java retries such a message until its 60 s pass ends; here
the pass stops at it and the next pass starts there).
"""

import enum

from rmqproto.broker.transaction.records import REMOVE_TAG
from rmqproto.codec.message import (
    PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS, PROPERTY_TRANSACTION_CHECK_TIMES,
    PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET,
)

__all__ = ["Step", "CheckStep", "HalfRead", "OpRecord", "CheckPlan", "plan_queue_check",
           "next_op_offset", "need_discard"]

#: ``MAX_RETRY_COUNT_WHEN_HALF_NULL``: missing half messages skipped in one pass.
MAX_RETRY_COUNT_WHEN_HALF_NULL = 1


class Step(enum.Enum):
    DONE = "done"            # committed or rolled back: an op record names it
    SKIP = "skip"            # no message at this offset: jump to the next one
    DISCARD = "discard"      # checked transactionCheckMax times, or older than the files
    IMMUNE = "immune"        # inside its CHECK_IMMUNITY_TIME_IN_SECONDS: put back unchecked
    CHECK = "check"          # put back with one check more, and ask the producer


class CheckStep:
    """One step: its kind, the half queue offset it is about, the half message and the
    properties it is put back or discarded with, the op record it settles and the half
    offset after it."""

    __slots__ = ("kind", "offset", "record", "properties", "done_op", "next_offset")

    def __init__(self, kind, offset, record=None, properties=None, done_op=None, next_offset=None):
        self.kind = kind
        self.offset = offset
        self.record = record
        self.properties = properties
        self.done_op = done_op
        self.next_offset = offset + 1 if next_offset is None else next_offset

    def __repr__(self):
        return "CheckStep(%s, %d)" % (self.kind.name, self.offset)


class HalfRead:
    """What reading one half queue offset gave: the message, or ``None`` with where to go
    on (``next_offset``) and whether the queue simply has nothing more (``no_new``)."""

    __slots__ = ("record", "next_offset", "no_new")

    def __init__(self, record=None, next_offset=0, no_new=False):
        self.record = record
        self.next_offset = next_offset
        self.no_new = no_new


class OpRecord:
    """An op record: its own queue offset, its tags, and its body (a half queue offset)."""

    __slots__ = ("queue_offset", "tags", "half_offset")

    def __init__(self, queue_offset, tags, half_offset):
        self.queue_offset = queue_offset
        self.tags = tags
        self.half_offset = half_offset


class CheckPlan:
    """The steps of one queue's pass and the offsets to commit once all were carried out."""

    def __init__(self, half_offset, op_offset, done_ops, steps, end_offset):
        self.start_half_offset = half_offset
        self.start_op_offset = op_offset
        self.done_ops = done_ops  # op offsets settled before any step
        self.steps = steps
        self.half_offset = end_offset
        self.op_offset = next_op_offset(done_ops + [s.done_op for s in steps if s.done_op is not None],
                                        op_offset)

    def offsets_before(self, index):
        """``(half offset, op offset)`` when only the steps before ``index`` were carried out."""
        done = self.steps[:index]
        half = self.steps[index].offset if index < len(self.steps) else self.half_offset
        ops = self.done_ops + [s.done_op for s in done if s.done_op is not None]
        return half, next_op_offset(ops, self.start_op_offset)


def next_op_offset(done_ops, op_offset):
    """``calculateOpOffset``: the op offset moves over the settled op records that follow it
    without a gap."""
    offset = op_offset
    for done in sorted(done_ops):
        if done != offset:
            break
        offset += 1
    return offset


def _parse_long(text):
    """``getLong``: -1 when not a number."""
    try:
        return int(text)
    except (TypeError, ValueError):
        return -1


def need_discard(properties, check_max):
    """``needDiscard``: whether the message was checked ``check_max`` times; if not, its
    ``TRANSACTION_CHECK_TIMES`` in ``properties`` goes one up (1 the first time)."""
    text = properties.get(PROPERTY_TRANSACTION_CHECK_TIMES)
    times = 1
    if text is not None:
        times = _parse_long(text)
        if times >= check_max:
            return True
        times += 1
    properties[PROPERTY_TRANSACTION_CHECK_TIMES] = str(times)
    return False


def _immunity_time(text, timeout):
    """``getImmunityTime``: the property's seconds in ms, ``timeout`` when not a number."""
    seconds = _parse_long(text)
    return timeout if seconds == -1 else seconds * 1000


def plan_queue_check(half_offset, op_offset, ops, read_half, now, start, timeout, check_max,
                     reserved_ms):
    """The plan of one half queue's pass.

    ``ops``: the op records from ``op_offset`` on; ``read_half(offset)`` a :class:`HalfRead`;
    ``start``: when the pass began (a message stored since is left for the next pass);
    ``timeout``: ``transactionTimeOut``; ``check_max``: ``transactionCheckMax``;
    ``reserved_ms``: ``fileReservedTime`` in ms.
    """
    removed, done_ops = {}, []  # half offset -> op offset; settled op offsets
    for op in ops:
        if op.tags != REMOVE_TAG:
            continue  # Java logs "Found a illegal tag" and never settles it
        if op.half_offset < half_offset:
            done_ops.append(op.queue_offset)
        else:
            removed[op.half_offset] = op.queue_offset
    steps = []
    missing = 1
    offset = end = half_offset
    while True:
        if offset in removed:
            steps.append(CheckStep(Step.DONE, offset, done_op=removed.pop(offset)))
            offset = end = offset + 1
            continue
        read = read_half(offset)
        record = read.record
        if record is None:
            missing += 1
            if missing - 1 > MAX_RETRY_COUNT_WHEN_HALF_NULL or read.no_new:
                break
            steps.append(CheckStep(Step.SKIP, offset, next_offset=read.next_offset))
            offset = end = read.next_offset
            continue
        properties = dict(record.properties)
        if need_discard(properties, check_max) or now - record.born_timestamp > reserved_ms:
            steps.append(CheckStep(Step.DISCARD, offset, record, properties))
            offset = end = offset + 1
            continue
        if record.store_timestamp >= start:
            break  # stored during this pass (a copy put back now): the next pass's
        age = now - record.born_timestamp
        immunity = timeout
        immunity_text = properties.get(PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS)
        if immunity_text is not None:
            immunity = _immunity_time(immunity_text, timeout)
            if age < immunity:
                prepared_text = properties.get(PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET)
                prepared = None if prepared_text is None else _parse_long(prepared_text)
                if prepared is not None and prepared in removed:
                    # its first copy was committed or rolled back
                    steps.append(CheckStep(Step.DONE, offset, done_op=removed.pop(prepared)))
                    offset = end = offset + 1
                    continue
                if prepared != -1:
                    steps.append(CheckStep(Step.IMMUNE, offset, record, properties))
                    offset = end = offset + 1
                    continue
        elif 0 <= age < immunity:
            break  # too young: so is every later one
        if age > immunity or age <= -1:
            steps.append(CheckStep(Step.CHECK, offset, record, properties))
            offset = end = offset + 1
            continue
        break  # not old enough and no op record for it: Java waits for more ops until its pass ends
    return CheckPlan(half_offset, op_offset, done_ops, steps, end)
