"""One DLedger member as a deterministic machine: messages and ``now`` in, :class:`Ready` out.

The core has no sockets and no clock (times are milliseconds the caller passes in). The
caller — the Twisted adapter, or a test's simulated network — does four things::

    node.receive(token, request, now)     # a request from a peer or a client
                                          # (receive_all: several decoded at once)
    node.deliver(request, response, now)  # the answer to a request from node.ready()
                                          # (None when the call failed or timed out;
                                          # deliver_all: several at once)
    node.tick(now)                        # timers: at node.next_deadline() (sooner is fine)
    ready = node.ready()                  # then, in this order:
        # 1. write ready.term_state to ``currterm`` if set, and sync it
        # 2. send ready.messages, answer ready.replies (by their token)
        # 3. report ready.role_changes

The log is written through an :class:`~rmqproto.dledger.log.ILedger` given at
construction. Requests and answers are the message classes of
:mod:`rmqproto.codec.dledger_rpc`, so an adapter only encodes and decodes them.

Request handling follows ``DLedgerServer`` (member and group checks first, then the
elector or the pusher); the preferred-leader check runs every second on the leader. See
docs/dledger.md for every rule.
"""

import random

from rmqproto.codec.dledger_rpc import (RPC_TYPES, AppendEntryRequest, AppendEntryResponse,
                                        BatchAppendEntryRequest,
                                        DLedgerResponseCode, GetEntriesRequest,
                                        GetEntriesResponse, HeartBeatRequest,
                                        LeadershipTransferRequest, LeadershipTransferResponse,
                                        MetadataRequest, MetadataResponse, PullEntriesRequest,
                                        PushEntryRequest, VoteRequest)
from rmqproto.dledger.actions import Ready, Reply, Role, Send
from rmqproto.dledger.elector import LeaderElector
from rmqproto.dledger.handler import EntryHandler
from rmqproto.dledger.log import LedgerError
from rmqproto.dledger.member import MemberState
from rmqproto.dledger.pusher import EntryPusher

__all__ = ["DLedgerNode", "PREFERRED_LEADER_CHECK_MS"]

#: ``checkPreferredLeader`` runs every second.
PREFERRED_LEADER_CHECK_MS = 1000
_NEVER = float("-inf")
_RESPONSE_OF = {request: response for request, response in RPC_TYPES.values()}
_RESPONSE_OF[BatchAppendEntryRequest] = _RESPONSE_OF[AppendEntryRequest]


class DLedgerNode:
    """A DLedger member: ``MemberState``, ``DLedgerLeaderElector``, ``DLedgerEntryPusher``.

    ``term_state`` is what ``currterm`` held at start (None for a new member); ``rng``
    draws the random vote intervals (pass a seeded ``random.Random`` for repeatable runs).
    """

    def __init__(self, config, ledger, term_state=None, rng=None, now=0):
        self.config = config
        self.ledger = ledger
        self.rng = rng or random.Random()
        self.now = now
        self.member = MemberState(config, ledger, term_state)
        if ledger.committed_index > ledger.end_index:
            # A checkpoint written before the last entries were lost (DLedger #316).
            ledger.committed_index = ledger.end_index
        self._out = Ready()
        self._awaiting = {}          # id(request) → (request, on_response)
        self.elector = LeaderElector(self)
        self.pusher = EntryPusher(self)
        self.handler = EntryHandler(self)
        self._catching_up = []       # transferee waits: (request, token, deadline)
        self._transfer_retry = {}    # preferred peer → earliest next transfer attempt
        self._last_preferred_check = now

    # ------------------------------------------------------------ state, for callers

    @property
    def role(self):
        return self.member.role

    @property
    def term(self):
        return self.member.curr_term

    @property
    def leader_id(self):
        return self.member.leader_id

    @property
    def self_id(self):
        return self.member.self_id

    @property
    def committed_index(self):
        return self.ledger.committed_index

    # ------------------------------------------------------------ inputs

    def receive(self, token, request, now):
        """A request from a peer or a client; its answer comes back as ``Reply(token, …)``."""
        self.receive_all([(token, request)], now)

    def receive_all(self, requests, now):
        """Several ``(token, request)`` at once — everything one read decoded — handled
        before the work they cause, as Java's handler threads see a burst."""
        self.now = now
        member = self.member
        for token, request in requests:
            if request.remote_id != member.self_id:
                self.refuse(token, request, DLedgerResponseCode.UNKNOWN_MEMBER)
            elif request.group != member.group:
                self.refuse(token, request, DLedgerResponseCode.UNKNOWN_GROUP)
            else:
                self._dispatch(token, request, now)
        self._work(now)

    def propose(self, token, bodies, now, push=True):
        """Append ``bodies`` (one ``bytes`` or a list) in-process, as an APPEND request would.

        With ``push`` false the entries are written (or the append refused) at once, and
        what they cause (the pushes to the followers) waits for the next input or
        :meth:`work`: the appends of one turn of the caller then go out together."""
        member = self.member
        if isinstance(bodies, (bytes, bytearray, memoryview)):
            request = AppendEntryRequest(group=member.group, remote_id=member.self_id,
                                         body=bytes(bodies))
        else:
            request = BatchAppendEntryRequest(group=member.group, remote_id=member.self_id,
                                              batch_msgs=[bytes(b) for b in bodies])
        if push:
            self.receive(token, request, now)
        else:
            self.now = now
            self._dispatch(token, request, now)

    def work(self, now):
        """The work the inputs so far cause (after :meth:`propose` without ``push``)."""
        self.now = now
        self._work(now)

    def deliver(self, request, response, now):
        """The answer to a request this node sent (None: it failed or timed out)."""
        self.deliver_all([(request, response)], now)

    def deliver_all(self, answers, now):
        """Several ``(request, response)`` at once, handled before the work they cause (as
        :meth:`receive_all` for requests)."""
        self.now = now
        awaiting = self._awaiting
        for request, response in answers:
            waiting = awaiting.pop(id(request), None)
            if waiting is not None and waiting[1] is not None:
                waiting[1](response)
        self._work(now)

    def tick(self, now):
        """Run the timers due at ``now``."""
        self.now = now
        self.elector.maintain(now)
        if now >= self._last_preferred_check + PREFERRED_LEADER_CHECK_MS:
            self._last_preferred_check = now
            self._check_preferred_leader(now)
        self._work(now)

    def next_deadline(self):
        """When :meth:`tick` must run next: the earliest timer of the member (vote or
        heartbeat round, leak check, next vote, re-push, idle COMMIT, pause, catch-up
        wait, preferred-leader check …), never before the last ``now``."""
        due = self.elector.deadlines() + self.handler.deadlines() + self.pusher.deadlines()
        due += [deadline + 1 for _, _, deadline in self._catching_up]
        due.append(self._last_preferred_check + PREFERRED_LEADER_CHECK_MS)
        return max(self.now, min(due))

    def ready(self):
        """Take what the inputs so far produced (see the module doc for the order)."""
        ready, self._out = self._out, Ready()
        if self.member.dirty:
            ready.term_state = self.member.term_state()
            self.member.dirty = False
        ready.role_changes, self.member.role_changes = self.member.role_changes, []
        return ready

    # ------------------------------------------------------------ outputs, for the parts

    def send(self, peer, request, on_response):
        self._awaiting[id(request)] = (request, on_response)
        self._out.messages.append(Send(peer, request))

    def reply(self, token, response, positions=None):
        response.code = int(response.code)      # the codec wants a plain int, not the enum
        self._out.replies.append(Reply(token, response, positions))

    def refuse(self, token, request, code):
        """``DLedgerServer``'s answer to a ``DLedgerException``: the request's base fields,
        ``code`` and the current leader."""
        response = _RESPONSE_OF[type(request)](
            group=request.group, term=request.term, code=code, local_id=request.local_id,
            remote_id=request.remote_id, leader_id=self.member.leader_id)
        self.reply(token, response)

    def role_changed(self, term, role):
        if role is not Role.LEADER:
            self.pusher.settle_all(DLedgerResponseCode.TERM_CHANGED)

    # ------------------------------------------------------------ requests

    def _dispatch(self, token, request, now):
        kind = type(request)
        if kind is VoteRequest:
            self.reply(token, self.elector.handle_vote(request))
        elif kind is HeartBeatRequest:
            self.reply(token, self.elector.handle_heartbeat(request))
        elif kind is PushEntryRequest:
            self.handler.handle_push(request, token, now)
        elif kind in (AppendEntryRequest, BatchAppendEntryRequest):
            self._append(token, request, now)
        elif kind is GetEntriesRequest:
            self._get(token, request)
        elif kind is MetadataRequest:
            self.reply(token, MetadataResponse(group=self.member.group,
                                               peers=dict(self.member.peers),
                                               leader_id=self.member.leader_id, term=self.term,
                                               ledger_end_index=self.member.ledger_end_index,
                                               committed_index=self.committed_index))
        elif kind is LeadershipTransferRequest:
            self._leadership_transfer(token, request, now)
        elif kind is PullEntriesRequest:
            self.refuse(token, request, DLedgerResponseCode.UNSUPPORTED)
        else:
            raise TypeError("not a DLedger request: %r" % (request,))

    def _append(self, token, request, now):
        """``handleAppend``."""
        member = self.member
        if member.role is not Role.LEADER:
            return self.refuse(token, request, DLedgerResponseCode.NOT_LEADER)
        if member.transferee is not None:
            return self.refuse(token, request, DLedgerResponseCode.LEADER_TRANSFERRING)
        if self.pusher.is_pending_full(member.curr_term):
            return self.reply(token, self._append_refusal(DLedgerResponseCode.LEADER_PENDING_FULL))
        if isinstance(request, BatchAppendEntryRequest):
            bodies = request.batch_msgs
            if not bodies:
                return self.refuse(token, request, DLedgerResponseCode.REQUEST_WITH_EMPTY_BODYS)
        else:
            bodies = [request.body or b""]
        try:
            entries = [self.ledger.append_as_leader(body, member.curr_term) for body in bodies]
        except LedgerError as exc:
            return self.refuse(token, request, exc.code)
        positions = [e.pos for e in entries] if isinstance(request, BatchAppendEntryRequest) \
            else None
        self.pusher.wait_ack(entries[-1], token, now, positions)
        return None

    def _append_refusal(self, code):
        member = self.member
        return AppendEntryResponse(group=member.group, code=code, term=member.curr_term,
                                   leader_id=member.self_id)

    def _get(self, token, request):
        """``handleGet``: one entry, from the leader only."""
        if self.member.role is not Role.LEADER:
            return self.refuse(token, request, DLedgerResponseCode.NOT_LEADER)
        if request.begin_index is None:
            return self.refuse(token, request, DLedgerResponseCode.UNEXPECTED_ARGUMENT)
        try:
            entry = self.ledger.get(request.begin_index)
        except LedgerError as exc:
            return self.refuse(token, request, exc.code)
        self.reply(token, GetEntriesResponse(group=self.member.group, entries=[entry]))
        return None

    def _leadership_transfer(self, token, request, now):
        """``DLedgerServer#handleLeadershipTransfer``: the leader's or the transferee's part."""
        member = self.member
        if request.transfer_id == member.self_id:
            if not member.is_peer(request.transferee_id):
                return self.refuse(token, request, DLedgerResponseCode.UNKNOWN_MEMBER)
            if member.curr_term != request.term:
                return self.refuse(token, request, DLedgerResponseCode.INCONSISTENT_TERM)
            if member.role is not Role.LEADER:
                return self.refuse(token, request, DLedgerResponseCode.NOT_LEADER)
            behind = self.ledger.end_index - self.pusher.water_mark(request.term,
                                                                   request.transferee_id)
            if behind >= self.config.maxLeadershipTransferWaitIndex:
                return self.refuse(token, request, DLedgerResponseCode.FALL_BEHIND_TOO_MUCH)
            self.elector.transfer_leadership(request, lambda resp: self.reply(token, resp))
        elif request.transferee_id == member.self_id:
            if request.transfer_id != member.leader_id:
                return self.refuse(token, request, DLedgerResponseCode.INCONSISTENT_LEADER)
            self._catching_up.append(
                (request, token, now + self.config.leadershipTransferWaitTimeout))
        else:
            self.reply(token, LeadershipTransferResponse(
                term=member.curr_term, code=DLedgerResponseCode.UNEXPECTED_ARGUMENT))
        return None

    def _take_leadership_when_caught_up(self, now):
        """The transferee's wait for the leader's end index, then ``handleTakeLeadership``."""
        still = []
        for request, token, deadline in self._catching_up:
            if request.take_leadership_ledger_index <= self.ledger.end_index:
                answer = self.elector.take_leadership(request, token)
                if answer is not None:
                    self.reply(token, answer)
            elif now > deadline:
                self.refuse(token, request, DLedgerResponseCode.TAKE_LEADERSHIP_FAILED)
            else:
                still.append((request, token, deadline))
        self._catching_up = still

    # ------------------------------------------------------------ preferred leader

    def _check_preferred_leader(self, now):
        """``checkPreferredLeader``: hand leadership to the live preferred peer least behind.

        Ours: a peer a transfer failed to is left alone for
        ``preferredLeaderRetryIntervalMs`` (DLedger #85).
        """
        member, config = self.member, self.config
        preferred = config.preferred_leaders
        if member.role is not Role.LEADER or not preferred or member.transferee is not None:
            return
        if member.self_id in preferred:
            return
        end = self.ledger.end_index
        best, best_behind = None, None
        for peer in preferred:
            if not member.is_peer(peer) or not member.peers_live.get(peer, False):
                continue
            if now < self._transfer_retry.get(peer, _NEVER):
                continue
            behind = end - self.pusher.water_mark(member.curr_term, peer)
            if best is None or behind < best_behind:
                best, best_behind = peer, behind
        if best is None or best_behind >= config.maxLeadershipTransferWaitIndex:
            return
        request = LeadershipTransferRequest(term=member.curr_term, transferee_id=best)

        def done(response):
            if response.code != DLedgerResponseCode.SUCCESS:
                self._transfer_retry[best] = self.now + config.preferredLeaderRetryIntervalMs

        self.elector.transfer_leadership(request, done)

    # ------------------------------------------------------------ the work after each input

    def _work(self, now):
        self.handler.work(now)
        if self._catching_up:
            self._take_leadership_when_caught_up(now)
        self.pusher.work(now)
