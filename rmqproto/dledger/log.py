"""The log the Raft core writes through: :class:`ILedger`, and :class:`MemoryLedger` for tests.

The core never opens a file. It reads and writes its entries through an object that
provides :class:`ILedger` — the in-memory one here, or the DLedger on-disk store (data
and index segments, ``checkpoint``) written behind the same interface. The methods are
the part of Java's ``DLedgerStore`` the core uses, with the role checks moved into the
core (``DLedgerMmapFileStore#appendAsFollower`` checks role, term and leader under the
member-state lock; here the core checks them before it calls the store):

====================  =====================================================================
``begin_index``       first index held (-1 when empty): ``getLedgerBeginIndex``
``end_index``         last index held (-1 when empty): ``getLedgerEndIndex``
``end_term``          term of the entry at ``end_index`` (-1 when empty): ``getLedgerEndTerm``
``end_pos``           byte position just after the last entry (``getMaxWrotePosition`` of
                      the data files; 0 when empty)
``committed_index``   the committed index the core has set; the store persists it in
                      ``checkpoint`` (``committedIndex``) with ``endIndex``
``get(index)``        the entry; :class:`LedgerError` INDEX_OUT_OF_RANGE / INDEX_LESS_THAN_
                      LOCAL_BEGIN outside the range, DISK_ERROR if unreadable
``append_as_leader``  ``(body, term)`` → the new entry at ``end_index + 1``, with ``pos``,
                      ``size`` and ``magic`` filled in (``appendAsLeader``)
``append_as_follower`` an entry as the leader sent it; its index must be ``end_index + 1``
                      (else INCONSISTENT_INDEX) and its ``pos`` the store's write position
                      (else DISK_ERROR) (``appendAsFollower``)
``truncate(entry)``   make ``entry`` the last entry: keep what is before its index, write it
                      at its ``pos`` unless the same entry is already there, drop the rest;
                      an index outside the held range empties the log and starts it there
                      (``DLedgerMmapFileStore#truncate``); returns the index
====================  =====================================================================

A store raises only :class:`LedgerError`; the core answers the peer with its code and
keeps running.
"""

from zope.interface import Attribute, Interface, implementer

from rmqproto.codec.dledger import CURRENT_MAGIC, DLedgerEntry
from rmqproto.codec.dledger_rpc import DLedgerResponseCode
from rmqproto.errors import RmqError

__all__ = ["ILedger", "LedgerError", "MemoryLedger"]


class LedgerError(RmqError):
    """A log operation refused, with the DLedger response code that says why."""

    def __init__(self, code, message=""):
        super().__init__("%s %s" % (code.name, message) if message else code.name)
        self.code = code


class ILedger(Interface):
    """The entries of one DLedger member, as the Raft core needs them (see module doc)."""

    begin_index = Attribute("First index held, -1 when empty.")
    end_index = Attribute("Last index held, -1 when empty.")
    end_term = Attribute("Term of the last entry, -1 when empty.")
    end_pos = Attribute("Byte position just after the last entry.")
    committed_index = Attribute("Committed index, set by the core, persisted in checkpoint.")

    def get(index):
        """The :class:`DLedgerEntry` at ``index`` (raises :class:`LedgerError`)."""

    def append_as_leader(body, term):
        """Append ``body`` as a new entry of ``term``; the stored entry."""

    def append_as_follower(entry):
        """Append the leader's ``entry`` at ``end_index + 1``; the stored entry."""

    def truncate(entry):
        """Make ``entry`` the last entry (see module doc); its index."""


def _check_range(ledger, index):
    if index < 0 or index > ledger.end_index:
        raise LedgerError(DLedgerResponseCode.INDEX_OUT_OF_RANGE, "%d not in %d..%d" % (
            index, ledger.begin_index, ledger.end_index))
    if index < ledger.begin_index:
        raise LedgerError(DLedgerResponseCode.INDEX_LESS_THAN_LOCAL_BEGIN, "%d < %d" % (
            index, ledger.begin_index))


@implementer(ILedger)
class MemoryLedger:
    """An :class:`ILedger` in a list; positions are laid out as one endless data file."""

    def __init__(self):
        self.entries = []
        self.begin_index = -1
        self.committed_index = -1

    @property
    def end_index(self):
        return self.begin_index + len(self.entries) - 1 if self.entries else -1

    @property
    def end_term(self):
        return self.entries[-1].term if self.entries else -1

    @property
    def end_pos(self):
        last = self.entries[-1] if self.entries else None
        return last.pos + last.size if last else 0

    def get(self, index):
        _check_range(self, index)
        return self.entries[index - self.begin_index]

    def append_as_leader(self, body, term):
        entry = DLedgerEntry(index=self.end_index + 1, term=term, body=bytes(body),
                             pos=self.end_pos, magic=CURRENT_MAGIC)
        entry.compute_size()
        self._put(entry)
        return entry

    def append_as_follower(self, entry):
        if entry.index != self.end_index + 1:
            raise LedgerError(DLedgerResponseCode.INCONSISTENT_INDEX, "%d != %d" % (
                entry.index, self.end_index + 1))
        if entry.pos != self.end_pos:
            raise LedgerError(DLedgerResponseCode.DISK_ERROR, "pos %d != %d" % (
                entry.pos, self.end_pos))
        self._put(entry)
        return entry

    def truncate(self, entry):
        if self.entries and self.begin_index <= entry.index <= self.end_index + 1:
            del self.entries[entry.index - self.begin_index:]
        else:
            self.entries = []
        self._put(entry)
        return entry.index

    def _put(self, entry):
        if not self.entries:
            self.begin_index = entry.index
        self.entries.append(entry)
