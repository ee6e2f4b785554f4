"""What stopped connections hold unsent, summed over a server (pure bookkeeping).

A connection whose unsent answers pass ``high_water_mark`` stops being read (where Netty's
``Channel#isWritable`` turns false, which Java only reports); it is charged with what it held
then and released once everything is sent. :class:`WriteBudget` sums the charges of the
connections sharing it; past ``total`` it is *over*, and until the sum falls back to half of
it every connection stops being read as soon as anything of its own waits to be sent. Each
change is O(1).
"""

__all__ = ["WriteBudget"]


class WriteBudget:
    """Unsent bytes charged by stopped connections, against ``total``."""

    __slots__ = ("high_water_mark", "total", "charged", "over")

    def __init__(self, high_water_mark, total):
        self.high_water_mark = high_water_mark
        self.total = total
        self.charged = 0
        self.over = False

    def charge(self, unsent):
        """A connection stopped holding ``unsent`` bytes."""
        self.charged += unsent
        if self.charged > self.total:
            self.over = True

    def release(self, unsent):
        """A stopped connection sent the ``unsent`` bytes it was charged with (or is gone)."""
        self.charged -= unsent
        if self.charged <= self.total // 2:
            self.over = False
