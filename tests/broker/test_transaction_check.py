"""The check decision of ``TransactionalMessageServiceImpl#check`` as a pure plan: given a
half queue's offsets, its op records, its half messages and ``now``, which are done, which
are checked, put back or discarded, and how far the offsets move."""

from hypothesis import given, strategies as st

from rmqproto.broker.transaction.check import (
    CheckPlan, HalfRead, OpRecord, Step, need_discard, next_op_offset, plan_queue_check,
)
from rmqproto.codec.message import MessageRecord

NOW = 1_700_000_100_000
TIMEOUT = 6000
RESERVED = 72 * 3600 * 1000


def half(offset, age=10_000, stored_ago=5000, **properties):
    return MessageRecord("RMQ_SYS_TRANS_HALF_TOPIC", b"b", dict(properties), queue_offset=offset,
                         born_timestamp=NOW - age, store_timestamp=NOW - stored_ago)


def reader(records, end=None):
    """``read_half`` over ``{offset: record}``; past the last one the queue has no more."""
    end = max(records, default=-1) + 1 if end is None else end

    def read(offset):
        if offset in records:
            return HalfRead(records[offset])
        if offset >= end:
            return HalfRead(None, offset, no_new=True)
        return HalfRead(None, offset + 1)  # a gap (an unreadable unit)

    return read


def plan(records, ops=(), half_offset=0, op_offset=0, check_max=15, start=NOW, end=None):
    return plan_queue_check(half_offset, op_offset, list(ops), reader(records, end), NOW, start,
                            TIMEOUT, check_max, RESERVED)


def kinds(result):
    return [(s.kind, s.offset) for s in result.steps]


def test_op_records_settle_their_half_messages_and_the_offsets_move():
    result = plan({0: half(0), 1: half(1), 2: half(2)},
                  ops=[OpRecord(0, "d", 1), OpRecord(1, "d", 0)])
    assert kinds(result) == [(Step.DONE, 0), (Step.DONE, 1), (Step.CHECK, 2)]
    assert (result.half_offset, result.op_offset) == (3, 2)
    assert result.steps[2].properties["TRANSACTION_CHECK_TIMES"] == "1"


def test_op_records_of_already_checked_offsets_are_done_at_once():
    result = plan({}, ops=[OpRecord(5, "d", 3), OpRecord(6, "d", 9)], half_offset=4, op_offset=5)
    assert result.steps == [] and result.half_offset == 4
    assert result.op_offset == 6  # 5 settled; 6 waits for half offset 9


def test_an_op_record_with_another_tag_is_never_settled():
    result = plan({0: half(0)}, ops=[OpRecord(0, "x", 0)])
    assert kinds(result) == [(Step.CHECK, 0)]
    assert result.op_offset == 0


def test_young_messages_stop_the_pass():
    result = plan({0: half(0, age=1000), 1: half(1)})
    assert result.steps == [] and result.half_offset == 0


def test_a_message_stored_during_the_pass_is_left_for_the_next():
    result = plan({0: half(0), 1: half(1, stored_ago=0)}, start=NOW)
    assert kinds(result) == [(Step.CHECK, 0)] and result.half_offset == 1


def test_checked_too_often_or_too_old_is_discarded():
    result = plan({0: half(0, TRANSACTION_CHECK_TIMES="3"), 1: half(1, age=RESERVED + 1),
                   2: half(2, TRANSACTION_CHECK_TIMES="2")}, check_max=3)
    assert kinds(result) == [(Step.DISCARD, 0), (Step.DISCARD, 1), (Step.CHECK, 2)]
    assert result.steps[0].properties["TRANSACTION_CHECK_TIMES"] == "3"
    assert result.steps[2].properties["TRANSACTION_CHECK_TIMES"] == "3"


def test_need_discard_counts_as_java():
    props = {}
    assert not need_discard(props, 1) and props["TRANSACTION_CHECK_TIMES"] == "1"
    assert need_discard(props, 1)
    props = {"TRANSACTION_CHECK_TIMES": "junk"}  # getInt: -1, below any maximum
    assert not need_discard(props, 2) and props["TRANSACTION_CHECK_TIMES"] == "0"


def test_a_born_timestamp_in_the_future_is_checked():
    assert kinds(plan({0: half(0, age=-5)})) == [(Step.CHECK, 0)]


def test_check_immunity_puts_back_until_its_time_has_passed():
    immune = half(0, age=10_000, CHECK_IMMUNITY_TIME_IN_SECONDS="60")
    assert kinds(plan({0: immune})) == [(Step.IMMUNE, 0)]
    # a copy is done when an op record not yet behind the half offset names its first offset
    copy = half(4, CHECK_IMMUNITY_TIME_IN_SECONDS="60", TRAN_PREPARED_QUEUE_OFFSET="5")
    result = plan({4: copy}, ops=[OpRecord(0, "d", 5)], half_offset=4)
    assert kinds(result) == [(Step.DONE, 4)] and result.op_offset == 1
    # an unreadable first offset: Java waits until its pass ends
    bad = half(0, CHECK_IMMUNITY_TIME_IN_SECONDS="60", TRAN_PREPARED_QUEUE_OFFSET="x")
    assert plan({0: bad}).steps == []
    # past its immunity it is checked; an immunity that is no number is transactionTimeOut
    assert kinds(plan({0: half(0, age=61_000, CHECK_IMMUNITY_TIME_IN_SECONDS="60")})) == [
        (Step.CHECK, 0)]
    assert kinds(plan({0: half(0, CHECK_IMMUNITY_TIME_IN_SECONDS="soon")})) == [(Step.CHECK, 0)]


def test_one_missing_message_is_skipped_a_second_stops_the_pass():
    result = plan({0: half(0), 2: half(2), 4: half(4)}, end=5)
    assert kinds(result) == [(Step.CHECK, 0), (Step.SKIP, 1), (Step.CHECK, 2)]
    assert result.half_offset == 3


def test_offsets_before_a_failed_step():
    result = plan({0: half(0), 1: half(1), 2: half(2)}, ops=[OpRecord(0, "d", 0)])
    assert kinds(result) == [(Step.DONE, 0), (Step.CHECK, 1), (Step.CHECK, 2)]
    assert result.offsets_before(1) == (1, 1)
    assert result.offsets_before(2) == (2, 1)
    assert result.offsets_before(3) == (3, 1)
    assert isinstance(result, CheckPlan)


def test_next_op_offset_moves_over_settled_records_without_gaps():
    assert next_op_offset([7, 5, 6, 9], 5) == 8
    assert next_op_offset([6], 5) == 5
    assert next_op_offset([], 5) == 5


@st.composite
def queues(draw):
    """A half queue (ages, check counts) from some offset on, and op records naming offsets."""
    start = draw(st.integers(0, 5))
    ages = draw(st.lists(st.sampled_from([1000, 10_000, -5]), max_size=12))
    counts = draw(st.lists(st.sampled_from([None, "1", "2", "3"]), min_size=len(ages),
                           max_size=len(ages)))
    records = {start + i: (half(start + i, age) if c is None else
                           half(start + i, age, TRANSACTION_CHECK_TIMES=c))
               for i, (age, c) in enumerate(zip(ages, counts))}
    named = draw(st.lists(st.integers(0, start + len(ages) + 2), unique=True, max_size=10))
    ops = [OpRecord(10 + i, "d", offset) for i, offset in enumerate(named)]
    return start, records, ops


@given(queues())
def test_a_plan_settles_each_offset_once_and_moves_only_over_settled_records(queue):
    start, records, ops = queue
    result = plan(records, ops, half_offset=start, op_offset=10, check_max=3)
    named = {op.half_offset for op in ops}
    offsets = [s.offset for s in result.steps]
    assert offsets == list(range(start, result.half_offset))  # in order, none twice, no gap
    for step in result.steps:
        if step.kind is Step.DONE:
            assert step.offset in named
        else:
            assert step.offset not in named  # never checked or dropped once an op names it
    settled = {op.queue_offset for op in ops if op.half_offset < start}
    settled |= {s.done_op for s in result.steps if s.done_op is not None}
    assert all(q in settled for q in range(10, result.op_offset))
    assert result.offsets_before(len(result.steps)) == (result.half_offset, result.op_offset)
