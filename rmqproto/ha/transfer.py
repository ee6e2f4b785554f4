"""Group transfer: SYNC_MASTER sends waiting for a slave's ack (``GroupTransferService``).

Java's ``GroupTransferService`` keeps the waiting ``GroupCommitRequest`` values in a list
and re-checks them after every ack and at least once a second. :class:`GroupTransferWaits`
is the pure replacement: the waits stay ordered by ``next_offset`` (a put's end offset,
which only grows), so an ack answers a prefix of them; each wait carries its own deadline
(``now + slaveTimeout``), so the caller arms one timer for :meth:`next_deadline` and hands
the expired prefix FLUSH_SLAVE_TIMEOUT. No clock is read here.
"""

import bisect
import collections
import itertools

__all__ = ["GroupTransferWaits"]


class GroupTransferWaits:
    """Waiting puts as ``(next_offset, deadline, token)``, ordered by ``next_offset``."""

    def __init__(self):
        self._waits = collections.deque()
        # True once a wait's deadline is earlier than one ahead of it (a clock stepping
        # back): expiry then scans every wait instead of the prefix.
        self._deadlines_unordered = False

    def __len__(self):
        return len(self._waits)

    def add(self, next_offset, deadline, token):
        """Queue ``token`` until an ack reaches ``next_offset`` or ``deadline`` passes."""
        entry = (next_offset, deadline, token)
        waits = self._waits
        if not waits or waits[-1][0] <= next_offset:
            if waits and waits[-1][1] > deadline:
                self._deadlines_unordered = True
            waits.append(entry)
            return
        # A put that ends before the newest waiting one: keep the offset order.
        index = bisect.bisect_right(waits, next_offset, key=lambda w: w[0])
        waits.insert(index, entry)
        self._deadlines_unordered = True

    def acked(self, offset):
        """Remove and return the tokens whose ``next_offset`` is at most ``offset``."""
        waits = self._waits
        done = []
        while waits and waits[0][0] <= offset:
            done.append(waits.popleft()[2])
        if not waits:
            self._deadlines_unordered = False
        return done

    def expired(self, now):
        """Remove and return the tokens whose deadline is at most ``now``."""
        waits = self._waits
        if self._deadlines_unordered:
            done = [w[2] for w in waits if w[1] <= now]
            if done:
                self._waits = collections.deque(w for w in waits if w[1] > now)
            left = self._waits
            self._deadlines_unordered = any(
                a[1] > b[1] for a, b in zip(left, itertools.islice(left, 1, None)))
            return done
        done = []
        while waits and waits[0][1] <= now:
            done.append(waits.popleft()[2])
        return done

    def next_deadline(self):
        """The earliest deadline, or None without waits."""
        waits = self._waits
        if not waits:
            return None
        if self._deadlines_unordered:
            return min(w[1] for w in waits)
        return waits[0][1]

    def take_all(self):
        """Remove and return every token (shutdown)."""
        tokens = [w[2] for w in self._waits]
        self._waits.clear()
        self._deadlines_unordered = False
        return tokens
