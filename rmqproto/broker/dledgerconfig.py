"""The start-up rules of a broker on a DLedger commit log (docs/broker-dledger.md,
"Configuration").

The settings are ``MessageStoreConfig``'s and are declared with the store's
(:mod:`rmqproto.store.config`); the member's own settings derive from them
(:func:`rmqproto.store.dledger.dledger_config`). Here: what ``BrokerStartup`` and
``DLedgerCommitLog`` require of them before anything starts.
"""

from rmqproto.config import ConfigError
from rmqproto.store.dledger.commitlog import dledger_config

__all__ = ["NO_BROKER_ID", "is_dledger", "check_dledger_settings", "slave_broker_id"]

#: The brokerId a DLedger broker starts with, until its first role change (``BrokerStartup``).
NO_BROKER_ID = -1


def is_dledger(config):
    return bool(config.get("enableDLegerCommitLog"))


def slave_broker_id(self_id):
    """The brokerId of a DLedger member as a slave: the number after the id's first character,
    plus one (``DLedgerCommitLog``'s ``id``: ``n0`` → 1, ``n2`` → 3)."""
    number = self_id[1:]
    if not number.isdigit():
        raise ConfigError("dLegerSelfId: %r must be a letter and a number (n0, n1, ...): its "
                          "number + 1 is the brokerId as a slave" % (self_id,))
    return int(number) + 1


def check_dledger_settings(config):
    """Raise :class:`ConfigError` when the DLedger settings of ``config`` cannot work."""
    for name in ("dLegerGroup", "dLegerPeers", "dLegerSelfId"):
        if not config.get(name):
            raise ConfigError("%s must be set when enableDLegerCommitLog=true" % name)
    slave_broker_id(config["dLegerSelfId"])
    dledger_config(config)
