"""The leader's side of replication: ``DLedgerEntryPusher`` of DLedger 0.3.1.2.

* :class:`EntryDispatcher` — one per follower, the COMPARE → TRUNCATE → APPEND → COMMIT
  state machine with ``writeIndex``, the pending map and its re-push after
  ``maxPushTimeOutMs``, batch push and the push quota for a lagging follower;
* :class:`EntryPusher` — the peers' water marks of the current term, the pending appends
  waiting for a quorum (``waitAck``) and the quorum ack check (``QuorumAckChecker``).

Java's COMPARE and TRUNCATE wait up to 3 s for their answer; here the dispatcher keeps
the one request in flight and gives up at the same deadline. The rules and where they
differ from Java are in docs/dledger.md ("Replication").
"""

from rmqproto.codec.dledger_rpc import (AppendEntryResponse, DLedgerResponseCode,
                                        PushEntryRequest, PushEntryType)
from rmqproto.dledger.actions import Role
from rmqproto.dledger.log import LedgerError

__all__ = ["EntryPusher", "EntryDispatcher", "PushQuota"]

_NEVER = float("-inf")
#: ``EntryDispatcher.maxPendingSize``: un-acked pushes in flight per follower.
MAX_PENDING_PUSHES = 1000
#: How long a dispatcher waits for a COMPARE or TRUNCATE answer (``get(3, SECONDS)``).
SYNC_PUSH_TIMEOUT_MS = 3000
#: The pause after a dispatcher error (``DLedgerUtils.sleep(500)``).
ERROR_PAUSE_MS = 500
#: Idle COMMIT push and leak checks (``elapsed > 1000``).
IDLE_COMMIT_MS = 1000
LEAK_CHECK_MS = 1000


class PushQuota:
    """``Quota``: bytes pushed per wall-clock second; full at ``max`` bytes."""

    def __init__(self, maximum):
        self.maximum = maximum
        self.second = None
        self.used = 0

    def sample(self, size, now):
        second = now // 1000
        if second != self.second:
            self.second, self.used = second, 0
        self.used += size

    def exhausted(self, now):
        return self.second == now // 1000 and self.used >= self.maximum

    @staticmethod
    def left(now):
        """Milliseconds until the next second starts (``leftNow``)."""
        return (now // 1000 + 1) * 1000 - now


class _PendingAppend:
    __slots__ = ("token", "pos", "deadline", "positions", "done")

    def __init__(self, token, pos, deadline, positions):
        self.token, self.pos, self.deadline, self.positions = token, pos, deadline, positions
        self.done = False


class EntryPusher:
    """Water marks, pending appends and the quorum ack check of a leader."""

    def __init__(self, node):
        self.node = node
        self.member = node.member
        self.config = node.config
        self.ledger = node.ledger
        self.water_marks = {}       # term → {member id: highest index it holds}
        self.pending = {}           # term → {index: _PendingAppend}, in index order
        self.dispatchers = {peer: EntryDispatcher(self, peer)
                            for peer in self.member.peers if peer != self.member.self_id}

    # ------------------------------------------------------------ water marks

    def _marks(self, term):
        marks = self.water_marks.get(term)
        if marks is None:
            marks = self.water_marks[term] = dict.fromkeys(self.member.peers, -1)
        return marks

    def update_water_mark(self, term, peer, index):
        marks = self._marks(term)
        if marks[peer] < index:
            marks[peer] = index

    def water_mark(self, term, peer):
        return self._marks(term)[peer]

    # ------------------------------------------------------------ appends waiting for a quorum

    def is_pending_full(self, term):
        return len(self.pending.get(term, ())) > self.config.maxPendingRequestsNum

    def wait_ack(self, entry, token, now, positions=None):
        """``waitAck``: the append of ``entry`` is answered once a quorum holds it."""
        self.update_water_mark(entry.term, self.member.self_id, entry.index)
        self.pending.setdefault(entry.term, {})[entry.index] = _PendingAppend(
            token, entry.pos, now + self.config.maxWaitAckTimeMs, positions)

    def settle_all(self, code):
        """Answer every pending append with ``code`` (the member stopped leading)."""
        for pending in self.pending.values():
            for index, waiting in pending.items():
                if not waiting.done:
                    self._answer(waiting, index, code, -1)
        self.pending.clear()
        self.water_marks.clear()

    def _answer(self, waiting, index, code, term):
        member = self.member
        response = AppendEntryResponse(group=member.group, code=code, term=term, index=index,
                                       leader_id=member.leader_id,
                                       pos=waiting.pos if code == DLedgerResponseCode.SUCCESS
                                       else -1)
        waiting.done = True
        self.node.reply(waiting.token, response,
                        waiting.positions if code == DLedgerResponseCode.SUCCESS else None)

    def check_quorum(self, now):
        """``QuorumAckChecker#doWork``: advance the committed index, settle appends."""
        member = self.member
        term = member.curr_term
        for old in [t for t in self.pending if t != term]:
            for index, waiting in self.pending.pop(old).items():
                if not waiting.done:
                    self._answer(waiting, index, DLedgerResponseCode.TERM_CHANGED, -1)
        for old in [t for t in self.water_marks if t != term]:
            del self.water_marks[old]
        # Java refreshes its own mark from the log end once a second; it is always true.
        self.update_water_mark(term, member.self_id, self.ledger.end_index)
        marks = sorted(self._marks(term).values(), reverse=True)
        self.update_committed_index(term, marks[len(marks) // 2], marks[-1])
        committed = self.ledger.committed_index
        pending = self.pending.get(term)
        if not pending:
            return
        acked = 0
        while pending:
            index = next(iter(pending))         # appends wait in index order
            if index > committed:
                break
            waiting = pending.pop(index)
            if not waiting.done:
                self._answer(waiting, index, DLedgerResponseCode.SUCCESS, term)
                acked += 1
        if acked:
            return
        for index, waiting in pending.items():      # checkResponseFuturesTimeout
            if waiting.done:
                continue
            if now < waiting.deadline:
                break
            self._answer(waiting, index, DLedgerResponseCode.WAIT_QUORUM_ACK_TIMEOUT, term)

    def update_committed_index(self, term, quorum_index, everyone_index):
        """The leader's ``updateCommittedIndex``, with Raft's rule: an entry of an older term
        is not committed because a quorum holds it (Raft's Figure 8: a member holding a
        later-term entry could still be elected and overwrite it); it is committed once an
        entry of the current term is, or once every member holds it, when no member can
        be elected without it."""
        ledger = self.ledger
        if ledger.end_index == -1 or term < self.member.curr_term:
            return
        index = min(quorum_index, ledger.end_index)
        if index > ledger.committed_index and (index < ledger.begin_index
                                               or ledger.get(index).term != term):
            index = -1
        index = max(index, min(everyone_index, ledger.end_index))
        if index > ledger.committed_index and index >= ledger.begin_index:
            ledger.committed_index = index

    def work(self, now):
        if self.member.role is not Role.LEADER:
            return
        self.check_quorum(now)          # first, so that pushes carry the newest commit index
        for dispatcher in self.dispatchers.values():
            dispatcher.work(now)


class EntryDispatcher:
    """``EntryDispatcher``: replicates the leader's log to one follower."""

    def __init__(self, pusher, peer):
        self.pusher = pusher
        self.node = pusher.node
        self.member = pusher.member
        self.config = pusher.config
        self.ledger = pusher.ledger
        self.peer = peer
        self.type = PushEntryType.COMPARE
        self.term = -1
        self.leader_id = None
        self.compare_index = -1
        self.write_index = -1
        self.pending = {}               # first index of a push → (send time, entries)
        self.batch = []
        self.in_flight = None           # (request, deadline) of a COMPARE or TRUNCATE
        self.paused_until = _NEVER
        self.last_push_commit = _NEVER
        self.last_check_leak = _NEVER
        self.quota = PushQuota(self.config.peerPushQuota)

    # ------------------------------------------------------------ state

    def _fresh(self):
        """``checkAndFreshState``: a new term or leader restarts from COMPARE."""
        member = self.member
        if member.role is not Role.LEADER:
            return False
        if self.term != member.curr_term or self.leader_id != member.leader_id:
            self.term = member.curr_term
            self.leader_id = member.self_id
            self.in_flight = None
            self.change_state(-1, PushEntryType.COMPARE)
        return True

    def change_state(self, index, target):
        if target is PushEntryType.APPEND:
            self.compare_index = -1
            self.pusher.update_water_mark(self.term, self.peer, index)
            self.write_index = index + 1
            self.batch = []
        elif target is PushEntryType.COMPARE:
            if self.type is PushEntryType.APPEND:
                self.compare_index = -1
                self.pending.clear()
        elif target is PushEntryType.TRUNCATE:
            self.compare_index = -1
        self.type = target

    def _fail(self, now):
        """Java's ``catch`` in ``doWork``: back to COMPARE after a pause."""
        self.in_flight = None
        self.change_state(-1, PushEntryType.COMPARE)
        self.paused_until = now + ERROR_PAUSE_MS

    def _request(self, entry, kind, batch=None):
        return PushEntryRequest(group=self.member.group, remote_id=self.peer,
                                leader_id=self.leader_id, local_id=self.member.self_id,
                                term=self.term, entry=entry, type=kind, batch_entry=batch or [],
                                commit_index=self.ledger.committed_index)

    def _current(self, request):
        return self.member.role is Role.LEADER and request.term == self.term == \
            self.member.curr_term

    def work(self, now):
        """``doWork``: push what the follower needs next."""
        if not self._fresh() or now < self.paused_until:
            return
        try:
            if self.type is PushEntryType.APPEND:
                self._append(now)
            else:
                self._compare(now)
        except LedgerError:
            self._fail(now)

    # ------------------------------------------------------------ COMPARE / TRUNCATE

    def _compare(self, now):
        if self.in_flight is not None:
            if now >= self.in_flight[1]:
                self._fail(now)
            return
        ledger = self.ledger
        if self.compare_index == -1 and ledger.end_index == -1:
            return
        if (self.compare_index == -1 or self.compare_index > ledger.end_index
                or self.compare_index < ledger.begin_index):
            self.compare_index = ledger.end_index
        request = self._request(ledger.get(self.compare_index), PushEntryType.COMPARE)
        self._send_sync(request, now, self._on_compare)

    def _send_sync(self, request, now, handler):
        self.in_flight = (request, now + SYNC_PUSH_TIMEOUT_MS)
        self.node.send(self.peer, request, lambda resp: self._on_sync(request, resp, handler))

    def _on_sync(self, request, response, handler):
        if self.in_flight is None or self.in_flight[0] is not request:
            return          # timed out already, or from an older term
        self.in_flight = None
        now = self.node.now
        try:
            handler(response, now)
        except LedgerError:
            self._fail(now)

    def _on_compare(self, response, now):
        ok = (DLedgerResponseCode.SUCCESS, DLedgerResponseCode.INCONSISTENT_STATE)
        if response is None or response.code not in ok:
            return self._fail(now)
        ledger = self.ledger
        truncate_index = -1
        if response.code == DLedgerResponseCode.SUCCESS:
            if self.compare_index == response.end_index:
                self.change_state(self.compare_index, PushEntryType.APPEND)
                return self.work(now)
            truncate_index = self.compare_index
        elif (response.end_index < ledger.begin_index
              or response.begin_index > ledger.end_index):
            truncate_index = ledger.begin_index      # no overlap with the follower
        elif self.compare_index < response.begin_index:
            truncate_index = ledger.begin_index
        elif self.compare_index > response.end_index:
            self.compare_index = response.end_index
        else:
            self.compare_index -= 1
        if self.compare_index < ledger.begin_index:
            truncate_index = ledger.begin_index
        if truncate_index == -1:
            return self._compare(now)
        self.change_state(truncate_index, PushEntryType.TRUNCATE)
        request = self._request(ledger.get(truncate_index), PushEntryType.TRUNCATE)
        self._send_sync(request, now,
                        lambda resp, t: self._on_truncate(truncate_index, resp, t))

    def _on_truncate(self, truncate_index, response, now):
        if response is None or response.code != DLedgerResponseCode.SUCCESS:
            return self._fail(now)
        self.last_push_commit = now
        self.change_state(truncate_index, PushEntryType.APPEND)
        self.work(now)

    # ------------------------------------------------------------ APPEND

    def _append(self, now):
        """``doAppend`` / ``doBatchAppend``: push from ``writeIndex`` to the leader's end."""
        ledger, batched = self.ledger, self.config.isEnableBatchPush
        while self.type is PushEntryType.APPEND:
            if self.write_index > ledger.end_index:
                if self.batch:
                    self._send(self.batch, now)
                self._commit(now)
                self._repush_overdue(now)
                return
            if len(self.pending) >= MAX_PENDING_PUSHES or \
                    now - self.last_check_leak > LEAK_CHECK_MS:
                mark = self.pusher.water_mark(self.term, self.peer)
                for first in [f for f, (_, count) in self.pending.items()
                              if f + count - 1 <= mark]:
                    del self.pending[first]
                self.last_check_leak = now
            if len(self.pending) >= MAX_PENDING_PUSHES:
                self._repush_overdue(now)
                return
            entry = self._entry_for_append(self.write_index)
            if entry is None:
                return
            self.write_index += 1
            if not batched:
                self._send([entry], now)
                if self._throttled(entry, now):
                    return
                continue
            self.batch.append(entry)
            if sum(e.size for e in self.batch) >= self.config.maxBatchPushSize:
                self._send(self.batch, now)

    def _entry_for_append(self, index):
        try:
            return self.ledger.get(index)
        except LedgerError as exc:
            if exc.code is DLedgerResponseCode.INDEX_LESS_THAN_LOCAL_BEGIN:
                self.change_state(-1, PushEntryType.COMPARE)
                return None
            raise

    def _throttled(self, entry, now):
        """``checkQuotaAndWait``: a follower far behind gets ``peerPushQuota`` bytes a second."""
        ledger = self.ledger
        if ledger.end_index - entry.index <= MAX_PENDING_PUSHES:
            return False
        if ledger.end_pos - entry.pos < self.config.peerPushThrottlePoint:
            return False
        self.quota.sample(entry.size, now)
        if self.quota.exhausted(now):
            self.paused_until = now + PushQuota.left(now)
            return True
        return False

    def _send(self, entries, now):
        """One APPEND push: a single ``entry``, or a ``batchEntry`` list in batch mode."""
        if self.config.isEnableBatchPush:
            request = self._request(None, PushEntryType.APPEND, list(entries))
            if entries is self.batch:
                self.batch = []     # a re-push leaves the batch being filled alone
        else:
            request = self._request(entries[0], PushEntryType.APPEND)
        self.pending[entries[0].index] = (now, len(entries))
        self.last_push_commit = now
        self.node.send(self.peer, request, lambda resp: self._on_append(request, resp))

    def _on_append(self, request, response):
        """An APPEND's answer: SUCCESS raises the water mark to the last entry it covered."""
        if response is None or not self._current(request):
            return
        code = response.code
        if code == DLedgerResponseCode.SUCCESS:
            self.pending.pop(response.index, None)
            last = response.index + max(response.count, 1) - 1
            if response.term == self.term:
                self.pusher.update_water_mark(self.term, self.peer, last)
        elif code == DLedgerResponseCode.INCONSISTENT_STATE:
            self.change_state(-1, PushEntryType.COMPARE)

    def _repush_overdue(self, now):
        """``doCheckAppendResponse``: push again what follows the water mark if overdue."""
        first = self.pusher.water_mark(self.term, self.peer) + 1
        sent = self.pending.get(first)
        if sent is not None and now - sent[0] > self.config.maxPushTimeOutMs:
            entries = [self._entry_for_append(i) for i in range(first, first + sent[1])]
            if None not in entries:
                self._send(entries, now)

    def _commit(self, now):
        """``doCommit``: an idle follower hears the committed index once a second."""
        if now - self.last_push_commit > IDLE_COMMIT_MS:
            self.node.send(self.peer, self._request(None, PushEntryType.COMMIT), None)
            self.last_push_commit = now
