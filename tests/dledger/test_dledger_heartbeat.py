"""Heartbeats: ``handleHeartBeat``, the follower's leak check and the leader's step-down."""

from support.raftunit import elect, follow, heartbeat, make_node

from rmqproto.codec.dledger_rpc import DLedgerResponseCode, HeartBeatRequest, HeartBeatResponse
from rmqproto.dledger import Role, TermState


def answer(node, request, now=0):
    node.receive("t", request, now)
    (reply,) = node.ready().replies
    return reply.response


def beats(ready):
    return [s for s in ready.messages if isinstance(s.request, HeartBeatRequest)]


def reply_all(node, ready, code=DLedgerResponseCode.SUCCESS, term=-1, now=0, only=None):
    for send in beats(ready):
        if only is None or send.to in only:
            response = None if code is None else HeartBeatResponse(code=code, term=term)
            node.deliver(send.request, response, now)


class TestHandling:

    def test_unknown_leader(self):
        response = answer(make_node(), heartbeat(leader="n9", term=0))
        assert response.code == DLedgerResponseCode.UNKNOWN_MEMBER

    def test_my_own_name(self):
        response = answer(make_node(), heartbeat(leader="n0", term=0))
        assert response.code == DLedgerResponseCode.UNEXPECTED_MEMBER

    def test_expired_term_carries_mine(self):
        response = answer(make_node(term_state=TermState(4, None)), heartbeat(term=3))
        assert (response.code, response.term) == (DLedgerResponseCode.EXPIRED_TERM, 4)

    def test_same_term_without_leader_makes_a_follower(self):
        node = make_node(term_state=TermState(2, None))
        node.receive("t", heartbeat(leader="n1", term=2), 0)
        ready = node.ready()
        assert ready.replies[0].response.code == DLedgerResponseCode.SUCCESS
        assert ready.role_changes == [(2, Role.FOLLOWER)]
        assert (node.role, node.leader_id) == (Role.FOLLOWER, "n1")

    def test_same_leader_refreshes(self):
        node = make_node()
        follow(node, now=0)
        assert answer(node, heartbeat(term=0), now=5000).code == DLedgerResponseCode.SUCCESS
        node.tick(10000)
        assert node.role is Role.FOLLOWER
        node.tick(11001)
        assert node.role is Role.CANDIDATE

    def test_other_leader_in_the_same_term(self):
        node = make_node()
        follow(node, leader="n1")
        response = answer(node, heartbeat(leader="n2", term=0))
        assert response.code == DLedgerResponseCode.INCONSISTENT_LEADER
        assert node.leader_id == "n1"

    def test_larger_term_steps_down_and_is_not_ready(self):
        node = make_node()
        follow(node, leader="n1")
        response = answer(node, heartbeat(leader="n2", term=3))
        assert response.code == DLedgerResponseCode.TERM_NOT_READY
        assert node.role is Role.CANDIDATE and node.term == 0
        node.tick(1)
        assert node.term == 3
        assert answer(node, heartbeat(leader="n2", term=3)).code == DLedgerResponseCode.SUCCESS
        assert node.role is Role.FOLLOWER


def test_follower_becomes_candidate_after_the_heartbeat_leak():
    node = make_node()
    follow(node, now=1000)
    node.tick(7000)                         # 6000 ms: not yet more than 3 x 2000
    assert node.role is Role.FOLLOWER
    node.tick(7001)
    assert node.role is Role.CANDIDATE and node.term == 0
    assert node.ready().role_changes[-1] == (0, Role.CANDIDATE)


def test_leader_beats_every_interval():
    node = make_node()
    elect(node)
    node.tick(0)
    first = node.ready()
    assert sorted(s.to for s in beats(first)) == ["n1", "n2"]
    assert {(s.request.term, s.request.leader_id) for s in beats(first)} == {(0, "n0")}
    reply_all(node, first)
    node.tick(2000)
    assert not beats(node.ready())
    node.tick(2001)
    assert len(beats(node.ready())) == 2
    assert node.member.peers_live == {"n1": True, "n2": True}


def test_leader_without_quorum_steps_down_after_the_leak():
    node = make_node()
    elect(node)
    node.tick(0)
    reply_all(node, node.ready())           # one good round at 0
    now = 0
    while node.role is Role.LEADER and now < 20000:
        now += 10
        node.tick(now)
        reply_all(node, node.ready(), code=None, now=now)
    assert node.role is Role.CANDIDATE
    assert 6000 < now <= 8020
    assert node.member.peers_live == {"n1": False, "n2": False}


def test_expired_term_answer_steps_the_leader_down_to_that_term():
    node = make_node()
    elect(node)
    node.tick(0)
    reply_all(node, node.ready(), code=DLedgerResponseCode.EXPIRED_TERM, term=5)
    assert node.role is Role.CANDIDATE and node.member.known_max_term == 5


def test_inconsistent_leader_answer_steps_the_leader_down():
    node = make_node()
    elect(node)
    node.tick(0)
    reply_all(node, node.ready(), code=DLedgerResponseCode.INCONSISTENT_LEADER)
    assert node.role is Role.CANDIDATE and node.term == 0


def test_not_ready_followers_count_towards_a_quick_resend():
    node = make_node()
    elect(node)
    node.tick(0)
    reply_all(node, node.ready(), code=DLedgerResponseCode.TERM_NOT_READY, only=["n1"])
    assert node.role is Role.LEADER
    node.tick(10)
    assert len(beats(node.ready())) == 2        # sent again at once, not after 2 s
