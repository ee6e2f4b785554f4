"""The store's settings: ``MessageStoreConfig`` property names and defaults.

A Java ``broker.conf`` sets these directly; the broker merges them with its own settings.
"""

import os

from rmqproto.config import Setting, Settings, at_least, parses_with
from rmqproto.config.allowlist import AllowList
from rmqproto.store.dispatch import parse_delay_levels

__all__ = ["STORE_SETTINGS", "BROKER_ROLES", "FLUSH_DISK_TYPES", "store_paths"]

BROKER_ROLES = ("ASYNC_MASTER", "SYNC_MASTER", "SLAVE")
FLUSH_DISK_TYPES = ("ASYNC_FLUSH", "SYNC_FLUSH")

STORE_SETTINGS = Settings(
    Setting("storeType", "default", "the store plugin to use (rmqproto.pluggable.IMessageStoreFactory)"),
    Setting("storePathRootDir", os.path.join(os.path.expanduser("~"), "store"),
            "root directory of the store"),
    Setting("storePathCommitLog", "", "commit-log directory [default: <storePathRootDir>/commitlog]"),
    Setting("mappedFileSizeCommitLog", 1024 * 1024 * 1024, "bytes per commit-log segment",
            check=at_least(1)),
    Setting("mappedFileSizeConsumeQueue", 300_000 * 20, "bytes per consume-queue file",
            check=at_least(1)),
    Setting("flushDiskType", "ASYNC_FLUSH", "ASYNC_FLUSH or SYNC_FLUSH", choices=FLUSH_DISK_TYPES),
    Setting("flushIntervalCommitLog", 500, "ms between asynchronous commit-log flushes",
            check=at_least(1)),
    Setting("flushCommitLogLeastPages", 4, "dirty pages needed for an asynchronous flush"),
    Setting("flushCommitLogThoroughInterval", 10_000, "ms after which any dirty page is flushed"),
    Setting("flushCommitLogTimed", True,
            "ASYNC_FLUSH: flush on the interval only; false: also as soon as puts dirty "
            "flushCommitLogLeastPages pages"),
    Setting("flushIntervalConsumeQueue", 1000, "ms between consume-queue flushes",
            check=at_least(1)),
    Setting("flushConsumeQueueLeastPages", 2, "dirty pages needed for a consume-queue flush"),
    Setting("flushConsumeQueueThoroughInterval", 60_000, "ms after which any dirty CQ page is flushed"),
    Setting("syncFlushTimeout", 5000, "ms a SYNC_FLUSH send waits before FLUSH_DISK_TIMEOUT"),
    Setting("fileReservedTime", 72, "hours a commit-log file is kept"),
    Setting("deleteWhen", "04", "hours of the day (two digits, ';'-separated) to delete expired files"),
    Setting("diskMaxUsedSpaceRatio", 75, "disk usage percentage above which files are deleted early"),
    Setting("cleanResourceInterval", 10_000, "ms between retention checks",
            check=at_least(1)),
    Setting("deleteCommitLogFilesInterval", 100, "ms between deleting two commit-log files"),
    Setting("destroyMapedFileIntervalForcibly", 120_000, "ms before a busy file is deleted anyway"),
    Setting("cleanFileForciblyEnable", True, "delete files early when the disk is nearly full"),
    Setting("deleteConsumeQueueFilesInterval", 100,
            "ms of pause after a consume queue had files deleted"),
    Setting("diskSpaceWarningLevelRatio", 0.90,
            "disk usage (fraction) above which puts are refused [Java: system property "
            "rocketmq.broker.diskSpaceWarningLevelRatio]"),
    Setting("diskSpaceCleanForciblyRatio", 0.85,
            "disk usage (fraction) above which files are deleted before they expire "
            "[Java: system property rocketmq.broker.diskSpaceCleanForciblyRatio]"),
    Setting("maxMessageSize", 4 * 1024 * 1024, "largest message body in bytes"),
    Setting("checkCRCOnRecover", True, "verify body CRCs while recovering"),
    Setting("messageIndexEnable", True, "index message keys and unique keys"),
    Setting("maxHashSlotNum", 5_000_000, "hash slots per index file",
            check=at_least(1)),
    Setting("maxIndexNum", 20_000_000, "entries per index file (the first slot is unused)",
            check=at_least(2)),
    Setting("maxMsgsNumBatch", 64, "most messages a key query returns"),
    Setting("defaultQueryMaxNum", 32, "messages a key query returns by default"),
    Setting("messageIndexSafe", False, "recover the index from the checkpoint conservatively"),
    Setting("maxTransferBytesOnMessageInMemory", 256 * 1024, "pull size cap, data in memory"),
    Setting("maxTransferCountOnMessageInMemory", 32, "pull count cap, data in memory"),
    Setting("maxTransferBytesOnMessageInDisk", 64 * 1024, "pull size cap, data on disk"),
    Setting("maxTransferCountOnMessageInDisk", 8, "pull count cap, data on disk"),
    Setting("accessMessageInMemoryMaxRatio", 40, "percent of RAM considered 'in memory'"),
    Setting("messageDelayLevel", "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
            "delay of each delay level", check=parses_with(parse_delay_levels)),
    Setting("flushDelayOffsetInterval", 10_000, "ms between persisting delay offsets",
            check=at_least(1)),
    Setting("brokerRole", "ASYNC_MASTER", "ASYNC_MASTER, SYNC_MASTER or SLAVE", choices=BROKER_ROLES),
    Setting("haListenPort", 10912, "HA port [forced to listenPort + 1, as Java 4.x does]"),
    Setting("haSendHeartbeatInterval", 5000, "ms of HA silence before a heartbeat / report"),
    Setting("haHousekeepingInterval", 20_000, "ms after which a silent HA connection is closed"),
    Setting("haTransferBatchSize", 32 * 1024, "most commit-log bytes in one HA transfer",
            check=at_least(1)),
    Setting("haMasterAddress", "", "HA address of the master (a slave; else learned from the NameServer)"),
    Setting("haSlaveAllowList", "", "addresses and CIDR blocks (comma-separated) allowed to "
            "connect to the HA port; empty: anyone (see docs/security.md)",
            check=parses_with(AllowList)),
    Setting("haTlsEnable", False, "TLS with client certificates on the HA connections "
            "(master: also accepts plain peers in haSlaveAllowList; slave: connects with TLS)"),
    Setting("haTlsCertPath", "", "PEM certificate this broker presents on the HA port"),
    Setting("haTlsKeyPath", "", "PEM private key of haTlsCertPath"),
    Setting("haTlsTrustCertPath", "", "PEM CA certificate(s) a peer's HA certificate must chain to"),
    Setting("haSlaveFallbehindMax", 256 * 1024 * 1024, "bytes a slave may lag and still count as in sync"),
    Setting("haMaxGapNotInSync", 0, "RocketMQ 5 name of haSlaveFallbehindMax; wins when > 0"),
    Setting("haFlowControlEnable", False, "cap the bytes per second sent to each slave"),
    Setting("maxHaTransferByteInSecond", 100 * 1024 * 1024,
            "bytes per second sent to one slave when haFlowControlEnable is true"),
    Setting("slaveTimeout", 3000, "ms a SYNC_MASTER send waits for a slave ack"),
    Setting("offsetCheckInSlave", False, "correct pull offsets on a slave too"),
    Setting("osPageCacheBusyTimeOutMills", 1000, "ms a put may hold the store before OS_PAGECACHE_BUSY"),
    Setting("enableDLegerCommitLog", False, "keep the commit log in a DLedger (Raft) group "
            "(docs/broker-dledger.md)"),
    Setting("dLegerGroup", "", "DLedger group name (usually the brokerName)"),
    Setting("dLegerPeers", "", "the group's members: n0-host:port;n1-host:port;..."),
    Setting("dLegerSelfId", "", "this broker's member id in dLegerPeers: n<number>"),
    Setting("preferredLeaderId", "", "member(s) the leadership is handed to when they can "
            "take it, ';'-separated"),
    Setting("enableBatchPush", False, "push entries to followers in batches (DLedger's "
            "isEnableBatchPush; the key Java's broker.conf reader takes)"),
    Setting("isEnableBatchPush", False, "the same as enableBatchPush (the name getBrokerConfig "
            "lists); either turns batch pushes on"),
    Setting("storePathDLedgerCommitLog", "", "directory of the DLedger data files "
            "[default: <storePathRootDir>/dledger-<dLegerSelfId>/data]"),
)


def store_paths(config):
    """The store's directories and files for ``config`` (``StorePathConfigHelper``)."""
    root = config["storePathRootDir"]
    return {
        "root": root,
        "commitlog": config["storePathCommitLog"] or os.path.join(root, "commitlog"),
        "consumequeue": os.path.join(root, "consumequeue"),
        "index": os.path.join(root, "index"),
        "checkpoint": os.path.join(root, "checkpoint"),
        "abort": os.path.join(root, "abort"),
        "lock": os.path.join(root, "lock"),
        "config": os.path.join(root, "config"),
    }
