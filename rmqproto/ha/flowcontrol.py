"""HA flow control: a per-connection bytes-per-second cap (RocketMQ 5 ``FlowMonitor``).

Settings keep RocketMQ 5's names: ``haFlowControlEnable`` (default false) and
``maxHaTransferByteInSecond`` (default 100 MiB). The count restarts every second, as
Java's monitor thread does; ``transferred_byte_in_second`` is the last whole second's
count, reported whether or not the cap is enabled. Java, once the budget is spent, keeps
sending size-0 transfers in a loop until the second ends; here the caller is told when the
next second starts (:meth:`FlowMonitor.next_window`) and waits until then. Times are ms.
"""

__all__ = ["FlowMonitor", "UNLIMITED"]

#: What :meth:`FlowMonitor.can_transfer` answers when the cap is off.
UNLIMITED = 2 ** 31 - 1

_WINDOW_MS = 1000


class FlowMonitor:
    """Counts the bytes written to one slave and caps them per second when enabled."""

    def __init__(self, enabled, max_bytes_per_second, now):
        self.enabled = enabled
        self.max_bytes_per_second = max_bytes_per_second
        self.transferred = 0  #: bytes in the current second
        self.transferred_byte_in_second = 0  #: bytes in the last whole second
        self._window_start = now

    def _roll(self, now):
        if now >= self._window_start + _WINDOW_MS:
            whole = (now - self._window_start) // _WINDOW_MS
            self.transferred_byte_in_second = self.transferred if whole == 1 else 0
            self.transferred = 0
            self._window_start += whole * _WINDOW_MS

    def can_transfer(self, now):
        """Bytes that may still go out in the current second (:data:`UNLIMITED` when off)."""
        self._roll(now)
        if not self.enabled:
            return UNLIMITED
        return max(self.max_bytes_per_second - self.transferred, 0)

    def add(self, count, now):
        """``count`` bytes were handed to the connection."""
        self._roll(now)
        self.transferred += count

    def speed(self, now):
        """``transferredByteInSecond``: bytes sent in the last whole second."""
        self._roll(now)
        return self.transferred_byte_in_second

    def next_window(self, now):
        """When the next second's budget starts."""
        self._roll(now)
        return self._window_start + _WINDOW_MS
