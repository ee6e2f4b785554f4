"""Queue locks of orderly consumers: Java's ``RebalanceLockManager`` (LOCK_BATCH_MQ).

A lock belongs to one client id per (group, queue) and lives ``lock_max_live_time`` ms
(``rocketmq.broker.rebalance.lockMaxLiveTime``, 60 s) after its last renewal; an expired
lock goes to the next client that asks. Pure: ``now`` (ms) is passed in.
"""

__all__ = ["REBALANCE_LOCK_MAX_LIVE_TIME", "LockEntry", "RebalanceLockManager"]

REBALANCE_LOCK_MAX_LIVE_TIME = 60_000


class LockEntry:
    __slots__ = ("client_id", "last_update_timestamp")

    def __init__(self, client_id, now):
        self.client_id = client_id
        self.last_update_timestamp = now


class RebalanceLockManager:
    """``group → {MessageQueue → LockEntry}``."""

    def __init__(self, lock_max_live_time=REBALANCE_LOCK_MAX_LIVE_TIME):
        self.lock_max_live_time = lock_max_live_time
        self.mq_lock_table = {}

    def _expired(self, entry, now):
        return now - entry.last_update_timestamp > self.lock_max_live_time

    def is_locked(self, group, mq, client_id, now):
        """Whether ``client_id`` holds a live lock on ``mq`` (renewing it if so)."""
        entry = self.mq_lock_table.get(group, {}).get(mq)
        if entry is not None and entry.client_id == client_id and not self._expired(entry, now):
            entry.last_update_timestamp = now
            return True
        return False

    def try_lock(self, group, mq, client_id, now):
        """Take or renew the lock on ``mq``; whether ``client_id`` holds it now."""
        if self.is_locked(group, mq, client_id, now):
            return True
        locks = self.mq_lock_table.setdefault(group, {})
        entry = locks.get(mq)
        if entry is None:
            locks[mq] = LockEntry(client_id, now)
            return True
        if entry.client_id == client_id or self._expired(entry, now):
            entry.client_id = client_id
            entry.last_update_timestamp = now
            return True
        return False

    def try_lock_batch(self, group, mqs, client_id, now):
        """The queues of ``mqs`` that ``client_id`` holds after trying to lock each, in order."""
        return [mq for mq in mqs if self.try_lock(group, mq, client_id, now)]

    def unlock_batch(self, group, mqs, client_id):
        """Release the queues of ``mqs`` that ``client_id`` holds (others are left alone)."""
        locks = self.mq_lock_table.get(group)
        if not locks:
            return
        for mq in mqs:
            entry = locks.get(mq)
            if entry is not None and entry.client_id == client_id:
                del locks[mq]
