"""``Brokers.read`` (rmqproto/spark/brokers.py) over a scripted broker, without sockets:
several pulls in flight, answers shorter than asked (a broker's caps), gaps retention left,
OFFSET_MOVED, failed pulls retried, the range's end and the tag filter."""

from types import SimpleNamespace

import pytest

from rmqproto.client.errors import ClientError
from rmqproto.client.route import MessageQueue
from rmqproto.codec.codes import ResponseCode
from rmqproto.codec.message import MessageRecord, encode_record
from rmqproto.spark.brokers import Brokers
from rmqproto.spark.offsets import DataLoss, OffsetRange
from rmqproto.spark.rows import COLUMNS, arrow_schema

QUEUE = MessageQueue("TopicA", "broker-a", 3)


class ScriptedBrokers(Brokers):
    """A :class:`Brokers` whose queue holds ``offsets`` and whose pulls answer at most
    ``cap`` messages; ``fail`` pull numbers meet a transport error."""

    def __init__(self, offsets, cap=32, batch=8, in_flight=4, fail=(), moved=None):
        self.config = SimpleNamespace(pullBatchSize=batch)
        self.pulls_in_flight, self.schema = in_flight, arrow_schema(COLUMNS)
        self.stored = {offset: encode_record(MessageRecord(
            QUEUE.topic, b"body %d" % offset, {"TAGS": "Tag%d" % (offset % 2)},
            queue_id=QUEUE.queue_id, queue_offset=offset, commit_log_offset=1000 + offset))
            for offset in offsets}
        self.cap, self.fail, self.moved = cap, set(fail), moved or {}
        self.pulls, self.rounds = 0, 0

    def bounds(self, queue):
        return min(self.stored), max(self.stored) + 1

    def pull_many(self, queue, pulls):
        assert queue == QUEUE and len(pulls) <= self.pulls_in_flight
        self.rounds += 1
        answers = []
        for offset, count in pulls:
            self.pulls += 1
            if self.pulls in self.fail:
                answers.append(ClientError("pull failed"))
                continue
            if offset in self.moved:
                answers.append((ResponseCode.PULL_OFFSET_MOVED,
                                SimpleNamespace(next_begin_offset=self.moved[offset]), b""))
                continue
            first = min((o for o in self.stored if o >= offset), default=None)
            found = []  # a run of the consume queue: consecutive offsets
            while first is not None and first + len(found) in self.stored \
                    and len(found) < min(count, self.cap):
                found.append(first + len(found))
            if not found:
                answers.append((ResponseCode.PULL_NOT_FOUND,
                                SimpleNamespace(next_begin_offset=offset), b""))
                continue
            answers.append((ResponseCode.SUCCESS,
                            SimpleNamespace(next_begin_offset=found[-1] + 1),
                            b"".join(self.stored[o] for o in found)))
        return answers


def _offsets(brokers, start, end, **options):
    return [offset for batch in brokers.read(OffsetRange(QUEUE, start, end), **options)
            for offset in batch.column("queueOffset").to_pylist()]


@pytest.mark.parametrize("cap", [1, 3, 8, 32])
def test_every_message_once_in_order_whatever_the_broker_caps(cap):
    brokers = ScriptedBrokers(range(100), cap=cap)
    assert _offsets(brokers, 0, 100) == list(range(100))
    assert brokers.rounds <= 100 // min(cap, 8) // 4 + 4  # the pulls went four at a time


def test_the_range_ends_where_asked():
    brokers = ScriptedBrokers(range(100))
    assert _offsets(brokers, 17, 43) == list(range(17, 43))


def test_rows_carry_the_queue_and_the_tag_filter_keeps_its_tags():
    brokers = ScriptedBrokers(range(20))
    batches = list(brokers.read(OffsetRange(QUEUE, 0, 20), "Tag1"))
    rows = [row for batch in batches for row in batch.to_pylist()]
    assert [r["queueOffset"] for r in rows] == list(range(1, 20, 2))
    assert {(r["topic"], r["brokerName"], r["queueId"], r["tags"]) for r in rows} == {
        ("TopicA", "broker-a", 3, "Tag1")}
    assert rows[0]["body"] == b"body 1" and rows[0]["commitLogOffset"] == 1001


def test_failed_pulls_are_made_again():
    brokers = ScriptedBrokers(range(60), cap=8, fail={1, 6, 7})
    assert _offsets(brokers, 0, 60) == list(range(60))


def test_a_gap_retention_left_fails_the_read_or_is_skipped():
    offsets = [o for o in range(50) if not 20 <= o < 26]
    with pytest.raises(DataLoss, match="offsets 20 to 25 of TopicA/broker-a/queue 3"):
        _offsets(ScriptedBrokers(offsets), 0, 50)
    assert _offsets(ScriptedBrokers(offsets), 0, 50, fail_on_data_loss=False) == offsets


def test_offset_moved_is_a_gap_too():
    brokers = ScriptedBrokers(range(40), batch=8, moved={8: 12})
    with pytest.raises(DataLoss, match="offsets 8 to 11"):
        _offsets(brokers, 0, 40)
    brokers = ScriptedBrokers(range(40), batch=8, moved={8: 12})
    assert _offsets(brokers, 0, 40, fail_on_data_loss=False) == \
        list(range(8)) + list(range(12, 40))
