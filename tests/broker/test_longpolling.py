"""Long polling: parked pulls answered on arrival, on expiry, and by the periodic check."""

from twisted.internet.task import Clock

from rmqproto.broker.longpolling import PullRequest, PullRequestHoldService, PullRequestTable
from rmqproto.store.dispatch import DispatchRequest


def test_table_due_rules():
    table = PullRequestTable()
    waiting = PullRequest("r1", None, 15_000, 0, 5)
    tagged = PullRequest("r2", None, 15_000, 0, 5, message_filter=lambda code: code == 7)
    table.suspend("T", 0, waiting)
    table.suspend("T", 0, tagged)
    assert table.arriving("T", 0, 5, 1000) == []  # nothing past offset 5
    assert table.arriving("T", 0, 6, 1000, tags_code=8) == [waiting]  # tag 8 does not match
    assert len(table) == 1
    assert table.arriving("T", 0, 5, 1000, newest_offset=lambda: 9, tags_code=7) == [tagged]
    table.suspend("T", 1, waiting)
    assert table.arriving("T", 1, 5, 14_999) == []
    assert table.arriving("T", 1, 5, 15_000) == [waiting]  # time is up
    assert table.arriving("T", 1, 5, 15_000) == []


class Store:
    def __init__(self):
        self.max = {}

    def get_max_offset_in_queue(self, topic, queue_id):
        return self.max.get((topic, queue_id), 0)


def make(check_interval=5000):
    clock, store, woken = Clock(), Store(), []
    service = PullRequestHoldService(clock, store, lambda r: woken.append(r) or "answer",
                                     check_interval)
    return clock, store, woken, service


def test_answer_on_arrival_and_on_expiry():
    clock, store, woken, service = make()
    first = PullRequest("a", None, 15_000, 0, 3)
    answers = []
    service.suspend_pull_request("T", 0, first).addCallback(answers.append)
    service.notify_message_arriving("T", 0, 3)
    assert answers == []
    service.notify_message_arriving("T", 0, 4, tags_code=1)
    assert answers == ["answer"] and woken == [first]
    assert not clock.getDelayedCalls()  # its expiry timer was cancelled
    second = PullRequest("b", None, 1000, 0, 4)
    service.suspend_pull_request("T", 0, second).addCallback(answers.append)
    clock.advance(0.999)
    assert len(answers) == 1
    clock.advance(0.001)
    assert answers == ["answer", "answer"] and woken[-1] is second


def test_periodic_check_finds_unannounced_messages():
    clock, store, woken, service = make()
    service.start()
    service.suspend_pull_request("T", 2, PullRequest("a", None, 15_000, 0, 0))
    store.max[("T", 2)] = 1
    clock.advance(5)
    assert len(woken) == 1
    service.stop()


def test_stop_answers_everything_parked():
    clock, store, woken, service = make()
    service.start()
    service.suspend_pull_request("T", 0, PullRequest("a", None, 15_000, 0, 0))
    service.stop()
    assert len(woken) == 1 and not clock.getDelayedCalls()


def dispatched(topic, queue_id, queue_offset, tags_code=0):
    """A dispatch request as the store hands it over."""
    return DispatchRequest(topic, queue_id, 0, 100, tags_code, 1000, queue_offset, "", None, 0,
                           0, {})


def test_a_dispatched_batch_wakes_the_pulls_parked_on_its_queues():
    clock, store, woken, service = make()
    tagged = PullRequest("a", None, 15_000, 0, 3, message_filter=lambda code: code == 7)
    other_queue = PullRequest("b", None, 15_000, 0, 0)
    service.suspend_pull_request("T", 0, tagged)
    service.suspend_pull_request("T", 1, other_queue)
    service.notify_dispatched([dispatched("T", 0, 3, tags_code=8), dispatched("U", 0, 9)])
    assert woken == []  # offset 3 is past the pull, but its filter refuses tag 8
    service.notify_dispatched([dispatched("T", 0, 4, tags_code=7), dispatched("T", 1, 0)])
    assert woken == [tagged, other_queue]


def test_a_dispatched_batch_with_nothing_parked_reads_no_request():
    clock, store, woken, service = make()
    service.notify_dispatched([object()])  # not even unpacked
    assert woken == []
