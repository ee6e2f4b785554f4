"""The settings of a broker on a DLedger commit log (docs/broker-dledger.md, "Configuration").

Java keeps them in ``MessageStoreConfig``; a ``broker.conf`` sets them under the names Java's
``MixAll.properties2Object`` reads (the setter's name): ``enableDLegerCommitLog``,
``dLegerGroup``, ``dLegerPeers``, ``dLegerSelfId``, ``preferredLeaderId``,
``enableBatchPush`` and ``storePathDLedgerCommitLog``. ``isEnableBatchPush``, the field's
name that ``getBrokerConfig`` lists, is accepted too. :func:`dledger_config` gives the
DLedger member's own settings as ``DLedgerCommitLog``'s constructor derives them.
"""

from rmqproto.config import ConfigError, Setting, Settings
from rmqproto.dledger.config import DLedgerConfig, DLedgerConfigError

__all__ = ["DLEDGER_SETTINGS", "NO_BROKER_ID", "is_dledger", "check_dledger_settings",
           "dledger_config", "slave_broker_id"]

#: The brokerId a DLedger broker starts with, until its first role change (``BrokerStartup``).
NO_BROKER_ID = -1

DLEDGER_SETTINGS = Settings(
    Setting("enableDLegerCommitLog", False, "keep the commit log in a DLedger (Raft) group: the "
            "broker's role follows the member's (docs/broker-dledger.md)"),
    Setting("dLegerGroup", "", "DLedger group name (usually the brokerName)"),
    Setting("dLegerPeers", "", "the group's members: n0-host:port;n1-host:port;... (each "
            "broker serves DLedger's RPC on its own member's port)"),
    Setting("dLegerSelfId", "", "this broker's member id in dLegerPeers: n<number>; as a "
            "slave its brokerId is number + 1"),
    Setting("preferredLeaderId", "", "member(s) the leadership is handed to when they can "
            "take it, ';'-separated"),
    Setting("enableBatchPush", False, "push entries to followers in batches (DLedger's "
            "isEnableBatchPush; the key Java's broker.conf reader takes)"),
    Setting("isEnableBatchPush", False, "the same as enableBatchPush (the name getBrokerConfig "
            "lists); either turns batch pushes on"),
    Setting("storePathDLedgerCommitLog", "", "directory of the DLedger data files "
            "[default: <storePathRootDir>/dledger-<dLegerSelfId>/data]"),
)


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


def dledger_config(config):
    """The member's :class:`~rmqproto.dledger.config.DLedgerConfig` from the broker settings
    ``config``, as ``DLedgerCommitLog``'s constructor fills it: the store root as base
    directory, the commit log's segment size, retention hours and times, the disk ratios."""
    try:
        return DLedgerConfig(
            group=config["dLegerGroup"], selfId=config["dLegerSelfId"],
            peers=config["dLegerPeers"], storeBaseDir=config["storePathRootDir"],
            dataStorePath=config.get("storePathDLedgerCommitLog") or None,
            mappedFileSizeForEntryData=config["mappedFileSizeCommitLog"],
            deleteWhen=config["deleteWhen"], fileReservedHours=config["fileReservedTime"] + 1,
            preferredLeaderIds=config.get("preferredLeaderId") or None,
            isEnableBatchPush=bool(config.get("enableBatchPush")
                                   or config.get("isEnableBatchPush")),
            diskSpaceRatioToCheckExpired=config["diskMaxUsedSpaceRatio"] / 100,
            enableDiskForceClean=config["cleanFileForciblyEnable"])
    except DLedgerConfigError as exc:
        raise ConfigError("dLegerPeers / dLegerSelfId: %s" % exc) from None


def check_dledger_settings(config):
    """Raise :class:`ConfigError` when the DLedger settings of ``config`` cannot work."""
    for name in ("dLegerGroup", "dLegerPeers", "dLegerSelfId"):
        if not config.get(name):
            raise ConfigError("%s must be set when enableDLegerCommitLog=true" % name)
    slave_broker_id(config["dLegerSelfId"])
    dledger_config(config)
