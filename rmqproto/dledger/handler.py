"""The follower's side of replication: ``DLedgerEntryPusher.EntryHandler`` of DLedger 0.3.1.2.

APPEND pushes wait in a map by their first index and are written strictly in index order
(the next expected index is ``ledgerEndIndex + 1``); a second push for an index already
waiting is answered REPEATED_PUSH. COMMIT, COMPARE and TRUNCATE go through a queue of
1024 (PUSH_REQUEST_IS_FULL when full); a COMPARE or TRUNCATE clears the waiting appends.
Every second, waiting appends the log already holds are answered from it and the oldest
one waiting for more than a second on a gap is answered INCONSISTENT_STATE, which sends
the leader back to COMPARE (``checkAbnormalFuture``).

Ours (docs/dledger.md, "Where we differ"): the committed index a follower takes from the
leader is capped at the last index it knows matches the leader's log in this term (a
COMPARE that succeeded, a TRUNCATE, or an APPEND), never just at its own end, so it never
counts entries a later TRUNCATE removes (DLedger #316). Appends dropped by a COMPARE or
TRUNCATE, and those waiting when the member stops following, are answered instead of
being forgotten.
"""

from collections import deque

from rmqproto.codec.dledger_rpc import DLedgerResponseCode, PushEntryResponse, PushEntryType
from rmqproto.dledger.actions import Role
from rmqproto.dledger.log import LedgerError

__all__ = ["EntryHandler", "QUEUE_CAPACITY"]

#: ``compareOrTruncateRequests``: an ``ArrayBlockingQueue`` of 1024.
QUEUE_CAPACITY = 1024
#: ``TimeoutFuture<>(1000)`` of a waiting append, and the ``checkAbnormalFuture`` period.
APPEND_WAIT_MS = 1000


def _ends(request):
    if request.batch_entry:
        return request.batch_entry[0].index, request.batch_entry[-1].index, len(
            request.batch_entry)
    if request.entry is not None:
        return request.entry.index, request.entry.index, 1
    return -1, -1, 0


class EntryHandler:
    """Takes a follower's pushes in index order and answers them."""

    def __init__(self, node):
        self.node = node
        self.member = node.member
        self.ledger = node.ledger
        self.waiting = {}           # first index → (request, token, deadline)
        self.queue = deque()        # (request, token): COMMIT, COMPARE, TRUNCATE
        self.last_check_fast_forward = node.now
        self.match = (None, None, -1)   # (term, leader, last index known to match it)

    def response(self, request, code):
        """``buildResponse``."""
        first, _, count = _ends(request)
        commit = request.type is PushEntryType.COMMIT
        return PushEntryResponse(group=request.group, code=code, term=request.term,
                                 index=None if commit else first, count=0 if commit else count,
                                 begin_index=self.ledger.begin_index,
                                 end_index=self.ledger.end_index)

    def _answer(self, token, request, code):
        self.node.reply(token, self.response(request, code))

    def handle_push(self, request, token, now):
        """``handlePush``: file the push (or refuse it at once)."""
        if request.type is PushEntryType.APPEND:
            first, _, count = _ends(request)
            if count == 0:
                return self.node.refuse(token, request, DLedgerResponseCode.UNEXPECTED_ARGUMENT)
            if first in self.waiting:
                return self._answer(token, request, DLedgerResponseCode.REPEATED_PUSH)
            self.waiting[first] = (request, token, now + APPEND_WAIT_MS)
            return None
        if request.type is not PushEntryType.COMMIT:
            if request.entry is None:
                return self.node.refuse(token, request, DLedgerResponseCode.UNEXPECTED_ARGUMENT)
            self._drop_waiting(DLedgerResponseCode.INCONSISTENT_STATE)
        if len(self.queue) >= QUEUE_CAPACITY:
            return self._answer(token, request, DLedgerResponseCode.PUSH_REQUEST_IS_FULL)
        self.queue.append((request, token))
        return None

    def _drop_waiting(self, code):
        waiting, self.waiting = self.waiting, {}
        for request, token, _ in waiting.values():
            self._answer(token, request, code)

    def work(self, now):
        """``EntryHandler#doWork``, run until there is nothing more to do."""
        if self.member.role is not Role.FOLLOWER:
            while self.queue:
                request, token = self.queue.popleft()
                self._answer(token, request, DLedgerResponseCode.NOT_FOLLOWER)
            self._drop_waiting(DLedgerResponseCode.NOT_FOLLOWER)
            return
        while True:
            while self.queue:
                request, token = self.queue.popleft()
                kind = request.type
                if kind is PushEntryType.TRUNCATE:
                    code = self._truncate(request)
                elif kind is PushEntryType.COMPARE:
                    code = self._compare(request)
                else:
                    code = self._commit(request)
                self._answer(token, request, code)
            waiting = self.waiting.pop(self.ledger.end_index + 1, None)
            if waiting is None:
                self._check_abnormal(now)
                return
            request, token, _ = waiting
            self._answer(token, request, self._append(request))

    # ------------------------------------------------------------ the four kinds

    def _check_leader(self, request):
        """``appendAsFollower`` / ``truncate``'s member checks."""
        member = self.member
        if member.role is not Role.FOLLOWER:
            raise LedgerError(DLedgerResponseCode.NOT_FOLLOWER)
        if request.term != member.curr_term:
            raise LedgerError(DLedgerResponseCode.INCONSISTENT_TERM)
        if request.leader_id != member.leader_id:
            raise LedgerError(DLedgerResponseCode.INCONSISTENT_LEADER)

    def _matched(self, request, index):
        term, leader, known = self.match
        if (term, leader) != (request.term, request.leader_id):
            known = -1
        self.match = (request.term, request.leader_id, max(known, index))

    def _append(self, request):
        entries = request.batch_entry or [request.entry]
        try:
            self._check_leader(request)
            if entries[0].index != self.ledger.end_index + 1:
                raise LedgerError(DLedgerResponseCode.INCONSISTENT_STATE)
            for entry in entries:
                self.ledger.append_as_follower(entry)
        except LedgerError:
            return DLedgerResponseCode.INCONSISTENT_STATE
        self._matched(request, entries[-1].index)
        self.update_committed_index(request)
        return DLedgerResponseCode.SUCCESS

    def _compare(self, request):
        try:
            local = self.ledger.get(request.entry.index)
        except LedgerError:
            return DLedgerResponseCode.INCONSISTENT_STATE
        if local != request.entry:
            return DLedgerResponseCode.INCONSISTENT_STATE
        if (request.term, request.leader_id) == (self.member.curr_term, self.member.leader_id):
            self._matched(request, local.index)
        return DLedgerResponseCode.SUCCESS

    def _truncate(self, request):
        """``handleDoTruncate``, except that committed entries are never dropped: a
        TRUNCATE below the committed index (a COMPARE answered before late appends landed)
        keeps the log up to the committed index, which matches any leader's."""
        ledger = self.ledger
        entry = request.entry
        try:
            self._check_leader(request)
            if entry.index < ledger.committed_index:
                if ledger.get(entry.index) != entry:
                    raise LedgerError(DLedgerResponseCode.INCONSISTENT_STATE)
                entry = ledger.get(ledger.committed_index)
            ledger.truncate(entry)
        except LedgerError:
            return DLedgerResponseCode.INCONSISTENT_STATE
        if ledger.committed_index > ledger.end_index:
            ledger.committed_index = ledger.end_index
        self.match = (request.term, request.leader_id, entry.index)
        self.update_committed_index(request)
        return DLedgerResponseCode.SUCCESS

    def _commit(self, request):
        self.update_committed_index(request)
        return DLedgerResponseCode.SUCCESS

    def update_committed_index(self, request):
        """The follower's ``updateCommittedIndex``, capped at what is known to match: what
        this leader confirmed in this term, or a log ending with an entry of this term
        (only this term's leader made those, after its earlier entries)."""
        member, ledger = self.member, self.ledger
        if (request.term, request.leader_id) != (member.curr_term, member.leader_id):
            return
        term, leader, known = self.match
        if (term, leader) != (request.term, request.leader_id):
            known = -1
        if ledger.end_term == request.term:
            known = max(known, ledger.end_index)
        index = min(request.commit_index, known, ledger.end_index)
        if index > ledger.committed_index and index >= ledger.begin_index:
            ledger.committed_index = index

    # ------------------------------------------------------------ stuck appends

    def _check_abnormal(self, now):
        """``checkAbnormalFuture`` / ``checkAppendFuture``, once a second."""
        if now - self.last_check_fast_forward < APPEND_WAIT_MS or not self.waiting:
            return
        self.last_check_fast_forward = now
        end = self.ledger.end_index
        oldest = None
        for first in sorted(self.waiting):
            request, token, deadline = self.waiting[first]
            _, last, _ = _ends(request)
            if last <= end:         # the log has it already: the last answer was lost
                del self.waiting[first]
                self._answer(token, request, self._already_held(request))
                continue
            if first == end + 1:
                return
            if now >= deadline and oldest is None:
                oldest = first
        if oldest is not None:
            request, token, _ = self.waiting.pop(oldest)
            self._answer(token, request, DLedgerResponseCode.INCONSISTENT_STATE)

    def _already_held(self, request):
        try:
            for entry in request.batch_entry or [request.entry]:
                if self.ledger.get(entry.index) != entry:
                    return DLedgerResponseCode.INCONSISTENT_STATE
        except LedgerError:
            return DLedgerResponseCode.INCONSISTENT_STATE
        return DLedgerResponseCode.SUCCESS
