"""Long polling: Java's ``PullRequestHoldService``.

A pull that finds nothing (PULL_NOT_FOUND) with the SUSPEND flag is parked here for its
``suspendTimeoutMillis`` (``shortPollingTimeMills`` when ``longPollingEnable`` is false).
It is answered — by running the pull again, now without suspension — as soon as a
message for its queue arrives past its offset and matches its filter, or when its time
is up. The store hands :meth:`PullRequestHoldService.notify_dispatched` each dispatched
batch, which calls :meth:`~PullRequestHoldService.notify_message_arriving` for each of its
messages while any pull is parked; a check every 5 s (or ``shortPollingTimeMills``) catches
any it missed.

:class:`PullRequestTable` is the pure part (time passed in); the service adds timers and
answers each parked request's ``Deferred``. Nothing here ever blocks the reactor.
"""

from twisted.internet.defer import Deferred, maybeDeferred
from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from rmqproto.store.dispatch import arrivals

__all__ = ["CHECK_INTERVAL_LONG_POLLING", "PullRequest", "PullRequestTable", "PullRequestHoldService"]

log = Logger()

#: ms between two checks of every parked queue when long polling is enabled.
CHECK_INTERVAL_LONG_POLLING = 5000


class PullRequest:
    """A parked pull: the request, its connection, when it was parked and for how long (ms),
    the offset it waits beyond and its tags filter (``filter(tags_code) -> bool``).

    ``deferred`` fires with the eventual response; ``timer`` is its expiry call, if any.
    """

    __slots__ = ("request", "connection", "timeout_millis", "suspend_timestamp",
                 "pull_from_this_offset", "message_filter", "deferred", "timer")

    def __init__(self, request, connection, timeout_millis, suspend_timestamp,
                 pull_from_this_offset, message_filter=None):
        self.request = request
        self.connection = connection
        self.timeout_millis = timeout_millis
        self.suspend_timestamp = suspend_timestamp
        self.pull_from_this_offset = pull_from_this_offset
        self.message_filter = message_filter
        self.deferred = Deferred()
        self.timer = None

    @property
    def deadline(self):
        return self.suspend_timestamp + self.timeout_millis

    def matches(self, tags_code):
        """Java's ``isMatchedByConsumeQueue``: an unknown tags code always matches."""
        return tags_code is None or self.message_filter is None or self.message_filter(tags_code)


class PullRequestTable:
    """``(topic, queueId) → [PullRequest]``: which parked pulls are due."""

    def __init__(self):
        self.table = {}

    def __len__(self):
        return sum(map(len, self.table.values()))

    def keys(self):
        return list(self.table)

    def suspend(self, topic, queue_id, pull_request):
        self.table.setdefault((topic, queue_id), []).append(pull_request)

    def remove(self, topic, queue_id, pull_request):
        """Take one request out (its timer fired); whether it was still parked."""
        requests = self.table.get((topic, queue_id))
        if not requests or pull_request not in requests:
            return False
        requests.remove(pull_request)
        if not requests:
            del self.table[(topic, queue_id)]
        return True

    def arriving(self, topic, queue_id, max_offset, now, newest_offset=None, tags_code=None):
        """The requests to answer now that the queue's max offset is ``max_offset``.

        A request is due when the queue holds a message past its offset that its filter
        accepts, or when its time is up. ``newest_offset()`` re-reads the queue's max
        offset when ``max_offset`` is not past a request's offset (as Java does).
        """
        requests = self.table.pop((topic, queue_id), None)
        if not requests:
            return []
        due, kept = [], []
        for request in requests:
            newest = max_offset
            if newest <= request.pull_from_this_offset and newest_offset is not None:
                newest = newest_offset()
            if newest > request.pull_from_this_offset and request.matches(tags_code):
                due.append(request)
            elif now >= request.deadline:
                due.append(request)
            else:
                kept.append(request)
        if kept:
            self.table[(topic, queue_id)] = kept
        return due


class PullRequestHoldService:
    """Parks pulls and answers them; ``wakeup(pull_request)`` re-runs a pull without
    suspension and returns its response (or a Deferred of it).

    ``store`` gives ``get_max_offset_in_queue``; ``reactor`` the time and the timers.
    """

    def __init__(self, reactor, store, wakeup, check_interval=CHECK_INTERVAL_LONG_POLLING):
        self.reactor = reactor
        self.store = store
        self.wakeup = wakeup
        self.check_interval = check_interval
        self.pull_requests = PullRequestTable()
        self._check = None

    def now(self):
        return int(self.reactor.seconds() * 1000)

    def suspend_pull_request(self, topic, queue_id, pull_request):
        """Park ``pull_request``; its ``deferred`` fires with the response later."""
        self.pull_requests.suspend(topic, queue_id, pull_request)
        delay = max(0, pull_request.deadline - self.now()) / 1000
        pull_request.timer = self.reactor.callLater(delay, self._expired, topic, queue_id,
                                                    pull_request)
        return pull_request.deferred

    def notify_dispatched(self, requests):
        """The store's dispatch listener: wake the pulls parked on the queues of ``requests``
        (tuples in ``DispatchRequest`` order)."""
        if not self.pull_requests.table:
            return  # nothing parked anywhere: the usual case on the put path
        for topic, queue_id, max_offset, tags_code, _, _ in arrivals(requests):
            self.notify_message_arriving(topic, queue_id, max_offset, tags_code)

    def notify_message_arriving(self, topic, queue_id, max_offset, tags_code=None):
        """A message was stored in ``topic``/``queue_id``; ``max_offset`` is the queue's
        offset after it (its consume-queue offset + 1), ``tags_code`` its tags code."""
        if (topic, queue_id) not in self.pull_requests.table:
            return  # nothing parked there: the usual case on the put path
        due = self.pull_requests.arriving(
            topic, queue_id, max_offset, self.now(),
            lambda: self.store.get_max_offset_in_queue(topic, queue_id), tags_code)
        for pull_request in due:
            self._answer(pull_request)

    def check_hold_request(self):
        """Look at every queue with parked pulls (messages the put path did not announce)."""
        for topic, queue_id in self.pull_requests.keys():
            try:
                self.notify_message_arriving(
                    topic, queue_id, self.store.get_max_offset_in_queue(topic, queue_id))
            except Exception:
                log.failure("check hold request failed. topic={topic}, queueId={queue_id}",
                            topic=topic, queue_id=queue_id)

    def _expired(self, topic, queue_id, pull_request):
        pull_request.timer = None
        if self.pull_requests.remove(topic, queue_id, pull_request):
            self._answer(pull_request)

    def _answer(self, pull_request):
        if pull_request.timer is not None and pull_request.timer.active():
            pull_request.timer.cancel()
        pull_request.timer = None
        maybeDeferred(self.wakeup, pull_request).chainDeferred(pull_request.deferred)

    def start(self):
        self._check = LoopingCall(self.check_hold_request)
        self._check.clock = self.reactor
        self._check.start(self.check_interval / 1000, now=False)

    def stop(self):
        """Stop checking and answer every parked pull now (Java drops them at shutdown;
        answering lets clients pull again elsewhere at once)."""
        if self._check is not None and self._check.running:
            self._check.stop()
        self._check = None
        for topic, queue_id in self.pull_requests.keys():
            for pull_request in self.pull_requests.table.pop((topic, queue_id), []):
                self._answer(pull_request)
