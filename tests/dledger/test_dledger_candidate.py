"""A candidate's voting rounds: ``maintainAsCandidate`` and its ``ParseResult`` rules."""

import pytest
from support.raftunit import PEERS5, ledger_with, make_node

from rmqproto.codec.dledger_rpc import ParseResult, VoteRequest, VoteResponse, VoteResult
from rmqproto.dledger import Role, TermState


def votes(ready):
    return [s for s in ready.messages if isinstance(s.request, VoteRequest)]


def answer(node, ready, results, now=0):
    """Answer the round's requests: ``results`` maps peer → VoteResult or (VoteResult, term)
    or None for a failed call."""
    for send in votes(ready):
        if send.to not in results:
            continue
        outcome = results[send.to]
        if outcome is None:
            node.deliver(send.request, None, now)
            continue
        result, term = outcome if isinstance(outcome, tuple) else (outcome, send.request.term)
        node.deliver(send.request, VoteResponse(group="g", term=term, vote_result=result), now)


def start_round(node, now=0):
    node.tick(now)
    ready = node.ready()
    assert len(votes(ready)) == len(node.member.peers) - 1
    return ready


def test_first_round_votes_for_itself_in_the_current_term():
    node = make_node(ledger=ledger_with(1, 1), term_state=TermState(1, None))
    ready = start_round(node)
    assert ready.term_state == TermState(1, "n0")
    request = votes(ready)[0].request
    assert (request.term, request.ledger_end_index, request.ledger_end_term) == (1, 1, 1)
    assert (request.leader_id, request.local_id) == ("n0", "n0")


def test_passed_with_a_quorum_of_accepts():
    node = make_node()
    ready = start_round(node)
    answer(node, ready, {"n1": VoteResult.ACCEPT})
    assert node.role is Role.LEADER and node.leader_id == "n0"
    assert node.ready().role_changes == [(0, Role.LEADER)]


def test_accepts_plus_not_ready_revote_immediately_in_the_same_term():
    node = make_node()
    answer(node, start_round(node), {"n1": VoteResult.REJECT_TERM_NOT_READY})
    assert node.elector.last_parse_result is ParseResult.REVOTE_IMMEDIATELY
    node.tick(1)
    assert [s.request.term for s in votes(node.ready())] == [0, 0]


def test_a_larger_term_reported_is_adopted_next_round():
    node = make_node()
    answer(node, start_round(node), {"n1": (VoteResult.REJECT_EXPIRED_VOTE_TERM, 7),
                                     "n2": VoteResult.REJECT_ALREADY_VOTED})
    assert node.elector.last_parse_result is ParseResult.WAIT_TO_VOTE_NEXT
    assert node.member.known_max_term == 7
    when = node.elector.next_time_to_request_vote
    assert 300 <= when < 1000
    node.tick(when - 1)
    assert not votes(node.ready())
    node.tick(when)
    assert {s.request.term for s in votes(node.ready())} == {7}


def test_already_has_leader_waits_for_a_heartbeat_leak():
    node = make_node()
    answer(node, start_round(node), {"n1": VoteResult.REJECT_ALREADY_HAS_LEADER})
    assert node.elector.last_parse_result is ParseResult.WAIT_TO_REVOTE
    assert 6300 <= node.elector.next_time_to_request_vote < 7000
    assert node.term == 0


def test_too_few_valid_answers_revote_in_the_same_term():
    node = make_node()
    answer(node, start_round(node), {"n1": None, "n2": None})
    assert node.elector.last_parse_result is ParseResult.WAIT_TO_REVOTE
    when = node.elector.next_time_to_request_vote
    assert 300 <= when < 1000
    node.tick(when)
    assert {s.request.term for s in votes(node.ready())} == {0}


def test_bigger_ledgers_leave_the_way_to_them():
    node = make_node()
    answer(node, start_round(node), {"n1": VoteResult.REJECT_SMALL_LEDGER_END_INDEX,
                                     "n2": VoteResult.REJECT_EXPIRED_LEDGER_TERM})
    assert node.elector.last_parse_result is ParseResult.WAIT_TO_REVOTE
    assert 1300 <= node.elector.next_time_to_request_vote < 2000


def test_lost_round_raises_the_term_next_time_without_pre_vote():
    node = make_node(enablePreVote=False)
    answer(node, start_round(node), {"n1": VoteResult.REJECT_ALREADY_VOTED,
                                     "n2": VoteResult.REJECT_ALREADY_VOTED})
    assert node.elector.last_parse_result is ParseResult.WAIT_TO_VOTE_NEXT
    assert node.term == 0
    node.tick(node.elector.next_time_to_request_vote)
    ready = node.ready()
    assert node.term == 1 and ready.term_state == TermState(1, "n0")
    assert {s.request.term for s in votes(ready)} == {1}


def test_lost_round_with_pre_vote_asks_again_then_raises_in_the_same_step():
    node = make_node()
    answer(node, start_round(node), {"n1": VoteResult.REJECT_ALREADY_VOTED,
                                     "n2": VoteResult.REJECT_ALREADY_VOTED})
    when = node.elector.next_time_to_request_vote
    node.tick(when)
    ready = node.ready()
    assert node.term == 0 and {s.request.term for s in votes(ready)} == {0}
    # The first quorum of answers that knows no leader settles the pre-vote at once.
    answer(node, ready, {"n1": VoteResult.REJECT_ALREADY_VOTED}, now=when + 5)
    ready = node.ready()
    assert node.term == 1 and ready.term_state == TermState(1, "n0")
    assert {s.request.term for s in votes(ready)} == {1}


def test_pre_vote_that_finds_a_leader_keeps_the_term():
    node = make_node()
    answer(node, start_round(node), {"n1": VoteResult.REJECT_ALREADY_VOTED,
                                     "n2": VoteResult.REJECT_ALREADY_VOTED})
    node.tick(node.elector.next_time_to_request_vote)
    answer(node, node.ready(), {"n1": VoteResult.REJECT_ALREADY_HAS_LEADER})
    assert node.term == 0
    assert node.elector.last_parse_result is ParseResult.WAIT_TO_REVOTE


def test_a_silent_round_ends_at_its_deadline():
    node = make_node(peers=PEERS5)
    start_round(node)
    deadline = node.elector.vote_round.deadline
    assert 2000 <= deadline < 3000
    node.tick(deadline - 1)
    assert node.elector.vote_round is not None
    node.tick(deadline)
    assert node.elector.vote_round is None
    assert node.elector.last_parse_result is ParseResult.WAIT_TO_REVOTE


@pytest.mark.parametrize("seed", range(20))
def test_vote_intervals_stay_in_the_configured_range(seed):
    node = make_node(seed=seed, minVoteIntervalMs=100, maxVoteIntervalMs=150)
    answer(node, start_round(node), {"n1": None, "n2": None})
    assert 100 <= node.elector.next_time_to_request_vote < 150


def test_taking_leadership_uses_the_short_intervals():
    node = make_node(preferredLeaderIds="n0")
    node.member.term_to_take_leadership = 0
    answer(node, start_round(node), {"n1": None, "n2": None})
    assert 30 <= node.elector.next_time_to_request_vote < 100


def test_answers_to_an_old_round_are_ignored():
    node = make_node()
    first = start_round(node)
    answer(node, first, {"n1": None, "n2": None})
    node.tick(node.elector.next_time_to_request_vote)
    node.ready()
    answer(node, first, {"n1": VoteResult.ACCEPT})
    assert node.role is Role.CANDIDATE
