"""A member's Raft state: ``MemberState`` of DLedger 0.3.1.2.

Role (CANDIDATE at start), ``currTerm`` and the vote (``voteLeader``) — both persisted in
``currterm`` —, the leader, ``knownMaxTermInGroup``, the transferee of a leadership
transfer and the term a preferred leader is taking. ``ledgerEndIndex`` and
``ledgerEndTerm`` are always the log's own (the term of the last entry, never the current
term: DLedger #52).

A member only reaches a higher term through :meth:`next_term`: a higher term seen in a
request is remembered in ``known_max_term`` (by :meth:`change_to_candidate`) and adopted
there.
"""

from rmqproto.codec.dledger_rpc import DLedgerResponseCode
from rmqproto.dledger.actions import Role, TermState
from rmqproto.dledger.log import LedgerError

__all__ = ["MemberState"]


class MemberState:
    """Role, term, vote and leader of one member (``MemberState``)."""

    def __init__(self, config, ledger, term_state=None):
        self.config = config
        self.ledger = ledger
        self.group = config.group
        self.self_id = config.selfId
        self.peers = dict(config.peer_map)
        self.role = Role.CANDIDATE
        self.leader_id = None
        self.curr_term = term_state.curr_term if term_state else 0
        self.vote_for = term_state.vote_leader if term_state else None
        self.known_max_term = -1
        self.transferee = None
        self.term_to_take_leadership = -1
        self.peers_live = {}
        self.dirty = False      # the term state changed and is not yet handed out
        self.role_changes = []

    # ------------------------------------------------------------ queries

    @property
    def ledger_end_index(self):
        return self.ledger.end_index

    @property
    def ledger_end_term(self):
        return self.ledger.end_term

    def is_quorum(self, num):
        """``num`` members (self included) are a majority of the group."""
        return num >= len(self.peers) // 2 + 1

    def is_peer(self, member_id):
        return member_id is not None and member_id in self.peers

    def term_state(self):
        return TermState(self.curr_term, self.vote_for)

    # ------------------------------------------------------------ changes

    def set_vote(self, candidate):
        """``setCurrVoteFor``: record the vote (persisted before the answer leaves)."""
        self.vote_for = candidate
        self.dirty = True

    def next_term(self):
        """``nextTerm``: a candidate moves to the known max term, or the next one."""
        if self.role is not Role.CANDIDATE:
            raise LedgerError(DLedgerResponseCode.ILLEGAL_MEMBER_STATE, "%s is not CANDIDATE" % (
                self.role.name,))
        if self.known_max_term > self.curr_term:
            self.curr_term = self.known_max_term
        else:
            self.curr_term += 1
        self.vote_for = None
        self.dirty = True
        return self.curr_term

    def change_to_leader(self, term):
        self.role = Role.LEADER
        self.leader_id = self.self_id
        self.peers_live.clear()
        self.role_changes.append((term, Role.LEADER))

    def change_to_follower(self, term, leader_id):
        self.role = Role.FOLLOWER
        self.leader_id = leader_id
        self.transferee = None
        self.role_changes.append((term, Role.FOLLOWER))

    def change_to_candidate(self, term):
        """Step down to CANDIDATE, remembering ``term`` if it is the highest seen."""
        self.known_max_term = max(self.known_max_term, term)
        self.role = Role.CANDIDATE
        self.leader_id = None
        self.transferee = None
        self.role_changes.append((term, Role.CANDIDATE))
