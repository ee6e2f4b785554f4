"""The file-system errors the store survives and how it reports them (docs/store.md,
"Disk full and read-only directories").

:data:`FILE_ERRORS` are what creating a store file raises when the disk says no;
:func:`is_disk_full` tells a full disk from the rest. Such a failure can last and meet
every put or every dispatch: :class:`ReportThrottle` keeps that to one log line per kind
of failure and interval instead of one per message.
"""

import errno

from rmqproto.store.mappedfile import DiskFullError, StoreError

__all__ = ["ReportThrottle", "REPORT_INTERVAL", "FILE_ERRORS", "is_disk_full"]

#: Seconds between two log lines about the same failure.
REPORT_INTERVAL = 10.0

#: What creating or extending a store file raises when the disk says no (a full disk,
#: a read-only or forbidden directory): the store survives these.
FILE_ERRORS = (OSError, StoreError)


def is_disk_full(error):
    """Whether ``error`` (one of :data:`FILE_ERRORS`) says the disk has no room: a file's
    blocks (:class:`~rmqproto.store.mappedfile.DiskFullError`) or a directory entry."""
    return isinstance(error, DiskFullError) or getattr(error, "errno", None) in (
        errno.ENOSPC, errno.EDQUOT)


class ReportThrottle:
    """Whether a failure is due a log line: the first of each ``key``, then one per
    ``interval`` seconds (``now`` is given: no clock here)."""

    def __init__(self, interval=REPORT_INTERVAL):
        self.interval = interval
        self._last = {}

    def due(self, key, now):
        last = self._last.get(key)
        if last is not None and now - last < self.interval:
            return False
        self._last[key] = now
        return True
