"""When a broker on a DLedger commit log changes its role: Java's ``DLedgerRoleChangeHandler``.

A pure machine (docs/broker-dledger.md, "Role rules"): the member's role changes and, while
a new leader gets ready, the progress of its log come in with ``now``; what the broker must
do comes out as actions, which :mod:`rmqproto.broker.dledgerbroker` carries out on the
running broker (``BrokerController#changeToSlave`` / ``#changeToMaster``).

=========  ==================================================================================
Role       Actions
=========  ==================================================================================
CANDIDATE  :class:`ChangeToSlave` unless the broker is a slave already
FOLLOWER   :class:`ChangeToSlave` (brokerId: the number in ``dLegerSelfId`` + 1)
LEADER     once :meth:`RoleChangeHandler.leader_ready`: :class:`RecoverTopicQueueTable`, then
           :class:`ChangeToMaster` (SYNC_MASTER, brokerId 0); given up if the member stops
           leading that term first
=========  ==================================================================================

Java's handler polls every 100 ms until the leader's log is committed to its end and
dispatched. Our DLedger commits entries of an older term only with an entry of the current
term (docs/dledger.md, "Entries of an older term are not committed by counting"), and the
broker appends nothing before it is master: waiting for such an inherited tail would never
end. So a leader whose last entry is of an older term is ready once what is committed is
dispatched; the tail commits with its first own append, and the rebuilt queue offsets must
count the tail's records (``recover_topic_queue_table`` of the store, :mod:`rmqproto.store.dledger`).
"""

from typing import NamedTuple

from rmqproto.broker.dledgerconfig import slave_broker_id
from rmqproto.dledger.actions import Role

__all__ = ["POLL_INTERVAL_MS", "LeaderProgress", "ChangeToSlave", "ChangeToMaster",
           "RecoverTopicQueueTable", "RoleChangeHandler"]

#: ms between two looks at a new leader's log (``DLedgerRoleChangeHandler``'s sleep).
POLL_INTERVAL_MS = 100
SLAVE = "SLAVE"
SYNC_MASTER = "SYNC_MASTER"


class LeaderProgress(NamedTuple):
    """What a new leader's wait looks at: the member (``role``, ``term``), its log
    (``end_index``, ``end_term``: the term of the last entry, ``committed_index``) and the
    message store (``dispatched``: every committed entry is in the consume queues)."""

    role: Role
    term: int
    end_index: int
    end_term: int
    committed_index: int
    dispatched: bool


class ChangeToSlave(NamedTuple):
    """Become a slave with ``broker_id``: stop the transaction checker and delayed delivery,
    copy the metadata from the master, register with every NameServer at once."""

    broker_id: int


class ChangeToMaster(NamedTuple):
    """Become master (brokerId 0) in ``role``: stop copying metadata, start the transaction
    checker and delayed delivery, register with every NameServer at once."""

    role: str


class RecoverTopicQueueTable(NamedTuple):
    """Rebuild the next queue offset of every queue from the log (``recoverTopicQueueTable``)."""


class RoleChangeHandler:
    """The role rules of one DLedger broker, member ``self_id``, whose ``brokerRole`` is
    ``broker_role`` at start (the configured one: Java's initial ``MessageStoreConfig``)."""

    def __init__(self, self_id, broker_role):
        self.slave_id = slave_broker_id(self_id)
        self.broker_role = broker_role
        #: the term a LEADER change waits in, None when no leader is getting ready
        self.waiting_term = None
        self._deadline = None

    def role_changed(self, term, role, now):
        """The member became ``role`` in ``term``; the actions to carry out now. A change
        ends a leader's wait that is still under way (it would see the member not leading)."""
        self.waiting_term = self._deadline = None
        if role is Role.LEADER:
            self.waiting_term, self._deadline = term, now
            return []
        if role is Role.FOLLOWER or (role is Role.CANDIDATE and self.broker_role != SLAVE):
            self.broker_role = SLAVE
            return [ChangeToSlave(self.slave_id)]
        return []

    def next_deadline(self):
        """When :meth:`progress` wants the next :class:`LeaderProgress` (ms), or None."""
        return self._deadline

    def progress(self, progress, now):
        """A look at the new leader's log at ``now``; the actions to carry out."""
        term = self.waiting_term
        if term is None:
            return []
        if progress.role is not Role.LEADER or progress.term != term:
            self.waiting_term = self._deadline = None
            return []
        if not self.leader_ready(progress):
            self._deadline = now + POLL_INTERVAL_MS
            return []
        self.waiting_term = self._deadline = None
        self.broker_role = SYNC_MASTER
        return [RecoverTopicQueueTable(), ChangeToMaster(SYNC_MASTER)]

    @staticmethod
    def leader_ready(progress):
        """An empty log; or nothing undispatched and the log committed to its end, or ending
        with entries of an older term only (they commit with the first own append)."""
        if progress.end_index == -1:
            return True
        if not progress.dispatched:
            return False
        return (progress.committed_index == progress.end_index
                or progress.end_term < progress.term)
