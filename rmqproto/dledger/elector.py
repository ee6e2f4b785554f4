"""Election, heartbeats and leadership transfer: ``DLedgerLeaderElector`` of DLedger 0.3.1.2.

Java runs a state loop every 10 ms that blocks on each voting or heartbeat round; here a
round is an object that collects answers and is judged when Java's latch would open (a
quorum is reached, a leader is reported, everyone answered) or at its deadline, whichever
comes first. The rules, in Java's order, are in docs/dledger.md ("Election").

Ours on top of DLedger (docs/dledger.md, "Where we differ"): with ``enablePreVote`` a
candidate that lost a round (WAIT_TO_VOTE_NEXT) does not raise its term after the wait;
it first asks again in its current term, and raises the term only in the same step as
that round comes back WAIT_TO_VOTE_NEXT from a quorum that knows no leader.
"""

from rmqproto.codec.dledger_rpc import (DLedgerResponseCode, HeartBeatRequest, HeartBeatResponse,
                                        LeadershipTransferRequest, LeadershipTransferResponse,
                                        ParseResult, VoteRequest, VoteResponse, VoteResult)
from rmqproto.dledger.actions import Role

__all__ = ["LeaderElector"]

_NEVER = float("-inf")
#: ``VoteResponse.RESULT``s a candidate counts as "a peer has a bigger ledger".
_BIGGER_LEDGER = (VoteResult.REJECT_EXPIRED_LEDGER_TERM, VoteResult.REJECT_SMALL_LEDGER_END_INDEX)
#: Results that tell the candidate about a larger term.
_LARGER_TERM = (VoteResult.REJECT_TERM_SMALL_THAN_LEDGER, VoteResult.REJECT_EXPIRED_VOTE_TERM)


class _Round:
    """One voting or heartbeat round: Java's counters and latch."""

    def __init__(self, term, deadline, answered, prevote=False):
        self.term = term
        self.deadline = deadline
        self.answered = answered
        self.prevote = prevote
        self.valid = self.accepted = self.not_ready = self.bigger_ledger = 0
        self.succeeded = 1            # heartbeats: the leader itself
        self.max_term = term          # votes: knownMaxTermInGroup of the round
        self.heartbeat_max_term = -1  # heartbeats: largest EXPIRED_TERM answer
        self.has_leader = self.inconsistent_leader = False


def _vote_response(request, term, result):
    return VoteResponse(group=request.group, term=term, code=request.code,
                        local_id=request.local_id, remote_id=request.remote_id,
                        leader_id=request.leader_id, vote_result=result)


class LeaderElector:
    """The election rules of one member; driven by :class:`~rmqproto.dledger.node.DLedgerNode`."""

    def __init__(self, node):
        self.node = node
        self.member = node.member
        self.config = node.config
        self.rng = node.rng
        self.last_leader_heartbeat = _NEVER
        self.last_send_heartbeat = _NEVER
        self.last_succ_heartbeat = _NEVER
        self.next_time_to_request_vote = _NEVER
        self.need_increase_term_immediately = False
        self.last_parse_result = ParseResult.WAIT_TO_REVOTE
        self.vote_round = None
        self.heartbeat_round = None
        self.take_over_token = None     # the LEADERSHIP_TRANSFER a transferee still answers

    # ------------------------------------------------------------ role changes

    def change_role_to_leader(self, term):
        if self.member.curr_term == term:
            self.member.change_to_leader(term)
            self.last_send_heartbeat = _NEVER
            self._role_changed(term, Role.LEADER)

    def change_role_to_candidate(self, term):
        if term >= self.member.curr_term:
            self.member.change_to_candidate(term)
            self._role_changed(term, Role.CANDIDATE)

    def change_role_to_follower(self, term, leader_id):
        self.last_parse_result = ParseResult.WAIT_TO_REVOTE
        self.member.change_to_follower(term, leader_id)
        self.last_leader_heartbeat = self.node.now
        self._role_changed(term, Role.FOLLOWER)

    def _role_changed(self, term, role):
        self.heartbeat_round = None
        if role is not Role.CANDIDATE:
            self.vote_round = None
        self._check_take_leadership(term, role)
        self.node.role_changed(term, role)

    # ------------------------------------------------------------ requests from peers

    def handle_heartbeat(self, request):
        """``handleHeartBeat``; the answer is immediate."""
        member = self.member
        if not member.is_peer(request.leader_id):
            return HeartBeatResponse(term=member.curr_term,
                                     code=DLedgerResponseCode.UNKNOWN_MEMBER)
        if request.leader_id == member.self_id:
            return HeartBeatResponse(term=member.curr_term,
                                     code=DLedgerResponseCode.UNEXPECTED_MEMBER)
        if request.term < member.curr_term:
            return HeartBeatResponse(term=member.curr_term, code=DLedgerResponseCode.EXPIRED_TERM)
        if request.term == member.curr_term:
            if member.leader_id is None:
                self.change_role_to_follower(request.term, request.leader_id)
                return HeartBeatResponse()
            if request.leader_id == member.leader_id:
                self.last_leader_heartbeat = self.node.now
                return HeartBeatResponse()
            return HeartBeatResponse(code=DLedgerResponseCode.INCONSISTENT_LEADER)
        # A larger term: step down, raise the term at the next state-loop turn.
        self.change_role_to_candidate(request.term)
        self.need_increase_term_immediately = True
        return HeartBeatResponse(code=DLedgerResponseCode.TERM_NOT_READY)

    def handle_vote(self, request, from_self=False):
        """``handleVote``: every check in Java's order; ACCEPT records (persists) the vote."""
        member = self.member
        candidate = request.leader_id

        def answer(result, term=None):
            return _vote_response(request, member.curr_term if term is None else term, result)

        if not member.is_peer(candidate):
            return answer(VoteResult.REJECT_UNKNOWN_LEADER)
        if not from_self and candidate == member.self_id:
            return answer(VoteResult.REJECT_UNEXPECTED_LEADER)
        if request.ledger_end_term < member.ledger_end_term:
            return answer(VoteResult.REJECT_EXPIRED_LEDGER_TERM)
        if (request.ledger_end_term == member.ledger_end_term
                and request.ledger_end_index < member.ledger_end_index):
            return answer(VoteResult.REJECT_SMALL_LEDGER_END_INDEX)
        if request.term < member.curr_term:
            return answer(VoteResult.REJECT_EXPIRED_VOTE_TERM)
        if request.term == member.curr_term:
            if member.vote_for is not None and member.vote_for != candidate:
                if member.leader_id is not None:
                    return answer(VoteResult.REJECT_ALREADY_HAS_LEADER)
                return answer(VoteResult.REJECT_ALREADY_VOTED)
        else:
            self.change_role_to_candidate(request.term)
            self.need_increase_term_immediately = True
            return answer(VoteResult.REJECT_TERM_NOT_READY)
        if request.term < member.ledger_end_term:
            return answer(VoteResult.REJECT_TERM_SMALL_THAN_LEDGER, member.ledger_end_term)
        if (not from_self and self.is_taking_leadership()
                and request.ledger_end_term == member.ledger_end_term
                and member.ledger_end_index >= request.ledger_end_index):
            return answer(VoteResult.REJECT_TAKING_LEADERSHIP)
        member.set_vote(candidate)
        return answer(VoteResult.ACCEPT)

    # ------------------------------------------------------------ state loop

    def maintain(self, now):
        """``maintainState``: one turn of the state loop."""
        if not self.config.enableLeaderElector:
            return
        role = self.member.role
        if role is Role.LEADER:
            self._maintain_as_leader(now)
        elif role is Role.FOLLOWER:
            self._maintain_as_follower(now)
        else:
            self._maintain_as_candidate(now)

    def _maintain_as_leader(self, now):
        if self.heartbeat_round is not None:
            if now >= self.heartbeat_round.deadline:
                self._judge_heartbeats(now)
            return
        if now - self.last_send_heartbeat > self.config.heartBeatTimeIntervalMs:
            self.last_send_heartbeat = now
            self._send_heartbeats(now)

    def _maintain_as_follower(self, now):
        interval = self.config.heartBeatTimeIntervalMs
        elapsed = now - self.last_leader_heartbeat
        if elapsed > 2 * interval and elapsed > self.config.maxHeartBeatLeak * interval:
            self.change_role_to_candidate(self.member.curr_term)

    def _maintain_as_candidate(self, now):
        if self.vote_round is not None:
            if now >= self.vote_round.deadline:
                self._judge_votes(now)
            return
        if now < self.next_time_to_request_vote and not self.need_increase_term_immediately:
            return
        member = self.member
        prevote = False
        if (self.last_parse_result is ParseResult.WAIT_TO_VOTE_NEXT
                or self.need_increase_term_immediately):
            if (self.need_increase_term_immediately or not self.config.enablePreVote
                    or member.known_max_term > member.curr_term):
                member.next_term()
                self.last_parse_result = ParseResult.WAIT_TO_REVOTE
            else:
                prevote = True
        if self.need_increase_term_immediately:
            self.next_time_to_request_vote = self._next_vote_time(now)
            self.need_increase_term_immediately = False
            return
        self._request_votes(now, member.curr_term, prevote)

    # ------------------------------------------------------------ heartbeat rounds

    def _send_heartbeats(self, now):
        member = self.member
        rnd = self.heartbeat_round = _Round(member.curr_term,
                                            now + self.config.heartBeatTimeIntervalMs, 1)
        for peer in member.peers:
            if peer == member.self_id:
                continue
            request = HeartBeatRequest(group=member.group, local_id=member.self_id, remote_id=peer,
                                       leader_id=member.leader_id, term=rnd.term)
            self.node.send(peer, request, lambda resp, peer=peer: self._on_heartbeat(rnd, peer,
                                                                                   resp))
        self._heartbeat_latch(rnd)

    def _on_heartbeat(self, rnd, peer, response):
        code = DLedgerResponseCode.NETWORK_ERROR if response is None else \
            DLedgerResponseCode.of(response.code)
        self.member.peers_live[peer] = code is not DLedgerResponseCode.NETWORK_ERROR
        rnd.answered += 1
        if code is DLedgerResponseCode.SUCCESS:
            rnd.succeeded += 1
        elif code is DLedgerResponseCode.EXPIRED_TERM:
            rnd.heartbeat_max_term = max(rnd.heartbeat_max_term, response.term)
            if response.term > self.member.curr_term and self.member.role is Role.LEADER:
                # Ours: a member with a larger term would never follow this leader (DLedger
                # #325); step down at once, as Raft does, even with a quorum of followers.
                self.change_role_to_candidate(response.term)
        elif code is DLedgerResponseCode.INCONSISTENT_LEADER:
            rnd.inconsistent_leader = True
        elif code is DLedgerResponseCode.TERM_NOT_READY:
            rnd.not_ready += 1
        if rnd is self.heartbeat_round:
            self._heartbeat_latch(rnd)

    def _heartbeat_latch(self, rnd):
        member = self.member
        if (member.is_quorum(rnd.succeeded) or member.is_quorum(rnd.succeeded + rnd.not_ready)
                or rnd.answered == len(member.peers)):
            self._judge_heartbeats(self.node.now)

    def _judge_heartbeats(self, now):
        rnd, self.heartbeat_round = self.heartbeat_round, None
        member = self.member
        if member.is_quorum(rnd.succeeded):
            self.last_succ_heartbeat = now
        elif member.is_quorum(rnd.succeeded + rnd.not_ready):
            self.last_send_heartbeat = _NEVER
        elif rnd.heartbeat_max_term > rnd.term:
            self.change_role_to_candidate(rnd.heartbeat_max_term)
        elif rnd.inconsistent_leader:
            self.change_role_to_candidate(rnd.term)
        elif (now - self.last_succ_heartbeat
              > self.config.maxHeartBeatLeak * self.config.heartBeatTimeIntervalMs):
            self.change_role_to_candidate(rnd.term)

    # ------------------------------------------------------------ voting rounds

    def is_taking_leadership(self):
        member = self.member
        return (self.config.preferredLeaderIds is not None
                and member.term_to_take_leadership == member.curr_term
                and member.self_id in self.config.preferred_leaders)

    def _next_vote_time(self, now):
        config = self.config
        if self.is_taking_leadership():
            low = config.minTakeLeadershipVoteIntervalMs
            high = config.maxTakeLeadershipVoteIntervalMs
        else:
            low, high = config.minVoteIntervalMs, config.maxVoteIntervalMs
        return now + low + self.rng.randrange(high - low)

    def _request_votes(self, now, term, prevote):
        member = self.member
        deadline = now + 2000 + self.rng.randrange(self.config.maxVoteIntervalMs)
        rnd = self.vote_round = _Round(term, deadline, 0, prevote)
        for peer in member.peers:
            request = VoteRequest(group=member.group, ledger_end_index=member.ledger_end_index,
                                  ledger_end_term=member.ledger_end_term,
                                  leader_id=member.self_id, term=term, remote_id=peer,
                                  local_id=member.self_id)
            if peer == member.self_id:
                self._on_vote(rnd, self.handle_vote(request, from_self=True))
            else:
                self.node.send(peer, request, lambda resp: self._on_vote(rnd, resp))

    def _on_vote(self, rnd, response):
        rnd.answered += 1
        if response is not None:
            result = response.vote_result
            if result is not VoteResult.UNKNOWN:
                rnd.valid += 1
            if result is VoteResult.ACCEPT:
                rnd.accepted += 1
            elif result is VoteResult.REJECT_ALREADY_HAS_LEADER:
                rnd.has_leader = True
            elif result in _LARGER_TERM:
                rnd.max_term = max(rnd.max_term, response.term)
            elif result in _BIGGER_LEDGER:
                rnd.bigger_ledger += 1
            elif result is VoteResult.REJECT_TERM_NOT_READY:
                rnd.not_ready += 1
        if rnd is not self.vote_round:
            return
        member = self.member
        if (rnd.has_leader or member.is_quorum(rnd.accepted)
                or member.is_quorum(rnd.accepted + rnd.not_ready)
                or rnd.answered == len(member.peers) or self._prevote_lost(rnd)):
            self._judge_votes(self.node.now)

    def _prevote_lost(self, rnd):
        """A pre-vote round is judged as soon as a quorum of members that know no leader
        and hold no bigger ledger or term has answered: waiting adds nothing but time."""
        member = self.member
        return (rnd.prevote and rnd.max_term <= rnd.term
                and member.is_quorum(rnd.valid - rnd.bigger_ledger))

    def _judge_votes(self, now):
        """The candidate's verdict on a round (``maintainAsCandidate``, after the latch)."""
        rnd, self.vote_round = self.vote_round, None
        member = self.member
        if member.role is not Role.CANDIDATE or member.curr_term != rnd.term:
            return      # a heartbeat or a larger term overtook the round
        lost = False
        if rnd.max_term > rnd.term:
            result = ParseResult.WAIT_TO_VOTE_NEXT
            self.next_time_to_request_vote = self._next_vote_time(now)
            self.change_role_to_candidate(rnd.max_term)
        elif rnd.has_leader:
            result = ParseResult.WAIT_TO_REVOTE
            self.next_time_to_request_vote = self._next_vote_time(now) + (
                self.config.heartBeatTimeIntervalMs * self.config.maxHeartBeatLeak)
        elif not member.is_quorum(rnd.valid):
            result = ParseResult.WAIT_TO_REVOTE
            self.next_time_to_request_vote = self._next_vote_time(now)
        elif not member.is_quorum(rnd.valid - rnd.bigger_ledger):
            result = ParseResult.WAIT_TO_REVOTE
            self.next_time_to_request_vote = (self._next_vote_time(now)
                                              + self.config.maxVoteIntervalMs)
        elif member.is_quorum(rnd.accepted):
            result = ParseResult.PASSED
        elif member.is_quorum(rnd.accepted + rnd.not_ready):
            result = ParseResult.REVOTE_IMMEDIATELY
        else:
            result = ParseResult.WAIT_TO_VOTE_NEXT
            self.next_time_to_request_vote = self._next_vote_time(now)
            lost = True
        self.last_parse_result = result
        if result is ParseResult.PASSED:
            self.change_role_to_leader(rnd.term)
        elif lost and rnd.prevote:
            # Pre-vote: a quorum just answered and none knows a leader; raise the term now.
            member.next_term()
            self.last_parse_result = ParseResult.WAIT_TO_REVOTE
            self._request_votes(now, member.curr_term, False)

    # ------------------------------------------------------------ leadership transfer

    def transfer_leadership(self, request, on_done):
        """``handleLeadershipTransfer`` on the leader: set the transferee and ask it to take over.

        ``on_done(response)`` gets the transferee's answer (or the refusal).
        """
        member = self.member

        def refuse(code):
            on_done(LeadershipTransferResponse(term=member.curr_term, code=code))

        if member.curr_term != request.term:
            return refuse(DLedgerResponseCode.INCONSISTENT_TERM)
        if member.role is not Role.LEADER:
            return refuse(DLedgerResponseCode.NOT_LEADER)
        if member.transferee is not None:
            return refuse(DLedgerResponseCode.LEADER_TRANSFERRING)
        member.transferee = request.transferee_id
        take = LeadershipTransferRequest(
            group=member.group, leader_id=member.leader_id, local_id=member.self_id,
            remote_id=request.transferee_id, term=request.term,
            take_leadership_ledger_index=member.ledger_end_index,
            transfer_id=member.self_id, transferee_id=request.transferee_id)

        def answered(response):
            if response is None:
                response = LeadershipTransferResponse(term=request.term,
                                                      code=DLedgerResponseCode.NETWORK_ERROR)
            if member.role is Role.LEADER and (
                    response.code != DLedgerResponseCode.SUCCESS
                    or (member.curr_term == request.term and member.transferee is not None)):
                member.transferee = None
            on_done(response)

        self.node.send(request.transferee_id, take, answered)

    def take_leadership(self, request, token):
        """``handleTakeLeadership`` on the transferee (already caught up): stand at term + 1."""
        member = self.member
        if member.curr_term != request.term:
            return LeadershipTransferResponse(term=member.curr_term,
                                              code=DLedgerResponseCode.INCONSISTENT_TERM)
        target = request.term + 1
        member.term_to_take_leadership = target
        self.take_over_token = token
        self.change_role_to_candidate(target)
        self.need_increase_term_immediately = True
        return None

    def _check_take_leadership(self, term, role):
        """``TakeLeadershipTask#check``: answer the pending take-over once its fate is known."""
        target = self.member.term_to_take_leadership
        if target == -1 or self.take_over_token is None:
            return
        code = None
        if term > target:
            code = DLedgerResponseCode.EXPIRED_TERM
        elif term == target:
            if role is Role.LEADER:
                code = DLedgerResponseCode.SUCCESS
            elif role is Role.FOLLOWER:
                code = DLedgerResponseCode.TAKE_LEADERSHIP_FAILED
            else:
                return
        elif role is Role.FOLLOWER:
            code = DLedgerResponseCode.TAKE_LEADERSHIP_FAILED
        else:
            code = DLedgerResponseCode.INTERNAL_ERROR
        token, self.take_over_token = self.take_over_token, None
        self.member.term_to_take_leadership = -1
        self.node.reply(token, LeadershipTransferResponse(term=term, code=code))
