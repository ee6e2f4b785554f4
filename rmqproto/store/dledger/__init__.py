"""The store on a DLedger commit log (``enableDLegerCommitLog=true``; docs/broker-dledger.md, "The store").

* :mod:`~rmqproto.store.dledger.entries` — pure rules: reading records out of DLedger
  entries (``[magic][next]``), the append status mapping, the PHYSICALOFFSET hook;
* :mod:`~rmqproto.store.dledger.commitlog` — :class:`DLedgerCommitLog` (the commit log in
  the member's data files, the upgrade from a classic log) and :func:`dledger_config`;
* :mod:`~rmqproto.store.dledger.messagestore` — :class:`DLedgerMessageStore`, the
  :class:`~rmqproto.store.interfaces.IMessageStore` a DLedger broker runs.

What the broker's role handling uses (everything else is :class:`IMessageStore`):

====================================  ===================================================
``store.dledger``                     the :class:`~rmqproto.dledger.server.DLedgerServer`
                                      made by ``load()``, started and stopped with the
                                      store: ``role_listeners``, ``is_leader``, ``store``
                                      (end and committed index), ``dispatcher`` (serve it
                                      on the member's peer port)
``store.dledger_config``              its :class:`~rmqproto.dledger.config.DLedgerConfig`
``store.config["brokerRole"]``        SLAVE refuses puts (SERVICE_NOT_AVAILABLE), a master
                                      role appends them to the member
``store.dispatched()``                every committed entry is in the consume queues
``store.recover_topic_queue_table()`` the next queue offsets anew (on becoming leader):
                                      from the consume queues, and past the records of the
                                      log's tail that are not committed yet
====================================  ===================================================
"""

from rmqproto.store.dledger.commitlog import DLedgerCommitLog, dledger_config
from rmqproto.store.dledger.messagestore import DLedgerMessageStore

__all__ = ["DLedgerCommitLog", "DLedgerMessageStore", "dledger_config"]
