"""What stopped connections hold unsent, summed over a process (pure bookkeeping).

A connection whose unsent answers pass its high water mark stops being read (Netty's
``Channel#isWritable`` turning false, which Java only reports); it is charged with what it held
then and released once everything is sent. :class:`WriteBudget` sums the charges of all
connections sharing it; past its ``total`` it is *over*, and the connections stop being read as
soon as anything of theirs waits to be sent (their limit drops to 0) until the sum falls back
to half of it. Each change is O(1); only entering or leaving *over* touches every connection.
"""

__all__ = ["WriteBudget"]


class WriteBudget:
    """Unsent bytes charged by stopped connections, against ``total``.

    :meth:`charge` and :meth:`release` return True when the budget entered or left the
    *over* state, so the caller applies :meth:`limit` to its connections; ``factories`` lists
    the factories whose connections it limits (the Twisted side fills it).
    """

    __slots__ = ("high_water_mark", "total", "charged", "over", "factories")

    def __init__(self, high_water_mark, total):
        self.high_water_mark = high_water_mark
        self.total = total
        self.charged = 0
        self.over = False
        self.factories = []

    def limit(self):
        """The unsent bytes a connection may hold before it stops being read, now."""
        return 0 if self.over else self.high_water_mark

    def charge(self, unsent):
        """A connection stopped holding ``unsent`` bytes; True if this made the budget over."""
        self.charged += unsent
        if not self.over and self.charged > self.total:
            self.over = True
            return True
        return False

    def release(self, unsent):
        """A stopped connection sent the ``unsent`` bytes it was charged with; True if the
        budget is no longer over."""
        self.charged -= unsent
        if self.over and self.charged <= self.total // 2:
            self.over = False
            return True
        return False
