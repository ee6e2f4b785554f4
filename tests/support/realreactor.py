"""A fresh real reactor for one test scenario."""

__all__ = ["run_reactor", "poll_until"]


def run_reactor(scenario, timeout=10.0):
    """Run ``scenario(reactor)`` (may return a Deferred) on a fresh real reactor.

    Each call gets its own reactor, so tests stay independent; a scenario still
    running after ``timeout`` seconds fails the test instead of hanging it.
    """
    from twisted.internet.defer import maybeDeferred
    from twisted.internet.epollreactor import EPollReactor
    from twisted.python.failure import Failure

    reactor = EPollReactor()
    outcome = []

    def start():
        done = maybeDeferred(scenario, reactor)
        done.addBoth(outcome.append)
        done.addBoth(lambda _: reactor.stop())

    reactor.callWhenRunning(start)
    watchdog = reactor.callLater(timeout, reactor.stop)
    reactor.run(installSignalHandlers=False)
    if watchdog.active():
        watchdog.cancel()
    if not outcome:
        raise AssertionError("scenario did not finish within %s s" % timeout)
    if isinstance(outcome[0], Failure):
        outcome[0].raiseException()
    return outcome[0]


def poll_until(reactor, condition, timeout=10.0):
    """A Deferred firing once ``condition()`` is true (checked every 10 ms on ``reactor``);
    it fails after ``timeout`` seconds."""
    from twisted.internet import task

    deadline = reactor.seconds() + timeout

    def check():
        if condition():
            return None
        if reactor.seconds() > deadline:
            raise AssertionError("condition not met in %s s" % timeout)
        return task.deferLater(reactor, 0.01, check)

    return task.deferLater(reactor, 0, check)
