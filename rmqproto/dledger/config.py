"""The settings of a DLedger node, under ``DLedgerConfig``'s property names and defaults.

Field names are DLedger's own (``heartBeatTimeIntervalMs``, ``preferredLeaderIds`` …) so a
DLedger properties file maps onto them unchanged. Only the settings the Raft core reads are
here, plus the store's names the next layers need; two settings are ours (marked below) and
are described in docs/dledger.md, "Where we differ from DLedger".
"""

from dataclasses import dataclass, fields
from typing import Optional

from rmqproto.errors import RmqError

__all__ = ["DLedgerConfig", "DLedgerConfigError", "parse_peers"]


class DLedgerConfigError(RmqError):
    """A DLedger setting that cannot work (bad peer list, unknown self id …)."""


def parse_peers(peers):
    """``MemberState``'s reading of ``peers``: ``"n0-host:port;n1-host:port"`` → ``{id: addr}``.

    The id is everything before the first ``-``; the address is the rest.
    """
    result = {}
    for item in peers.split(";"):
        member_id, sep, addr = item.partition("-")
        if not sep or not member_id or not addr:
            raise DLedgerConfigError("peer %r is not <id>-<host:port>" % item)
        if member_id in result:
            raise DLedgerConfigError("peer id %r appears twice" % member_id)
        result[member_id] = addr
    return result


@dataclass
class DLedgerConfig:
    """``DLedgerConfig`` (DLedger 0.3.1.2): names and defaults as in Java."""

    group: str = "default"
    selfId: str = "n0"
    peers: str = "n0-localhost:20911"
    storeBaseDir: str = "/tmp/dledgerstore"
    dataStorePath: Optional[str] = None
    peerPushThrottlePoint: int = 300 * 1024 * 1024
    peerPushQuota: int = 20 * 1024 * 1024
    maxPendingRequestsNum: int = 10000
    maxWaitAckTimeMs: int = 2500
    maxPushTimeOutMs: int = 1000
    enableLeaderElector: bool = True
    heartBeatTimeIntervalMs: int = 2000
    maxHeartBeatLeak: int = 3
    minVoteIntervalMs: int = 300
    maxVoteIntervalMs: int = 1000
    fileReservedHours: int = 72
    deleteWhen: str = "04"
    diskSpaceRatioToCheckExpired: float = 0.70
    diskSpaceRatioToForceClean: float = 0.85
    enableDiskForceClean: bool = True
    flushFileInterval: int = 10
    checkPointInterval: int = 3000
    mappedFileSizeForEntryData: int = 1024 * 1024 * 1024
    mappedFileSizeForEntryIndex: int = 32 * 5 * 1024 * 1024
    enablePushToFollower: bool = True
    preferredLeaderIds: Optional[str] = None
    maxLeadershipTransferWaitIndex: int = 1000
    minTakeLeadershipVoteIntervalMs: int = 30
    maxTakeLeadershipVoteIntervalMs: int = 100
    isEnableBatchPush: bool = False
    maxBatchPushSize: int = 4 * 1024
    leadershipTransferWaitTimeout: int = 1000
    #: Ours: raise the term only in the same step as a round that a quorum answered
    #: without knowing a leader (docs/dledger.md, "Pre-vote"). False = DLedger's timing.
    enablePreVote: bool = True
    #: Ours: after a failed transfer to a preferred leader, wait this long before trying
    #: that peer again (docs/dledger.md, "Preferred leader"). 0 = DLedger's every second.
    preferredLeaderRetryIntervalMs: int = 6000

    def __post_init__(self):
        self.peer_map = parse_peers(self.peers)
        if self.selfId not in self.peer_map:
            raise DLedgerConfigError("selfId %r is not in peers %r" % (self.selfId, self.peers))
        if self.minVoteIntervalMs >= self.maxVoteIntervalMs:
            raise DLedgerConfigError("minVoteIntervalMs must be below maxVoteIntervalMs")
        if self.minTakeLeadershipVoteIntervalMs >= self.maxTakeLeadershipVoteIntervalMs:
            raise DLedgerConfigError(
                "minTakeLeadershipVoteIntervalMs must be below maxTakeLeadershipVoteIntervalMs")

    @property
    def disk_full_ratio(self):
        """``getDiskFullRatio``: appends are refused above it."""
        return min(self.diskSpaceRatioToForceClean + 0.05, 0.95)

    @property
    def preferred_leaders(self):
        """``preferredLeaderIds`` split on ``;`` (empty when unset)."""
        return self.preferredLeaderIds.split(";") if self.preferredLeaderIds else []

    @classmethod
    def names(cls):
        """Every property name, in declaration order."""
        return [f.name for f in fields(cls)]
