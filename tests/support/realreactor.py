"""A fresh real reactor for one test scenario."""

__all__ = ["run_reactor"]


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
