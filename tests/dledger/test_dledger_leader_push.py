"""The leader's ``EntryDispatcher`` and ``QuorumAckChecker``, and ``handleAppend``."""

import pytest
from support.raftunit import (PEERS5, PushEntryType, elect, heartbeat, ledger_with, make_node,
                              pushes, replies)

from rmqproto.codec.dledger_rpc import (AppendEntryRequest, AppendEntryResponse,
                                        DLedgerResponseCode, PushEntryResponse)
from rmqproto.dledger import MemoryLedger, Role, TermState

APPEND, COMMIT = PushEntryType.APPEND, PushEntryType.COMMIT
COMPARE, TRUNCATE = PushEntryType.COMPARE, PushEntryType.TRUNCATE
SUCCESS = DLedgerResponseCode.SUCCESS
INCONSISTENT = DLedgerResponseCode.INCONSISTENT_STATE


def leader(terms=(1, 1, 1), term=1, peers=None, **settings):
    kwargs = {"peers": peers} if peers else {}
    node = make_node(ledger=ledger_with(*terms), term_state=TermState(term, None), **kwargs,
                     **settings)
    return node, elect(node)


def answer(node, send, code=SUCCESS, begin=0, end=0, index=None, count=None, now=0):
    request = send.request
    if index is None and request.type is not COMMIT:
        index = request.batch_entry[0].index if request.batch_entry else request.entry.index
    if count is None:
        count = len(request.batch_entry) if request.batch_entry else 1
    node.deliver(request, PushEntryResponse(group="g", code=code, term=request.term, index=index,
                                            begin_index=begin, end_index=end, count=count), now)
    return node.ready()


def to(ready, peer, kind=None):
    found = [s for s in pushes(ready, kind) if s.to == peer]
    return found


def catch_up(node, ready, peer, now=0):
    """Answer ``peer``'s COMPARE as an identical follower; returns the APPEND Ready."""
    (compare,) = to(ready, peer, COMPARE)
    return answer(node, compare, end=node.ledger.end_index, now=now)


class TestCompare:

    def test_starts_at_the_leader_end(self):
        node, ready = leader()
        assert sorted(s.to for s in pushes(ready, COMPARE)) == ["n1", "n2"]
        compare = to(ready, "n1")[0].request
        assert compare.entry == node.ledger.get(2) and compare.term == 1
        assert (compare.leader_id, compare.local_id, compare.remote_id) == ("n0", "n0", "n1")

    def test_jumps_to_a_shorter_follower_end_then_appends_after_it(self):
        node, ready = leader()
        ready = answer(node, to(ready, "n1")[0], INCONSISTENT, end=0)
        (again,) = to(ready, "n1", COMPARE)
        assert again.request.entry.index == 0
        ready = answer(node, again, end=0)
        assert [s.request.entry.index for s in to(ready, "n1", APPEND)] == [1, 2]
        assert node.pusher.water_mark(1, "n1") == 0

    def test_walks_down_inside_the_follower_range(self):
        node, ready = leader()
        ready = answer(node, to(ready, "n1")[0], INCONSISTENT, end=2)
        assert to(ready, "n1", COMPARE)[0].request.entry.index == 1

    def test_a_longer_follower_is_truncated_after_the_match(self):
        node, ready = leader()
        ready = answer(node, to(ready, "n1")[0], end=5)
        (truncate,) = to(ready, "n1", TRUNCATE)
        assert truncate.request.entry.index == 2
        ready = answer(node, truncate, end=2)
        assert node.pusher.dispatchers["n1"].type is APPEND
        assert node.pusher.dispatchers["n1"].write_index == 3

    def test_an_empty_follower_is_truncated_to_the_leader_begin(self):
        node, ready = leader()
        ready = answer(node, to(ready, "n1")[0], INCONSISTENT, begin=-1, end=-1)
        (truncate,) = to(ready, "n1", TRUNCATE)
        assert truncate.request.entry.index == 0
        ready = answer(node, truncate, end=0)
        assert [s.request.entry.index for s in to(ready, "n1", APPEND)] == [1, 2]

    def test_a_failed_compare_pauses_then_starts_over(self):
        node, ready = leader()
        node.deliver(to(ready, "n1")[0].request, None, 0)
        assert not to(node.ready(), "n1")
        node.tick(499)
        assert not to(node.ready(), "n1", COMPARE)
        node.tick(500)
        assert to(node.ready(), "n1", COMPARE)

    def test_an_unanswered_compare_gives_up_after_three_seconds(self):
        node, ready = leader()
        node.tick(2999)
        assert not to(node.ready(), "n1", COMPARE)
        node.tick(3000)
        node.tick(3500)
        assert to(node.ready(), "n1", COMPARE)


class TestAppend:

    def test_each_entry_pushed_with_the_commit_index_then_idle_commit(self):
        node, ready = leader()
        ready = catch_up(node, ready, "n1")
        assert node.committed_index == 2              # n0 and n1 hold 2 in term 1
        node.propose("p", b"x", 10)
        ready = node.ready()
        (append,) = to(ready, "n1", APPEND)
        assert (append.request.entry.index, append.request.commit_index) == (3, 2)
        node.tick(1010)
        assert not to(node.ready(), "n1", COMMIT)     # a push went out at 10
        answer(node, append, end=3, now=1010)
        node.tick(1011)
        assert to(node.ready(), "n1", COMMIT)

    def test_appends_without_push_are_written_at_once_and_pushed_by_work(self):
        node, ready = leader()
        catch_up(node, ready, "n1")
        node.propose("a", b"first", 10, push=False)
        node.propose("b", b"second", 10, push=False)
        assert node.ledger.end_index == 4 and not to(node.ready(), "n1", APPEND)
        node.work(11)
        appends = to(node.ready(), "n1", APPEND)
        assert [s.request.entry.body for s in appends] == [b"first", b"second"]
        ready = answer(node, appends[-1], end=4, now=12)
        assert replies(ready, "a") and replies(ready, "b")

    def test_quorum_ack_settles_the_append_with_index_and_pos(self):
        node, ready = leader()
        catch_up(node, ready, "n1")
        node.propose("p", b"body", 5)
        (append,) = to(node.ready(), "n1", APPEND)
        ready = answer(node, append, end=3, now=6)
        (response,) = replies(ready, "p")
        assert isinstance(response, AppendEntryResponse)
        entry = node.ledger.get(3)
        assert (response.code, response.index, response.pos, response.term) == (
            SUCCESS, 3, entry.pos, 1)
        assert response.leader_id == "n0"

    def test_unanswered_push_is_pushed_again_after_max_push_timeout(self):
        node, ready = leader()
        catch_up(node, ready, "n1")
        node.propose("p", b"x", 0)
        (first,) = to(node.ready(), "n1", APPEND)
        node.tick(1000)
        assert not to(node.ready(), "n1", APPEND)
        node.tick(1001)
        (again,) = to(node.ready(), "n1", APPEND)
        assert again.request.entry.index == first.request.entry.index == 3

    def test_inconsistent_append_goes_back_to_compare(self):
        node, ready = leader()
        catch_up(node, ready, "n1")
        node.propose("p", b"x", 0)
        (append,) = to(node.ready(), "n1", APPEND)
        ready = answer(node, append, INCONSISTENT, end=1)
        assert to(ready, "n1", COMPARE)
        assert node.pusher.dispatchers["n1"].pending == {}

    def test_batch_push_groups_entries_up_to_the_size(self):
        node, ready = leader(isEnableBatchPush=True, maxBatchPushSize=120)
        ready = answer(node, to(ready, "n1")[0], INCONSISTENT, begin=-1, end=-1)
        ready = answer(node, to(ready, "n1", TRUNCATE)[0], end=0)
        batches = to(ready, "n1", APPEND)
        assert [[e.index for e in s.request.batch_entry] for s in batches] == [[1, 2]]
        assert batches[0].request.entry is None
        answer(node, batches[0], end=2, index=1, count=2)
        assert node.pusher.water_mark(1, "n1") == 2
        for k in range(5):
            node.propose("p%d" % k, b"y" * 10, 1)
        sizes = [len(s.request.batch_entry) for s in to(node.ready(), "n1", APPEND)]
        assert sizes == [1] * 5          # nothing else to wait for: each goes out at once

    def test_batch_sent_when_full(self):
        node, ready = leader(terms=(1,) * 10, isEnableBatchPush=True, maxBatchPushSize=100)
        ready = answer(node, to(ready, "n1")[0], INCONSISTENT, begin=-1, end=-1)
        ready = answer(node, to(ready, "n1", TRUNCATE)[0], end=0)
        sizes = [len(s.request.batch_entry) for s in to(ready, "n1", APPEND)]
        assert sizes == [2, 2, 2, 2, 1]                # 50 bytes an entry, 100 a batch

    def test_a_lagging_follower_is_throttled_to_the_quota(self):
        node, ready = leader(terms=(1,) * 1200, peerPushThrottlePoint=1000, peerPushQuota=500)
        ready = answer(node, to(ready, "n1")[0], INCONSISTENT, begin=-1, end=-1)
        ready = answer(node, to(ready, "n1", TRUNCATE)[0], end=0)
        first = to(ready, "n1", APPEND)
        # Entries far behind (more than 1000 and 1000 bytes back) share 500 bytes a second.
        assert 1 <= len(first) <= 20
        node.tick(999)
        assert not to(node.ready(), "n1", APPEND)
        node.tick(1000)
        assert to(node.ready(), "n1", APPEND)


class TestQuorum:

    def test_committed_index_is_the_median_water_mark(self):
        node, _ = leader(terms=(1,) * 11, peers=PEERS5)
        marks = {"n1": 8, "n2": 5, "n3": 3, "n4": -1}
        for peer, mark in marks.items():
            node.pusher.update_water_mark(1, peer, mark)
        node.tick(1)
        assert node.committed_index == 5

    def test_an_entry_of_an_older_term_is_not_committed_by_counting(self):
        node, ready = leader(terms=(1, 1, 1), term=2)
        catch_up(node, ready, "n1")
        assert node.pusher.water_mark(2, "n1") == 2
        assert node.committed_index == -1              # Raft: only the current term counts
        node.propose("p", b"x", 0)
        (append,) = to(node.ready(), "n1", APPEND)
        answer(node, append, end=3)
        assert node.committed_index == 3               # and the older ones come with it

    def test_leader_pending_full(self):
        node, _ = leader(maxPendingRequestsNum=2)
        for k in range(3):
            node.propose("p%d" % k, b"x", 0)
        node.propose("full", b"x", 0)
        (response,) = replies(node.ready(), "full")
        assert response.code == DLedgerResponseCode.LEADER_PENDING_FULL
        assert (response.index, response.term, response.leader_id) == (-1, 1, "n0")
        assert node.ledger.end_index == 5

    def test_wait_quorum_ack_timeout(self):
        node, _ = leader()
        node.propose("p", b"x", 100)
        node.tick(2599)
        assert not replies(node.ready(), "p")
        node.tick(2600)
        (response,) = replies(node.ready(), "p")
        assert (response.code, response.index, response.term) == (
            DLedgerResponseCode.WAIT_QUORUM_ACK_TIMEOUT, 3, 1)
        assert node.pusher.is_pending_full(1) is False
        assert len(node.pusher.pending[1]) == 1        # still counted, as in Java

    def test_term_changed_when_the_leader_steps_down(self):
        node, _ = leader()
        node.propose("p", b"x", 0)
        node.receive("hb", heartbeat(leader="n2", term=2), 0)
        (response,) = replies(node.ready(), "p")
        assert response.code == DLedgerResponseCode.TERM_CHANGED and response.index == 3

    def test_batch_append_reports_every_position(self):
        node, ready = leader()
        catch_up(node, ready, "n1")
        node.propose("b", [b"a", b"bb", b"ccc"], 0)
        settled = []
        for send in to(node.ready(), "n1", APPEND):
            settled += answer(node, send, end=send.request.entry.index).replies
        assert len(settled) == 1
        assert settled[0].response.index == 5
        assert settled[0].positions == [node.ledger.get(i).pos for i in (3, 4, 5)]


class TestHandleAppend:

    def test_not_leader(self):
        node = make_node()
        node.propose("p", b"x", 0)
        (response,) = replies(node.ready(), "p")
        assert response.code == DLedgerResponseCode.NOT_LEADER

    def test_empty_batch(self):
        node, _ = leader()
        node.propose("p", [], 0)
        (response,) = replies(node.ready(), "p")
        assert response.code == DLedgerResponseCode.REQUEST_WITH_EMPTY_BODYS

    def test_append_over_the_wire_request(self):
        node, ready = leader()
        catch_up(node, ready, "n1")
        node.receive("w", AppendEntryRequest(group="g", remote_id="n0", body=b"hi"), 0)
        (append,) = to(node.ready(), "n1", APPEND)
        ready = answer(node, append, end=3)
        assert replies(ready, "w")[0].code == SUCCESS


@pytest.mark.parametrize("peers", [None, PEERS5])
def test_single_answers_commit_in_order(peers):
    node, ready = leader(peers=peers)
    followers = sorted({s.to for s in pushes(ready, COMPARE)})
    for peer in followers:
        catch_up(node, ready, peer)
    for k in range(5):
        node.propose(k, b"v%d" % k, 0)
    done = []
    for send in reversed(pushes(node.ready(), APPEND)):
        done += [r.token for r in answer(node, send, end=send.request.entry.index).replies]
    assert done == [0, 1, 2, 3, 4]
    assert node.role is Role.LEADER and isinstance(node.ledger, MemoryLedger)
