"""Flushing the commit log, consume queues and checkpoint to disk (Java ``FlushRealTimeService``, …).

* ASYNC_FLUSH (``FlushRealTimeService``): every ``flushIntervalCommitLog`` ms (and, with
  ``flushCommitLogTimed`` false, whenever a put wakes it) flush once
  ``flushCommitLogLeastPages`` pages are dirty; any dirty page once
  ``flushCommitLogThoroughInterval`` ms have passed since the last full flush. Java's
  timed service sleeps its interval whatever the puts do, so with the default
  (``flushCommitLogTimed`` true) a put does not wake ours.
* SYNC_FLUSH (``GroupCommitService``): a put waiting for its bytes (``WAIT`` true) queues a
  request for its end offset; one fsync covers every request queued before it started
  (group commit); requests not covered within ``syncFlushTimeout`` ms are answered
  FLUSH_DISK_TIMEOUT (the message stays stored).
* Consume queues (``FlushConsumeQueueService``): every ``flushIntervalConsumeQueue`` ms with
  ``flushConsumeQueueLeastPages``, fully every ``flushConsumeQueueThoroughInterval`` ms,
  followed then by the checkpoint.

The decisions are pure (:func:`least_pages_for`, :class:`GroupCommitRequests`); the
adapters run at most one fsync job at a time per file set, in a thread given by
``run_blocking(function) -> Deferred``, and apply the result on the reactor thread.
"""

import collections

from twisted.internet import defer, task, threads
from twisted.internet.interfaces import IReactorThreads
from twisted.logger import Logger

from rmqproto.store.mappedfile import run_flush_plan
from rmqproto.store.results import PutMessageStatus

__all__ = ["least_pages_for", "GroupCommitRequests", "blocking_runner", "CommitLogFlusher",
           "ConsumeQueueFlusher"]

log = Logger()


def least_pages_for(now, last_thorough, least_pages, thorough_interval):
    """``(least pages to require, new last-thorough time)``: 0 pages (flush anything dirty)
    once ``thorough_interval`` ms have passed since ``last_thorough``."""
    if now >= last_thorough + thorough_interval:
        return 0, now
    return least_pages, last_thorough


def blocking_runner(reactor):
    """How blocking calls run: the reactor's thread pool, or inline for a reactor without
    threads (``task.Clock`` in tests)."""
    if IReactorThreads.providedBy(reactor):
        return lambda f, *a: threads.deferToThreadPool(reactor, reactor.getThreadPool(), f, *a)
    return lambda f, *a: defer.maybeDeferred(f, *a)


class GroupCommitRequests:
    """Waiting SYNC_FLUSH puts, oldest first: ``(next_offset, deadline, token)``."""

    def __init__(self):
        self._requests = collections.deque()

    def __len__(self):
        return len(self._requests)

    def add(self, next_offset, deadline, token):
        self._requests.append((next_offset, deadline, token))

    def covered(self, flushed_where):
        """Remove and return the tokens whose bytes are all on disk."""
        done = [r for r in self._requests if r[0] <= flushed_where]
        if done:
            self._requests = collections.deque(r for r in self._requests if r[0] > flushed_where)
        return [token for _, _, token in done]

    def expired(self, now):
        """Remove and return the tokens whose deadline has passed."""
        done = [r for r in self._requests if r[1] <= now]
        if done:
            self._requests = collections.deque(r for r in self._requests if r[1] > now)
        return [token for _, _, token in done]

    def next_deadline(self):
        return min((r[1] for r in self._requests), default=None)


class CommitLogFlusher:
    """Flushes a :class:`~rmqproto.store.mappedfile.MappedFileQueue` per ``flushDiskType``.

    ``on_flushed(store_timestamp)`` is told the store time of the last message on disk
    (the checkpoint's ``physicMsgTimestamp``).
    """

    def __init__(self, queue, config, reactor, run_blocking, on_flushed):
        self.queue = queue
        self.reactor = reactor
        self.run_blocking = run_blocking
        self.on_flushed = on_flushed
        self.sync = config["flushDiskType"] == "SYNC_FLUSH"
        self.interval = config["flushIntervalCommitLog"]
        self.least_pages = config["flushCommitLogLeastPages"]
        self.thorough_interval = config["flushCommitLogThoroughInterval"]
        self.sync_timeout = config["syncFlushTimeout"]
        #: whether a put that does not wait for its flush should still wake the flusher
        self.woken_by_puts = self.sync or not config["flushCommitLogTimed"]
        self.requests = GroupCommitRequests()
        #: flushes done, and how long the last one took (seconds; for the metrics)
        self.flushes = 0
        self.last_flush_seconds = 0.0
        self._last_thorough = 0
        self._in_flight = None
        self._loop = None
        self._timer = None

    def _now(self):
        return int(self.reactor.seconds() * 1000)

    def start(self):
        self._last_thorough = self._now()
        if not self.sync:
            self._loop = task.LoopingCall(self.wakeup)
            self._loop.clock = self.reactor
            self._loop.start(self.interval / 1000.0, now=False)

    def stop(self):
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None

    def wakeup(self):
        """A put happened (or the period elapsed): flush if the rules say so."""
        if self.sync:
            self._flush(0)
        else:
            least, self._last_thorough = least_pages_for(
                self._now(), self._last_thorough, self.least_pages, self.thorough_interval)
            self._flush(least)

    def wait_for(self, next_offset):
        """SYNC_FLUSH: a Deferred firing PUT_OK once ``next_offset`` is on disk, or
        FLUSH_DISK_TIMEOUT after ``syncFlushTimeout`` ms."""
        if self.queue.flushed_where >= next_offset:
            return defer.succeed(PutMessageStatus.PUT_OK)
        d = defer.Deferred()
        self.requests.add(next_offset, self._now() + self.sync_timeout, d)
        self._arm_timer()
        self._flush(0)
        return d

    def _arm_timer(self):
        deadline = self.requests.next_deadline()
        if deadline is None or (self._timer is not None and self._timer.active()):
            return
        delay = max(deadline - self._now(), 0) / 1000.0
        self._timer = self.reactor.callLater(delay, self._expire)

    def _expire(self):
        self._timer = None
        for d in self.requests.expired(self._now()):
            d.callback(PutMessageStatus.FLUSH_DISK_TIMEOUT)
        self._arm_timer()

    def _flush(self, least_pages):
        if self._in_flight is not None:
            return self._in_flight
        plan = self.queue.flush_plan(least_pages)
        if not plan:
            self._answer()
            return None
        stamp = max((m.store_timestamp for m, _ in plan if hasattr(m, "store_timestamp")), default=0)
        started = self.reactor.seconds()
        d = self._in_flight = self.run_blocking(run_flush_plan, plan)

        def done(_):
            self.flushes += 1
            self.last_flush_seconds = self.reactor.seconds() - started
            self.queue.apply_flush(plan)
            if stamp:
                self.on_flushed(stamp)

        def failed(failure):
            self.queue.abort_flush(plan)
            log.failure("commit-log flush failed", failure)

        def finish(_):
            self._in_flight = None
            self._answer()
            if self.sync and len(self.requests):
                self._flush(0)

        d.addCallbacks(done, failed)
        d.addBoth(finish)
        return d

    def _answer(self):
        for waiter in self.requests.covered(self.queue.flushed_where):
            waiter.callback(PutMessageStatus.PUT_OK)

    def flush_all_blocking(self):
        """Shutdown: flush everything now, on this thread; answer every waiter."""
        plan = self.queue.flush_plan(0)
        if plan:
            stamp = max((m.store_timestamp for m, _ in plan if hasattr(m, "store_timestamp")),
                        default=0)
            run_flush_plan(plan)
            self.queue.apply_flush(plan)
            if stamp:
                self.on_flushed(stamp)
        self._answer()


class ConsumeQueueFlusher:
    """Flushes every consume queue periodically, then (on a thorough round) the checkpoint.

    ``queues()`` lists the :class:`~rmqproto.store.consumequeue.ConsumeQueue` objects;
    ``checkpoint`` is the :class:`~rmqproto.store.storecheckpoint.StoreCheckpoint`.
    """

    def __init__(self, queues, checkpoint, config, reactor, run_blocking):
        self.queues = queues
        self.checkpoint = checkpoint
        self.reactor = reactor
        self.run_blocking = run_blocking
        self.interval = config["flushIntervalConsumeQueue"]
        self.least_pages = config["flushConsumeQueueLeastPages"]
        self.thorough_interval = config["flushConsumeQueueThoroughInterval"]
        self._last_thorough = 0
        self._in_flight = None
        self._loop = None

    def start(self):
        self._last_thorough = int(self.reactor.seconds() * 1000)
        self._loop = task.LoopingCall(self.flush)
        self._loop.clock = self.reactor
        self._loop.start(self.interval / 1000.0, now=False)

    def stop(self):
        if self._loop is not None and self._loop.running:
            self._loop.stop()

    def flush(self):
        if self._in_flight is not None:
            return
        now = int(self.reactor.seconds() * 1000)
        least, self._last_thorough = least_pages_for(
            now, self._last_thorough, self.least_pages, self.thorough_interval)
        logics = self.checkpoint.logics_msg_timestamp
        plans = [(cq.queue, cq.queue.flush_plan(least)) for cq in self.queues()]
        plans = [(q, p) for q, p in plans if p]
        thorough = least == 0

        def run():
            for _, plan in plans:
                run_flush_plan(plan)
            if thorough:
                self.checkpoint.fsync()

        if thorough:
            self.checkpoint.logics_msg_timestamp = logics
            self.checkpoint.write()
        if not plans and not thorough:
            return
        d = self._in_flight = self.run_blocking(run)

        def done(_):
            for queue, plan in plans:
                queue.apply_flush(plan)

        def failed(failure):
            for queue, plan in plans:
                queue.abort_flush(plan)
            log.failure("consume-queue flush failed", failure)

        def finish(_):
            self._in_flight = None

        d.addCallbacks(done, failed)
        d.addBoth(finish)

    def flush_all_blocking(self):
        for cq in self.queues():
            plan = cq.queue.flush_plan(0)
            if plan:
                run_flush_plan(plan)
                cq.queue.apply_flush(plan)
