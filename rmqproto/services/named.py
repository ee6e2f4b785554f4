"""Log lines that name the service that wrote them, for processes that run several
(``twistd rmq-local``: a NameServer and two brokers, whose modules log through the same
module-level loggers).

Each service gets a :class:`NamedReactor`: its timers, thread results and connections'
events run under Twisted's log context ``system`` set to the service's name (our reactor,
:mod:`rmqproto.eventloop`, does not set it for I/O as Twisted's own do), as do its start
and stop when the parent uses :meth:`NamedReactor.call`. :func:`name_log_lines` then writes
that name before each line's usual system: ``[master rmqproto.broker.controller#info]``.
"""

import functools

from twisted.logger import globalLogPublisher
from twisted.python import context, log as legacy

__all__ = ["NamedReactor", "name_log_lines"]


class NamedReactor:
    """``reactor`` for the service called ``name``; everything else passes through."""

    def __init__(self, reactor, name):
        self._reactor = reactor
        self.name = name

    def __getattr__(self, attribute):
        return getattr(self._reactor, attribute)

    def call(self, function, *args, **kwargs):
        """``function(*args, **kwargs)`` in the service's log context."""
        return legacy.callWithContext({"system": self.name}, function, *args, **kwargs)

    def callLater(self, delay, function, *args, **kwargs):
        return self._reactor.callLater(delay, self.call, function, *args, **kwargs)

    def callFromThread(self, function, *args, **kwargs):
        return self._reactor.callFromThread(self.call, function, *args, **kwargs)

    def listenTCP(self, port, factory, *args, **kwargs):
        return self._reactor.listenTCP(port, _NamedFactory(factory, self), *args, **kwargs)

    def connectTCP(self, host, port, factory, *args, **kwargs):
        return self._reactor.connectTCP(host, port, _NamedFactory(factory, self), *args,
                                        **kwargs)


class _NamedFactory:
    """``factory`` whose protocols handle their events in the log context of ``reactor``."""

    _EVENTS = ("makeConnection", "dataReceived", "connectionLost")

    def __init__(self, factory, reactor):
        self._factory = factory
        self._reactor = reactor

    def __getattr__(self, attribute):
        return getattr(self._factory, attribute)

    def buildProtocol(self, addr):
        protocol = self._factory.buildProtocol(addr)
        for event in self._EVENTS if protocol is not None else ():
            setattr(protocol, event, functools.partial(self._reactor.call,
                                                       getattr(protocol, event)))
        return protocol


def name_log_lines(names, publisher=globalLogPublisher):
    """Prefix the system of each event logged in the context of one of ``names`` with that
    name. Add it before the observers that write the log (twistd adds its own once the
    service is built), as it changes the event they get."""
    names = frozenset(names)

    def observer(event):
        name = (context.get(legacy.ILogContext) or {}).get("system")
        if name in names and "log_system" not in event:
            event["log_system"] = "%s %s#%s" % (name, event.get("log_namespace", "-"),
                                                getattr(event.get("log_level"), "name", "-"))

    publisher.addObserver(observer)
    return observer
