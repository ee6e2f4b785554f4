"""DLedger's Raft as a pure machine: no sockets, no clock (docs/dledger.md).

* :mod:`~rmqproto.dledger.node` — :class:`DLedgerNode`, one member: ``receive``,
  ``deliver``, ``tick`` in, :class:`~rmqproto.dledger.actions.Ready` out;
* :mod:`~rmqproto.dledger.log` — :class:`ILedger`, what a store must provide, and
  :class:`MemoryLedger`;
* :mod:`~rmqproto.dledger.config` — :class:`DLedgerConfig` with DLedger's names and defaults.
"""

from rmqproto.dledger.actions import Ready, Reply, Role, Send, TermState
from rmqproto.dledger.config import DLedgerConfig, DLedgerConfigError
from rmqproto.dledger.log import ILedger, LedgerError, MemoryLedger
from rmqproto.dledger.node import DLedgerNode

__all__ = ["DLedgerConfig", "DLedgerConfigError", "DLedgerNode", "ILedger", "LedgerError",
           "MemoryLedger", "Ready", "Reply", "Role", "Send", "TermState"]
