"""The event loop our services run on: Twisted's epoll reactor with a leaner event hand-off.

Twisted's :class:`~twisted.internet.epollreactor.EPollReactor` hands every ready descriptor
to ``_doReadOrWrite`` through ``log.callWithLogger``, which sets up the legacy logging
context (the connection's ``logPrefix`` as the ``system`` of ``twisted.python.log``
messages) and costs about nine Python calls an event, 40 % of the loop's calls for a read
answered at once (``benchmarks/eventloop.py``). :class:`LeanEPollReactor` calls
``_doReadOrWrite`` directly. Everything else is the epoll reactor's.

What differs: messages logged through the legacy ``twisted.python.log`` while an event is
handled carry the system ``-`` instead of the connection's prefix. ``twisted.logger``
events (all of rmqproto's) are unchanged. As before, an exception that escapes the
handling of one event is logged and the poll's other events are still handled.

``twistd`` plugins of rmqproto install it (:func:`install_default`) unless a reactor was
chosen already (``twistd -r epoll`` keeps Twisted's own).
"""

import sys

from twisted.logger import Logger

__all__ = ["LeanEPollReactor", "install", "install_default"]

log = Logger()

try:
    from twisted.internet.epollreactor import EPollReactor
except ImportError:  # no epoll on this platform
    EPollReactor = None

if EPollReactor is not None:
    class LeanEPollReactor(EPollReactor):
        """:class:`EPollReactor` handing events to ``_doReadOrWrite`` without the legacy
        logging context."""

        def doPoll(self, timeout):
            """Poll for events and handle each (the epoll reactor's, minus the context)."""
            if timeout is None:
                timeout = -1  # wait until something happens
            try:
                events = self._poller.poll(timeout, len(self._selectables))
            except InterruptedError:
                return
            selectables = self._selectables
            handle = self._doReadOrWrite
            for fd, event in events:
                selectable = selectables.get(fd)
                if selectable is not None:  # else removed by an earlier event of this poll
                    try:
                        handle(selectable, fd, event)
                    except BaseException:
                        log.failure("handling an event of {selectable!r}", selectable=selectable)

        doIteration = doPoll
else:
    LeanEPollReactor = None


def install():
    """Install :class:`LeanEPollReactor` as the global reactor; ImportError where this
    platform has no epoll."""
    if LeanEPollReactor is None:
        raise ImportError("the lean event loop needs epoll, which this platform lacks "
                          "(install_default leaves the reactor to Twisted there)")
    from twisted.internet.main import installReactor
    installReactor(LeanEPollReactor())


def install_default():
    """Install :class:`LeanEPollReactor` unless a reactor is installed already or this
    platform has no epoll (then the reactor ``twistd`` chooses runs); whether it did."""
    if LeanEPollReactor is None or "twisted.internet.reactor" in sys.modules:
        return False
    install()
    return True
