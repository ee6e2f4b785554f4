"""One DLedger member on Twisted: the Raft core, its file store and its RPC (``DLedgerServer``).

:class:`DLedgerServer` only moves bytes and time for :class:`~rmqproto.dledger.node.DLedgerNode`:

* requests from peers and clients arrive through :attr:`dispatcher` (the remoting layer,
  ``DLedgerRpcNettyService``): the body is decoded, handed to the node, and answered when
  the node's :class:`~rmqproto.dledger.actions.Ready` carries the reply (remoting code 200,
  the DLedger status inside the body);
* what the node sends goes to the peer's address from ``peers`` with a 3 s timeout; a
  failure or a timeout is delivered to the node as no answer (Java's NETWORK_ERROR);
* the requests and answers of one turn of the reactor (everything its poll returned) are
  handed to the node together right after that turn, and what the node sends and answers
  then leaves in one write a connection: the appends of many clients go to a follower in
  one send, its answers come back in one (docs/dledger.md, "Batching per turn"); the
  broker's in-process appends of a turn are written at once and pushed together the same
  way;
* the node ticks at its :meth:`~rmqproto.dledger.node.DLedgerNode.next_deadline`;
  ``currterm`` is written and synced before anything of the same round leaves (:meth:`_act`);
* the store is flushed every ``flushFileInterval`` ms in a thread and its ``checkpoint``
  written every ``checkPointInterval`` ms (``DLedgerMmapFileStore.FlushDataService``);
* every second the disk is looked at: appends are refused above the full ratio, and
  expired segments deleted at ``deleteWhen`` or when the disk fills (``CleanSpaceService``).

:meth:`DLedgerServer.append` is the in-process append the broker uses.
"""

import os

from twisted.internet import defer, task, threads
from twisted.logger import Logger

from rmqproto.codec.dledger_rpc import (
    RPC_TYPES, BatchAppendEntryRequest, DLedgerRequestCode, DLedgerResponseCode,
)
from rmqproto.codec.frame import RemotingCommand
from rmqproto.dledger.actions import Role, TermState
from rmqproto.dledger.node import DLedgerNode
from rmqproto.dledger.store import DLedgerStore, StoreSettings, TermFile
from rmqproto.errors import CodecError
from rmqproto.remoting import RemotingClient, RequestDispatcher
from rmqproto.remoting.protocol import gathered_writes
from rmqproto.store.mappedfile import run_flush_plan
from rmqproto.store.retention import disk_partition_used_ratio, is_time_to_delete

__all__ = ["DLedgerServer", "RPC_TIMEOUT", "open_store"]

log = Logger()

#: ``DLedgerRpcNettyService``: every call times out after 3 s.
RPC_TIMEOUT = 3.0
#: Seconds between two looks at the disk (Java's ``CleanSpaceService`` looks every 100 ms).
CLEAN_SPACE_INTERVAL = 1.0
_CODE_OF = {request: code for code, (request, _) in RPC_TYPES.items()}
_CODE_OF[BatchAppendEntryRequest] = DLedgerRequestCode.APPEND
_RESPONSE_OF = {request: response for request, response in RPC_TYPES.values()}
_RESPONSE_OF[BatchAppendEntryRequest] = RPC_TYPES[DLedgerRequestCode.APPEND][1]
#: the remoting code of every DLedger answer: the real status is in the body
_REMOTING_SUCCESS = 200


def open_store(config):
    """The member's :class:`DLedgerStore`, loaded and recovered."""
    return DLedgerStore(StoreSettings(
        config.storeBaseDir, config.selfId, config.dataStorePath,
        config.mappedFileSizeForEntryData, config.mappedFileSizeForEntryIndex)).open()


class DLedgerServer:
    """A DLedger member: :attr:`node` (the core), :attr:`store`, :attr:`dispatcher` (serve it
    with a ``RemotingFactory``) and :attr:`client` (its calls to peers)."""

    def __init__(self, config, reactor, store=None, rng=None):
        self.config = config
        self.reactor = reactor
        self.store = store if store is not None else open_store(config)
        self.terms = TermFile(os.path.join(self.store.paths["default"], "currterm"))
        term_state = (TermState(*self.terms.load())
                      if os.path.exists(self.terms.path) else None)
        self.node = DLedgerNode(config, self.store, term_state, rng, now=self.now())
        self.dispatcher = RequestDispatcher()
        for code in RPC_TYPES:
            self.dispatcher.register(int(code), self._serve)
        self.client = RemotingClient(reactor)
        #: ``listener(term, role)`` for every role change (the broker's role handler)
        self.role_listeners = []
        #: ``observer(ms)`` with the time each append took to be settled (the metrics); the
        #: appends are timed only while there is one
        self.append_observers = []
        self._append_started = {}  # token → ms the append came in
        #: ``listener(committed_index)`` whenever the committed index moved (the broker's
        #: dispatch of committed entries)
        self.commit_listeners = []
        self._committed_index = self.store.committed_index
        self._answers = {}       # token → Deferred of the answer
        self._timer = None       # the next tick: (deadline in ms, IDelayedCall)
        self._inbox = []         # this turn's requests: (token, request)
        self._delivered = []     # this turn's answers: (request, response or None)
        self._appended = False   # this turn appended in-process: the node has work to do
        self._turn_end = None    # the IDelayedCall handing them to the node
        self._stopped = False
        self._running = False
        self._flusher = task.LoopingCall(self.flush)
        self._flusher.clock = reactor
        self._flushing = False
        self._last_checkpoint = self.now()
        self._cleaner = task.LoopingCall(self.clean_space)
        self._cleaner.clock = reactor

    def now(self):
        return int(self.reactor.seconds() * 1000)

    @property
    def address(self):
        """This member's ``host:port`` from ``peers``."""
        return self.config.peer_map[self.config.selfId]

    # ------------------------------------------------------------ life cycle

    def start(self):
        self._running = True
        self.tick()
        self._flusher.start(self.config.flushFileInterval / 1000, now=False)
        self._cleaner.start(CLEAN_SPACE_INTERVAL, now=True)

    def stop(self):
        """Stop the timers, close the peers' connections, flush and close the store."""
        self._running = False
        self._stopped = True
        if self._timer is not None and self._timer[1].active():
            self._timer[1].cancel()
        self._timer = None
        if self._turn_end is not None and self._turn_end.active():
            self._turn_end.cancel()
        self._turn_end = None
        self._inbox, self._delivered = [], []
        self._appended = False
        for loop in (self._flusher, self._cleaner):
            if loop.running:
                loop.stop()
        for answer in list(self._answers.values()):
            if not answer.called:
                answer.errback(RuntimeError("the DLedger server stopped"))
        self._answers.clear()
        self._append_started.clear()
        closed = self.client.close()
        self.store.close()
        return closed

    # ------------------------------------------------------------ the core's inputs

    def tick(self):
        self._timer = None
        self.node.tick(self.now())
        self._act()

    def append(self, bodies):
        """Append in-process (one ``bytes``, or a list as one batch); a Deferred firing with
        ``(AppendEntryResponse, positions)`` once the append is settled (its ``code`` says
        how: SUCCESS once a quorum has it, NOT_LEADER, LEADER_PENDING_FULL, …), at the end
        of this turn at the earliest. The entries are written before it returns (the
        store's append hooks have seen them); the pushes of all of a turn's appends leave
        together at its end."""
        token = object()
        answer = self._answers[token] = defer.Deferred()
        if self.append_observers:
            self._append_started[token] = self.now()
        self.node.propose(token, bodies, self.now(), push=False)
        self._appended = True
        self._end_of_turn()
        return answer

    def _serve(self, request, context):
        request_class, response_class = RPC_TYPES[DLedgerRequestCode(request.code)]
        try:
            message = request_class.from_json(request.body or b"{}")
        except (CodecError, ValueError) as exc:
            log.warn("DLedger request {code} from {peer} does not decode: {error}",
                     code=request.code, peer=context.peer, error=exc)
            return self._frame(request, response_class(
                code=int(DLedgerResponseCode.UNEXPECTED_ARGUMENT)))
        token = object()
        answer = self._answers[token] = defer.Deferred()
        if self.append_observers and request.code == DLedgerRequestCode.APPEND:
            self._append_started[token] = self.now()
        self._inbox.append((token, message))
        self._end_of_turn()
        return answer.addCallback(lambda result: self._frame(request, result[0]))

    def _end_of_turn(self):
        """Hand this turn's requests and answers to the node once the turn's events are in."""
        if self._turn_end is None and not self._stopped:
            self._turn_end = self.reactor.callLater(0, self._take_turn)

    def _take_turn(self):
        self._turn_end = None
        delivered, self._delivered = self._delivered, []
        inbox, self._inbox = self._inbox, []
        appended, self._appended = self._appended, False
        now = self.now()
        with gathered_writes():
            if delivered:
                self.node.deliver_all(delivered, now)
            if inbox:
                self.node.receive_all(inbox, now)
            elif appended and not delivered:
                self.node.work(now)
            self._act()

    @staticmethod
    def _frame(request, response):
        return request.response(_REMOTING_SUCCESS, body=response.to_json())

    def _call(self, send):
        address = self.config.peer_map.get(send.to)
        command = RemotingCommand(int(_CODE_OF[type(send.request)]), body=send.request.to_json())
        response_class = _RESPONSE_OF[type(send.request)]

        def answered(response):
            try:
                message = response_class.from_json(response.body or b"{}")
            except (CodecError, ValueError) as exc:
                log.warn("DLedger answer from {peer} does not decode: {error}", peer=send.to,
                         error=exc)
                message = None
            delivered(message)

        def delivered(message):
            self._delivered.append((send.request, message))
            self._end_of_turn()

        self.client.invoke(address, command, RPC_TIMEOUT).addCallbacks(
            answered, lambda failure: delivered(None))

    # ------------------------------------------------------------ the core's outputs

    def _act(self):
        """Carry out what the node asks for, in the order ``Ready`` says."""
        ready = self.node.ready()
        if ready:
            self._carry_out(ready)
        committed = self.store.committed_index
        if committed != self._committed_index:
            self._committed_index = committed
            for listener in self.commit_listeners:
                listener(committed)
        if self._running:
            self._schedule()

    def _time_appends(self, replies):
        now = self.now()
        for reply in replies:
            started = self._append_started.pop(reply.token, None)
            if started is not None and reply.response.code == DLedgerResponseCode.SUCCESS:
                for observer in self.append_observers:
                    observer(now - started)

    def _carry_out(self, ready):
        if ready.term_state is not None:
            self.terms.save(ready.term_state.curr_term, ready.term_state.vote_leader)
        for send in ready.messages:
            self._call(send)
        if self._append_started:
            self._time_appends(ready.replies)
        for reply in ready.replies:
            answer = self._answers.pop(reply.token, None)
            if answer is not None:
                answer.callback((reply.response, reply.positions))
        for term, role in ready.role_changes:
            log.info("[{self_id}] {role} in term {term}", self_id=self.config.selfId,
                     role=role.name, term=term)
            for listener in self.role_listeners:
                listener(term, role)

    def _schedule(self):
        """Make sure the node ticks by its next deadline."""
        deadline = self.node.next_deadline()
        if self._timer is not None:
            if self._timer[0] <= deadline and self._timer[1].active():
                return
            if self._timer[1].active():
                self._timer[1].cancel()
        delay = max(deadline - self.now(), 0) / 1000
        self._timer = (deadline, self.reactor.callLater(delay, self.tick))

    # ------------------------------------------------------------ flushing

    def flush(self):
        """Flush what was written in a thread; write the checkpoint when it is due."""
        if self._flushing:
            return None
        plans = self.store.flush_plan()
        now = self.now()
        checkpoint = now - self._last_checkpoint >= self.config.checkPointInterval
        if not plans[0] and not plans[1] and not checkpoint:
            return None
        self._flushing = True

        def flushed(_):
            self.store.apply_flush(plans)
            if checkpoint:
                self._last_checkpoint = now
                self.store.persist_checkpoint()

        def failed(failure):
            self.store.abort_flush(plans)
            log.error("DLedger flush failed: {error}", error=failure.getErrorMessage())

        def done(_):
            self._flushing = False

        work = threads.deferToThreadPool(self.reactor, self.reactor.getThreadPool(),
                                         lambda: [run_flush_plan(p) for p in plans])
        return work.addCallbacks(flushed, failed).addBoth(done)

    # ------------------------------------------------------------ retention

    def clean_space(self, used_ratio=disk_partition_used_ratio):
        """``CleanSpaceService#doWork``; the number of data segments deleted."""
        config, store = self.config, self.store
        ratio = max(used_ratio(config.storeBaseDir), used_ratio(store.paths["data"]))
        full = ratio > config.disk_full_ratio
        if full != store.disk_full:
            log.warn("DLedger disk used ratio {ratio}: appends {state}", ratio=ratio,
                     state="refused (DISK_FULL)" if full else "taken again")
        store.disk_full = full
        now = self.now()
        if not (is_time_to_delete(config.deleteWhen, now)
                or ratio > config.diskSpaceRatioToCheckExpired):
            return 0
        force = config.enableDiskForceClean and ratio > config.diskSpaceRatioToForceClean
        reserved_ms = max(config.fileReservedHours, 1) * 3600 * 1000
        count = store.delete_expired_files(now, reserved_ms, force)
        if count:
            log.info("DLedger retention deleted {count} data segments; the log now begins at "
                     "{begin}", count=count, begin=store.begin_index)
        return count

    @property
    def is_leader(self):
        return self.node.role is Role.LEADER
