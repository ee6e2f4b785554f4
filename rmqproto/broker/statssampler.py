"""The timers behind the broker statistics (:mod:`rmqproto.broker.stats`).

Java's ``StatsItemSet#init`` samples every counter at once and then every 10 s, 10 min and
1 h; ``BrokerController`` records the store's put and get totals into ``BrokerStats`` at
each local midnight. Here the next midnight is computed again after each record (Java
repeats every 24 h, which drifts by an hour across a daylight-saving change).
"""

from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from rmqproto.broker.stats import SAMPLE_PERIODS, next_morning

__all__ = ["StatsSampler"]

log = Logger()


class StatsSampler:
    """Samples ``manager`` (a :class:`~rmqproto.broker.stats.BrokerStatsManager`) on
    ``reactor``'s clock and calls ``record_day()`` at each local midnight."""

    def __init__(self, reactor, manager, record_day):
        self.reactor = reactor
        self.manager = manager
        self.record_day = record_day
        self._loops = []
        self._midnight = None

    def now(self):
        return int(self.reactor.seconds() * 1000)

    def start(self):
        for window, period in enumerate(SAMPLE_PERIODS):
            loop = LoopingCall(lambda w=window: self.manager.sample(w, self.now()))
            loop.clock = self.reactor
            loop.start(period / 1000, now=True)
            self._loops.append(loop)
        self._schedule_midnight()

    def stop(self):
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self._loops = []
        if self._midnight is not None and self._midnight.active():
            self._midnight.cancel()
        self._midnight = None

    def _schedule_midnight(self):
        now = self.now()
        self._midnight = self.reactor.callLater((next_morning(now) - now) / 1000, self._at_midnight)

    def _at_midnight(self):
        try:
            self.record_day()
        except Exception:
            log.failure("schedule record error.")
        self._schedule_midnight()
