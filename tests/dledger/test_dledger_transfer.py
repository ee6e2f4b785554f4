"""Leadership transfer and the preferred leader (``DLedgerServer#handleLeadershipTransfer``,
``DLedgerLeaderElector#handleTakeLeadership``, ``checkPreferredLeader``)."""

from support.raftunit import (PushEntryType, elect, follow, heartbeat, ledger_with, make_node,
                              push, pushes, replies)

from rmqproto.codec.dledger_rpc import (DLedgerResponseCode, HeartBeatRequest, HeartBeatResponse,
                                        LeadershipTransferRequest, LeadershipTransferResponse,
                                        PushEntryResponse, VoteRequest, VoteResponse, VoteResult)
from rmqproto.dledger import Role, TermState

CODES = DLedgerResponseCode


def transfer(transferee="n1", term=1, to="n0", transfer_id="n0", index=0):
    return LeadershipTransferRequest(group="g", remote_id=to, term=term, transfer_id=transfer_id,
                                     transferee_id=transferee, take_leadership_ledger_index=index,
                                     leader_id=transfer_id, local_id=transfer_id)


def caught_up_leader(**settings):
    """n0, leader of term 1 with 3 entries, n1 holding all of them."""
    node = make_node(ledger=ledger_with(1, 1, 1), term_state=TermState(1, None), **settings)
    ready = elect(node)
    (compare,) = [s for s in pushes(ready, PushEntryType.COMPARE) if s.to == "n1"]
    node.deliver(compare.request, PushEntryResponse(group="g", code=200, term=1, index=2,
                                                    end_index=2), 0)
    node.ready()
    return node


def sent_transfers(ready):
    return [s for s in ready.messages if isinstance(s.request, LeadershipTransferRequest)]


class TestLeaderSide:

    def test_transferee_too_far_behind(self):
        node = caught_up_leader(maxLeadershipTransferWaitIndex=3)
        node.receive("t", transfer("n2"), 0)
        assert replies(node.ready(), "t")[0].code == CODES.FALL_BEHIND_TOO_MUCH

    def test_transfer_blocks_appends_until_answered(self):
        node = caught_up_leader()
        node.receive("t", transfer("n1"), 0)
        ready = node.ready()
        (take,) = sent_transfers(ready)
        assert take.to == "n1"
        request = take.request
        assert (request.transfer_id, request.transferee_id, request.term,
                request.take_leadership_ledger_index, request.leader_id) == ("n0", "n1", 1, 2,
                                                                              "n0")
        node.propose("p", b"x", 1)
        assert replies(node.ready(), "p")[0].code == CODES.LEADER_TRANSFERRING
        node.receive("t2", transfer("n1"), 1)
        assert replies(node.ready(), "t2")[0].code == CODES.LEADER_TRANSFERRING
        node.deliver(request, LeadershipTransferResponse(term=2, code=CODES.SUCCESS), 5)
        assert replies(node.ready(), "t")[0].code == CODES.SUCCESS
        assert node.member.transferee is None

    def test_failed_transfer_reopens_appends(self):
        node = caught_up_leader()
        node.receive("t", transfer("n1"), 0)
        (take,) = sent_transfers(node.ready())
        node.deliver(take.request, None, 3000)
        assert replies(node.ready(), "t")[0].code == CODES.NETWORK_ERROR
        node.propose("p", b"x", 3000)
        assert not replies(node.ready(), "p")        # accepted, waiting for its quorum

    def test_wrong_term_or_not_leader(self):
        node = caught_up_leader()
        node.receive("t", transfer("n1", term=0), 0)
        assert replies(node.ready(), "t")[0].code == CODES.INCONSISTENT_TERM
        follower = make_node(term_state=TermState(1, None))
        follow(follower, leader="n1")
        follower.receive("t", transfer("n2"), 0)
        assert replies(follower.ready(), "t")[0].code == CODES.NOT_LEADER
        node.receive("t", transfer("n9"), 0)
        assert replies(node.ready(), "t")[0].code == CODES.UNKNOWN_MEMBER

    def test_neither_side(self):
        node = caught_up_leader()
        node.receive("t", transfer("n2", transfer_id="n1"), 0)
        assert replies(node.ready(), "t")[0].code == CODES.UNEXPECTED_ARGUMENT


def transferee(end=2, **settings):
    """n1, follower of n0 in term 1, holding entries up to ``end``."""
    node = make_node("n1", ledger=ledger_with(*(1,) * (end + 1)), term_state=TermState(1, None),
                     **settings)
    follow(node, leader="n0")
    return node


def take(node, index, now=0):
    node.receive("t", transfer("n1", to="n1", index=index), now)
    return node.ready()


class TestTransfereeSide:

    def test_not_caught_up_in_time(self):
        node = transferee(end=1)
        take(node, 2)
        node.tick(1000)
        assert not replies(node.ready(), "t")
        node.tick(1001)
        assert replies(node.ready(), "t")[0].code == CODES.TAKE_LEADERSHIP_FAILED
        assert node.role is Role.FOLLOWER

    def test_catches_up_then_wins_the_next_term(self):
        node = transferee(end=1, preferredLeaderIds="n1")
        take(node, 2)
        leader_log = ledger_with(1, 1, 1)
        node.receive("a", push(PushEntryType.APPEND, leader="n0", entry=leader_log.get(2),
                               to="n1"), 100)
        node.ready()
        assert node.role is Role.CANDIDATE and node.member.term_to_take_leadership == 2
        node.tick(110)
        ready = node.ready()
        assert node.term == 2 and ready.term_state == TermState(2, None)
        when = node.elector.next_time_to_request_vote
        assert 140 <= when < 210                       # the 30-100 ms take-over interval
        node.tick(when)
        ready = node.ready()
        for send in ready.messages:
            if isinstance(send.request, VoteRequest):
                node.deliver(send.request, VoteResponse(group="g", term=2,
                                                        vote_result=VoteResult.ACCEPT), when)
        ready = node.ready()
        assert node.role is Role.LEADER
        (response,) = replies(ready, "t")
        assert (response.code, response.term) == (CODES.SUCCESS, 2)

    def test_a_heartbeat_of_the_target_term_means_failure(self):
        node = transferee()
        take(node, 2)
        node.tick(10)
        node.ready()
        node.receive("hb", heartbeat(leader="n2", term=2, to="n1"), 20)
        (response,) = replies(node.ready(), "t")
        assert response.code == CODES.TAKE_LEADERSHIP_FAILED

    def test_only_from_my_leader(self):
        node = transferee()
        node.receive("t", transfer("n1", to="n1", transfer_id="n2"), 0)
        assert replies(node.ready(), "t")[0].code == CODES.INCONSISTENT_LEADER

    def test_term_moved_on(self):
        node = transferee()
        node.receive("t", transfer("n1", to="n1", term=0), 0)
        assert replies(node.ready(), "t")[0].code == CODES.INCONSISTENT_TERM


def beat_ok(node, ready, now):
    for send in ready.messages:
        if isinstance(send.request, HeartBeatRequest):
            node.deliver(send.request, HeartBeatResponse(), now)


def test_preferred_leader_check_hands_over_to_a_live_caught_up_peer():
    node = caught_up_leader(preferredLeaderIds="n1")
    node.tick(0)
    beat_ok(node, node.ready(), 0)
    node.tick(999)
    assert not sent_transfers(node.ready())
    node.tick(1000)
    (take_over,) = sent_transfers(node.ready())
    assert take_over.to == "n1" and take_over.request.transferee_id == "n1"
    assert node.member.transferee == "n1"


def test_preferred_leader_is_not_tried_again_at_once_after_a_failure():
    node = caught_up_leader(preferredLeaderIds="n1")
    node.tick(0)
    beat_ok(node, node.ready(), 0)
    node.tick(1000)
    (take_over,) = sent_transfers(node.ready())
    node.deliver(take_over.request, LeadershipTransferResponse(
        term=1, code=CODES.TAKE_LEADERSHIP_FAILED), 2000)
    assert node.member.transferee is None
    now, attempts = 2000, 0
    while now < 7990:
        now += 10
        node.tick(now)
        ready = node.ready()
        beat_ok(node, ready, now)
        attempts += len(sent_transfers(ready))
    assert attempts == 0
    node.tick(9000)
    assert sent_transfers(node.ready())


def test_no_transfer_to_a_dead_or_lagging_preferred_peer_or_from_a_preferred_leader():
    node = caught_up_leader(preferredLeaderIds="n2")        # n2 never answered
    node.tick(1000)
    assert not sent_transfers(node.ready())
    node = caught_up_leader(preferredLeaderIds="n0;n1")
    node.tick(0)
    beat_ok(node, node.ready(), 0)
    node.tick(1000)
    assert not sent_transfers(node.ready())
