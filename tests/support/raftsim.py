"""A simulated network of :class:`~rmqproto.dledger.node.DLedgerNode`s on a fake clock.

Every request and answer goes through its JSON codec (what an adapter would send), with a
delay drawn from the network's seeded random generator, so messages can be reordered,
dropped, cut one way or both, or held back for a while; a sender whose request gets no
answer sees ``None`` after the RPC timeout (3 s, ``DLedgerRpcNettyService``). Nodes can
crash and restart with their log and ``currterm``. :class:`SafetyChecker` watches every
step: at most one leader per term, committed entries never change or go away, a member's
committed index never passes its end, and every acknowledged append is committed where it
was acknowledged.
"""

import heapq
import itertools
import random

from rmqproto.codec.dledger_rpc import DLedgerResponseCode
from rmqproto.dledger import DLedgerConfig, DLedgerNode, MemoryLedger, Role

RPC_TIMEOUT_MS = 3000
TICK_MS = 10


class SafetyViolation(AssertionError):
    """A Raft safety property does not hold."""


class SafetyChecker:
    """The properties every run must keep (see module doc)."""

    def __init__(self):
        self.leaders = {}           # term → leader id
        self.committed = {}         # index → (term, body)
        self.seen = {}              # member → highest committed index checked
        self.acked = {}             # index → body of an append answered SUCCESS

    def role_changed(self, member, term, role):
        if role is Role.LEADER:
            other = self.leaders.setdefault(term, member)
            if other != member:
                raise SafetyViolation("two leaders in term %d: %s and %s" % (term, other, member))

    def check(self, member, ledger):
        committed = ledger.committed_index
        if committed > ledger.end_index:
            raise SafetyViolation("%s: committed %d above end %d" % (
                member, committed, ledger.end_index))
        seen = self.seen.get(member, -1)
        if committed < seen:
            raise SafetyViolation("%s: committed index went back from %d to %d" % (
                member, seen, committed))
        for index in range(max(seen + 1, ledger.begin_index), committed + 1):
            entry = ledger.get(index)
            value = (entry.term, entry.body)
            known = self.committed.setdefault(index, value)
            if known != value:
                raise SafetyViolation("%s: committed entry %d is %r, elsewhere %r" % (
                    member, index, value, known))
        self.seen[member] = committed

    def restarted(self, member, ledger):
        """A restart may read an older checkpoint: its committed index starts over there."""
        self.seen[member] = min(self.seen.get(member, -1), ledger.committed_index)

    def append_acked(self, index, body):
        self.acked[index] = body

    def check_acked(self):
        """Every acknowledged append is the committed entry at its index."""
        for index, body in self.acked.items():
            if self.committed.get(index, (None, None))[1] != body:
                raise SafetyViolation("acked append %d (%r) is not committed there: %r" % (
                    index, body, self.committed.get(index)))


class Network:
    """Nodes ``ids`` of one group on a fake clock (milliseconds)."""

    def __init__(self, ids=("n0", "n1", "n2"), seed=0, delay=(1, 3), drop=0.0, ledgers=None,
                 term_states=None, **settings):
        self.rng = random.Random(seed)
        self.ids = list(ids)
        self.peers = ";".join("%s-127.0.0.1:%d" % (i, 20911 + k) for k, i in enumerate(ids))
        self.settings = settings
        self.delay = delay
        self.drop = drop
        self.now = 0
        self.events = []
        self.seq = itertools.count()
        self.nodes = {}
        self.ledgers = {i: (ledgers or {}).get(i) or MemoryLedger() for i in ids}
        self.term_states = {i: (term_states or {}).get(i) for i in ids}
        self.incarnation = dict.fromkeys(ids, 0)
        self.cut = set()                # (from, to) links that lose everything
        self.slow = {}                  # (from, to) → extra delay in ms
        self.lossy = {}                 # (from, to) → chance a message is lost
        self.blocked = None             # blocked(from, to, request) → True drops the request
        self.results = {}               # client token → AppendEntryResponse / other answers
        self.positions = {}
        self.proposals = {}             # client token → body (single appends)
        self.role_log = []              # (time, member, term, role)
        self.checker = SafetyChecker()
        self.client_ids = itertools.count()
        self._waiting = {}              # id(request) → request, until answered or timed out
        for member in ids:
            self.start(member)

    # ------------------------------------------------------------ membership

    def config(self, member):
        return DLedgerConfig(group="g", selfId=member, peers=self.peers, **self.settings)

    def start(self, member):
        self.incarnation[member] += 1
        self.checker.restarted(member, self.ledgers[member])
        node = DLedgerNode(self.config(member), self.ledgers[member], self.term_states[member],
                           random.Random(self.rng.random()), now=self.now)
        self.nodes[member] = node
        self._schedule(self.now + self.rng.randrange(TICK_MS), ("tick", member,
                                                                self.incarnation[member]))

    def crash(self, member):
        self.nodes.pop(member)
        self.incarnation[member] += 1

    def restart(self, member):
        self.start(member)

    # ------------------------------------------------------------ faults

    def partition(self, *groups):
        """Only members of the same group talk to each other."""
        side = {m: k for k, group in enumerate(groups) for m in group}
        self.cut = {(a, b) for a in self.ids for b in self.ids
                    if a != b and side.get(a) != side.get(b)}

    def isolate(self, member):
        self.partition([member], [m for m in self.ids if m != member])

    def cut_link(self, a, b):
        self.cut.add((a, b))

    def heal(self):
        self.cut = set()
        self.slow = {}
        self.lossy = {}

    # ------------------------------------------------------------ clients

    def propose(self, member, body):
        """Append ``body`` on ``member`` in-process; the answer lands in ``results[token]``."""
        token = ("client", next(self.client_ids))
        self.proposals[token] = body
        self.nodes[member].propose(token, body, self.now)
        self._pump(member)
        return token

    def request(self, member, request):
        """Send ``request`` to ``member`` as a client would; the answer lands in ``results``."""
        token = ("client", next(self.client_ids))
        self.nodes[member].receive(token, type(request).from_json(request.to_json()), self.now)
        self._pump(member)
        return token

    # ------------------------------------------------------------ running

    def leader(self):
        """The member every live member agrees is leader, or None."""
        leaders = {n.leader_id for n in self.nodes.values()}
        if len(leaders) == 1:
            leader = leaders.pop()
            if leader in self.nodes and self.nodes[leader].role is Role.LEADER:
                return leader
        return None

    def run(self, ms):
        self.run_until(lambda: False, ms)

    def run_until(self, condition, limit_ms):
        """Advance until ``condition()`` holds; returns False if ``limit_ms`` passes first."""
        end = self.now + limit_ms
        while not condition():
            if not self.events or self.events[0][0] > end:
                self.now = end
                return condition()
            when, _, event = heapq.heappop(self.events)
            self.now = max(self.now, when)
            self._handle(event)
        return True

    def _schedule(self, when, event):
        heapq.heappush(self.events, (when, next(self.seq), event))

    def _handle(self, event):
        kind = event[0]
        if kind == "tick":
            _, member, incarnation = event
            if self.incarnation[member] != incarnation:
                return
            self.nodes[member].tick(self.now)
            self._pump(member)
            self._schedule(self.now + TICK_MS, event)
        elif kind == "request":
            _, src, dst, incarnation, request, raw = event
            node = self.nodes.get(dst)
            if node is not None:
                decoded = type(request).from_json(raw)
                node.receive((src, incarnation, request), decoded, self.now)
                self._pump(dst)
        elif kind == "response":
            _, dst, incarnation, request, response = event
            if self.incarnation[dst] == incarnation and id(request) in self._waiting:
                del self._waiting[id(request)]
                self.nodes[dst].deliver(request, response, self.now)
                self._pump(dst)
        elif kind == "timeout":
            _, dst, incarnation, request = event
            if self.incarnation[dst] == incarnation and id(request) in self._waiting:
                del self._waiting[id(request)]
                self.nodes[dst].deliver(request, None, self.now)
                self._pump(dst)

    def _link_delay(self, src, dst):
        if (src, dst) in self.cut or self.rng.random() < self.lossy.get((src, dst), self.drop):
            return None
        return self.rng.uniform(*self.delay) + self.slow.get((src, dst), 0)

    def _pump(self, member):
        node = self.nodes.get(member)
        if node is None:
            return
        ready = node.ready()
        if ready.term_state is not None:
            self.term_states[member] = ready.term_state
        for term, role in ready.role_changes:
            self.role_log.append((self.now, member, term, role))
            self.checker.role_changed(member, term, role)
        incarnation = self.incarnation[member]
        for send in ready.messages:
            request = send.request
            self._waiting[id(request)] = request
            self._schedule(self.now + RPC_TIMEOUT_MS, ("timeout", member, incarnation, request))
            delay = self._link_delay(member, send.to)
            if self.blocked is not None and self.blocked(member, send.to, request):
                delay = None
            if delay is not None:
                self._schedule(self.now + delay, ("request", member, send.to, incarnation,
                                                  request, request.to_json()))
        for reply in ready.replies:
            self._answer(member, reply)
        self.checker.check(member, node.ledger)

    def _answer(self, member, reply):
        token = reply.token
        if token[0] == "client":
            self.results[token] = reply.response
            self.positions[token] = reply.positions
            body = self.proposals.get(token)
            if body is not None and reply.response.code == DLedgerResponseCode.SUCCESS:
                self.checker.append_acked(reply.response.index, body)
            return
        src, incarnation, request = token
        delay = self._link_delay(member, src)
        if delay is not None:
            response = type(reply.response).from_json(reply.response.to_json())
            self._schedule(self.now + delay, ("response", src, incarnation, request, response))

    # ------------------------------------------------------------ checks

    def logs_agree(self):
        """Every live member's log equals the leader's up to its committed index."""
        for member, node in self.nodes.items():
            ledger = node.ledger
            for index in range(max(ledger.begin_index, 0), ledger.committed_index + 1):
                entry = ledger.get(index)
                if self.checker.committed.get(index) != (entry.term, entry.body):
                    return False
        return True
