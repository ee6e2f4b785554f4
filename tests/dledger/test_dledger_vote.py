"""``DLedgerLeaderElector#handleVote``: every ``VoteResponse.RESULT``, in Java's order."""

from support.raftunit import follow, ledger_with, make_node, vote

from rmqproto.codec.dledger_rpc import DLedgerResponseCode, VoteResponse, VoteResult
from rmqproto.dledger import Role, TermState


def answer(node, request):
    node.receive("t", request, 0)
    ready = node.ready()
    (reply,) = ready.replies
    assert reply.token == "t"
    return reply.response, ready


def result(node, request):
    return answer(node, request)[0].vote_result


def test_unknown_candidate():
    assert result(make_node(), vote(candidate="n9")) is VoteResult.REJECT_UNKNOWN_LEADER


def test_a_remote_request_in_my_own_name():
    assert result(make_node(), vote(candidate="n0")) is VoteResult.REJECT_UNEXPECTED_LEADER


def test_smaller_ledger_end_term_comes_before_the_term_check():
    node = make_node(ledger=ledger_with(2), term_state=TermState(5, None))
    response = answer(node, vote(term=1, end_index=0, end_term=1))[0]
    assert response.vote_result is VoteResult.REJECT_EXPIRED_LEDGER_TERM
    assert response.term == 5


def test_same_end_term_shorter_ledger():
    node = make_node(ledger=ledger_with(1, 1))
    assert result(node, vote(term=1, end_index=0, end_term=1)) is \
        VoteResult.REJECT_SMALL_LEDGER_END_INDEX


def test_expired_vote_term():
    node = make_node(term_state=TermState(3, None))
    response = answer(node, vote(term=2))[0]
    assert (response.vote_result, response.term) == (VoteResult.REJECT_EXPIRED_VOTE_TERM, 3)


def test_already_voted_for_another_candidate():
    node = make_node(term_state=TermState(1, "n2"))
    assert result(node, vote(candidate="n1", term=1)) is VoteResult.REJECT_ALREADY_VOTED


def test_already_has_a_leader():
    node = make_node(term_state=TermState(1, "n2"))
    follow(node, leader="n2")
    assert result(node, vote(candidate="n1", term=1)) is VoteResult.REJECT_ALREADY_HAS_LEADER


def test_larger_term_steps_down_and_is_not_ready():
    node = make_node(term_state=TermState(1, "n2"))
    follow(node, leader="n2")
    response, ready = answer(node, vote(candidate="n1", term=4))
    assert response.vote_result is VoteResult.REJECT_TERM_NOT_READY
    assert response.term == 1                       # the term is not taken yet
    assert node.role is Role.CANDIDATE and node.leader_id is None
    assert node.member.known_max_term == 4
    assert ready.term_state is None                 # nothing changed on disk
    node.tick(1)                                    # next turn: adopt it, do not vote yet
    ready = node.ready()
    assert node.term == 4 and ready.term_state == TermState(4, None)
    assert not ready.messages
    assert result(node, vote(candidate="n1", term=4)) is VoteResult.ACCEPT


def test_term_smaller_than_own_ledger_answers_with_the_ledger_term():
    node = make_node(ledger=ledger_with(3), term_state=TermState(1, None))
    response = answer(node, vote(term=1, end_index=0, end_term=3))[0]
    assert response.vote_result is VoteResult.REJECT_TERM_SMALL_THAN_LEDGER
    assert response.term == 3


def test_a_preferred_leader_taking_leadership_refuses_an_equal_ledger():
    node = make_node(ledger=ledger_with(1), term_state=TermState(2, None),
                     preferredLeaderIds="n0")
    node.member.term_to_take_leadership = 2
    assert result(node, vote(term=2, end_index=0, end_term=1)) is \
        VoteResult.REJECT_TAKING_LEADERSHIP
    assert result(node, vote(term=2, end_index=1, end_term=1)) is VoteResult.ACCEPT


def test_accept_is_persisted_in_the_same_ready_before_the_answer():
    node = make_node()
    response, ready = answer(node, vote(candidate="n1", term=0))
    assert response.vote_result is VoteResult.ACCEPT
    assert ready.term_state == TermState(0, "n1")
    assert node.member.vote_for == "n1"
    again, ready = answer(node, vote(candidate="n1", term=0))
    assert again.vote_result is VoteResult.ACCEPT     # a repeated request is let through
    assert result(node, vote(candidate="n2", term=0)) is VoteResult.REJECT_ALREADY_VOTED


def test_response_copies_the_request_base_fields():
    response = answer(make_node(), vote(candidate="n1", term=0))[0]
    assert isinstance(response, VoteResponse)
    assert (response.group, response.local_id, response.remote_id, response.leader_id) == (
        "g", "n1", "n0", "n1")
    assert VoteResponse.from_json(response.to_json()) == response


def test_wrong_member_or_group_is_refused_before_the_elector():
    node = make_node()
    response = answer(node, vote(to="n2"))[0]
    assert response.code == DLedgerResponseCode.UNKNOWN_MEMBER
    request = vote()
    request.group = "other"
    response = answer(node, request)[0]
    assert response.code == DLedgerResponseCode.UNKNOWN_GROUP
    assert node.member.vote_for is None
