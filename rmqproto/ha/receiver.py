"""An HA slave's receive loop in a thread of its own, on the reactor (``HAService.HAClient``).

While the master's transfers are the plain case (each at the slave's end, in the current
commit-log segment), the C loop ``HAReceiver`` (``rmqproto/codec/speedups/hareceiver.c``)
reads them, copies them into the mapped segment and reports to the master without the
interpreter, as Java's HAClient thread does. :class:`ReceiveThread` runs it and brings
its progress to the reactor: the loop wakes the reactor after a read once armed, and the
reactor then takes the progress every :data:`PROGRESS_INTERVAL` until a round finds
nothing new, so a busy slave dispatches many reads at once. A lone read after a quiet
spell is taken at once.
When the loop ends (stopped, the connection closed or failed, or bytes handed back), the
reactor is told once, with the loop's answer.
"""

import threading

from twisted.internet.interfaces import IReadDescriptor
from twisted.logger import Logger
from zope.interface import implementer

from rmqproto.codec.native import speedups

__all__ = ["ReceiveThread", "PROGRESS_INTERVAL", "available", "new_loop"]

log = Logger()

#: Seconds between the reactor's looks at a busy loop's progress. Java's reput thread
#: sleeps 1 ms between rounds; a round of ours (the reactor's wake-up and timers, the
#: hand-over, the reput slice's set-up) costs the interpreter far more than Java's, and on
#: a CPU shared with clients those rounds, not the records, were most of the slave's
#: dispatch at 1 ms (docs/performance.md, "The slave's look every 5 ms").
PROGRESS_INTERVAL = 0.005


def available():
    """Whether the C receive loop is built."""
    return speedups is not None


def new_loop(arguments):
    """The C receive loop ``HAReceiver(**arguments)``, not started."""
    return speedups.HAReceiver(**arguments)


@implementer(IReadDescriptor)
class ReceiveThread:
    """Runs ``loop``, a new ``HAReceiver`` (:func:`new_loop`); calls ``progress(end,
    read_bytes, reported, reports)`` on the reactor with what it did since the last call, and
    ``ended(outcome, leftover, error)`` once it returned on its own (not after :meth:`stop`)."""

    def __init__(self, reactor, loop, progress, ended):
        self._reactor = reactor
        self._native = loop
        self._progress = progress
        self._ended = ended
        self._thread = threading.Thread(target=self._run, name="HAReceive", daemon=True)
        self._poll_call = None
        self._seen = loop.progress()
        self._done = False

    @property
    def refusal(self):
        """After the loop ended 'bad record': ``(offset, why)`` of the refused record."""
        return self._native.refusal

    def start(self):
        self._native.arm()
        self._reactor.addReader(self)
        self._thread.start()

    def stop(self):
        """End the loop and wait for its thread; what it did so far is taken first."""
        if self._done:
            return
        self._native.stop()
        self._thread.join()
        self._finish()

    def _run(self):
        answer = self._native.run()
        self._reactor.callFromThread(self._returned, answer)

    def _returned(self, answer):
        if not self._done:
            self._finish()
            self._ended(*answer)

    def _finish(self):
        self._done = True
        self._reactor.removeReader(self)
        if self._poll_call is not None and self._poll_call.active():
            self._poll_call.cancel()
        self._poll_call = None
        self._take()
        self._native.close()

    # ------------------------------------------------------------ progress

    def _take(self):
        """Hand on the progress since the last look; whether there was any."""
        now = self._native.progress()
        seen, self._seen = self._seen, now
        if now == seen:
            return False
        self._progress(now[0], now[1] - seen[1], now[2], now[3] - seen[3])
        return True

    def _poll(self):
        self._poll_call = None
        if not self._take():
            self._native.arm()
            if not self._take():  # a read between the look and arming wakes no one
                return
        self._poll_call = self._reactor.callLater(PROGRESS_INTERVAL, self._poll)

    # ------------------------------------------------------------ IReadDescriptor (wake_fd)

    def fileno(self):
        return self._native.wake_fd

    def doRead(self):
        self._native.drain()
        if self._poll_call is None:
            self._poll()

    def connectionLost(self, reason):
        pass

    def logPrefix(self):
        return "HAReceive"
