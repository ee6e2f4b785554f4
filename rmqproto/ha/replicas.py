"""The master's view of its slaves: one :class:`Replica` per HA connection (``HAConnection``).

Pure: no sockets, no clock reads (every call takes ``now`` in ms). The rules, with the
places where they differ from Java's ``HAService`` / ``HAConnection``:

* The first 8-byte report of a connection is its request offset, every report its ack
  offset (the connection's state, as in Java). Only an ack of bytes this connection was
  sent counts toward ``push2SlaveMaxOffset`` (the largest such ack), so the SYNC_MASTER
  waits: the request and any report at or below where the stream started claim what the
  master cannot check. Java counts every report, so any TCP client could answer
  SYNC_MASTER sends.
* A report beyond the master's max offset closes the connection. Java 4.9.3+ checks only
  the later reports; here the first one too (Java would stream nothing to such a slave,
  forever). A later report beyond what this connection was sent is a forged ack and
  closes it too; a negative report closes it (Java restarts the stream at every one).
* A report below the connection's previous one is taken as Java's
  ``HAConnection.ReadSocketService`` takes it: it becomes the ack offset, the stream goes
  on where it is and ``push2SlaveMaxOffset`` keeps its value; it is flagged ``regressed``
  for a warning the adapter rate-limits (:class:`WarningGate`).
* Where the stream starts (:func:`transfer_start`): at the start of the last commit-log
  segment for a request of 0, else at the request offset; a request below the oldest kept
  offset starts at the oldest kept offset (Java finds no data there and sends heartbeats
  only, forever).
* A replica is *live* while it has reported at least once and was heard from within
  ``2 × haSendHeartbeatInterval`` (a slave reports at least every interval). Only live
  replicas count for ``is_slave_ok``, and the gap is measured against the best live ack,
  not Java's all-time ``push2SlaveMaxOffset``: a connection that never reported (a port
  probe) or went silent (a frozen or vanished slave) makes sends answer
  SLAVE_NOT_AVAILABLE at once instead of waiting ``slaveTimeout`` for nothing.
* A report from a connection retires the older connections from the same host that have
  been silent for ``2 × haSendHeartbeatInterval``: a slave that reconnected leaves no stale
  connection behind, while two live slaves on one host (both reporting) keep theirs.
* Housekeeping: a connection silent for ``haHousekeepingInterval`` is closed, as in Java.
"""

import enum
import itertools

from rmqproto.codec.bodies.ha import HAConnectionRuntimeInfo, HARuntimeInfo
from rmqproto.ha.flowcontrol import FlowMonitor

__all__ = ["Replica", "ReplicaTable", "ReportKind", "ReportOutcome", "WarningGate",
           "transfer_start", "fallbehind_max", "SILENCE_FACTOR", "REPEATED_WARNING_INTERVAL"]

#: A replica silent for this many heartbeat intervals is no longer live.
SILENCE_FACTOR = 2
#: ms between two logged warnings of one kind for one connection.
REPEATED_WARNING_INTERVAL = 10_000


def fallbehind_max(config):
    """``haSlaveFallbehindMax``, or RocketMQ 5's ``haMaxGapNotInSync`` when that is set."""
    return config.get("haMaxGapNotInSync") or config["haSlaveFallbehindMax"]


def transfer_start(request_offset, max_offset, min_offset, file_size):
    """``(offset the stream starts at, True when the request lies below the oldest kept
    offset)`` for a slave's first report (``HAConnection.WriteSocketService``)."""
    if request_offset == 0:
        return max(max_offset - max_offset % file_size, 0), False
    if 0 <= min_offset and request_offset < min_offset:
        return min_offset, True
    return request_offset, False


class ReportKind(enum.Enum):
    REQUEST = "request"        #: the first report: the stream may start
    ACK = "ack"                #: a later report
    BEYOND_MAX = "beyond-max"  #: larger than the master's max offset: close the connection
    BEYOND_SENT = "beyond-sent"  #: an ack of bytes never sent on it: close the connection
    NEGATIVE = "negative"      #: below 0: close the connection


class ReportOutcome:
    """What a report means: its kind, the stream start (a REQUEST), whether the start was
    moved up to the oldest kept offset, the connections it retires (their tokens) and, for
    an ACK below the connection's previous report, that previous report (``regressed``)."""

    __slots__ = ("kind", "start", "below_min", "retired", "regressed")

    def __init__(self, kind, start=None, below_min=False, retired=(), regressed=None):
        self.kind = kind
        self.start = start
        self.below_min = below_min
        self.retired = list(retired)
        self.regressed = regressed


#: The outcome of most reports: an ack that retires nothing (shared: outcomes are read only).
_PLAIN_ACK = ReportOutcome(ReportKind.ACK)
_REFUSED = {kind: ReportOutcome(kind) for kind in
            (ReportKind.BEYOND_MAX, ReportKind.BEYOND_SENT, ReportKind.NEGATIVE)}


class WarningGate:
    """Rate limit for one connection's repeated warnings: :meth:`allow` says whether a
    warning of ``kind`` may be logged at ``now`` (ms) (at most one per ``interval``) and
    how many were held back since the last one logged."""

    def __init__(self, interval=REPEATED_WARNING_INTERVAL):
        self.interval = interval
        self._last = {}  # kind -> (ms logged, held back since)

    def allow(self, kind, now):
        """``(True, held back)`` when a warning of ``kind`` may be logged now, else
        ``(False, 0)`` (and it is counted)."""
        last = self._last.get(kind)
        if last is not None and now - last[0] < self.interval:
            self._last[kind] = (last[0], last[1] + 1)
            return False, 0
        self._last[kind] = (now, 0)
        return True, last[1] if last is not None else 0


class Replica:
    """The master's record of one HA connection (``HAConnection``'s fields)."""

    def __init__(self, token, addr, seq, now, flow):
        self.token = token  #: the adapter's handle (its protocol)
        self.addr = addr    #: ``"host:port"`` of the slave's socket
        self.host = addr.rsplit(":", 1)[0]
        self.seq = seq      #: registration order
        self.connected_at = now
        self.last_read = now
        self.slave_request_offset = -1
        self.slave_ack_offset = -1
        #: ``nextTransferFromWhere``: the offset of the next byte to send (-1 before the start)
        self.transfer_from_where = -1
        #: where the stream started: acks above it (up to ``transfer_from_where``) count
        self.transfer_start = -1
        self.flow = flow
        self.warnings = WarningGate()

    @property
    def reported(self):
        return self.slave_request_offset >= 0


class ReplicaTable:
    """Every HA connection of the master, ``push2SlaveMaxOffset`` and ``isSlaveOK``."""

    def __init__(self, config, now):
        self.fallbehind_max = fallbehind_max(config)
        self.silence_limit = SILENCE_FACTOR * config["haSendHeartbeatInterval"]
        self.housekeeping_interval = config["haHousekeepingInterval"]
        self.file_size = config["mappedFileSizeCommitLog"]
        self._flow_enabled = config.get("haFlowControlEnable", False)
        self._flow_max = config.get("maxHaTransferByteInSecond", 100 * 1024 * 1024)
        self.replicas = {}  #: token -> Replica, in registration order
        self.push2slave_max_offset = 0
        self._seq = itertools.count()

    def __len__(self):
        return len(self.replicas)

    def register(self, token, addr, now):
        """A connection was accepted (before any of its I/O)."""
        replica = Replica(token, addr, next(self._seq), now,
                          FlowMonitor(self._flow_enabled, self._flow_max, now))
        self.replicas[token] = replica
        return replica

    def unregister(self, token):
        """The connection closed; unknown tokens are ignored."""
        return self.replicas.pop(token, None)

    def report(self, token, offset, now, max_offset, oldest):
        """The newest complete report of ``token``'s slave (a :class:`ReportOutcome`);
        ``oldest()`` gives the oldest kept commit-log offset, asked for a first report only
        (every ack comes this way)."""
        replica = self.replicas[token]
        if offset > max_offset:
            return _REFUSED[ReportKind.BEYOND_MAX]
        if offset < 0:
            return _REFUSED[ReportKind.NEGATIVE]
        requested = replica.slave_request_offset >= 0  # reported, without the property
        if requested and offset > replica.transfer_from_where:
            return _REFUSED[ReportKind.BEYOND_SENT]
        replica.last_read = now
        previous, replica.slave_ack_offset = replica.slave_ack_offset, offset
        if requested and offset > self.push2slave_max_offset and offset > replica.transfer_start:
            self.push2slave_max_offset = offset
        retired = self._retired_by(replica, now) if len(self.replicas) > 1 else ()
        if requested:
            if offset < previous:
                return ReportOutcome(ReportKind.ACK, retired=retired, regressed=previous)
            return ReportOutcome(ReportKind.ACK, retired=retired) if retired else _PLAIN_ACK
        replica.slave_request_offset = offset
        start, below_min = transfer_start(offset, max_offset, oldest(), self.file_size)
        replica.transfer_from_where = replica.transfer_start = start
        return ReportOutcome(ReportKind.REQUEST, start, below_min, retired)

    def _retired_by(self, replica, now):
        """Tokens of the older connections from ``replica``'s host, silent too long."""
        return [r.token for r in self.replicas.values()
                if r.host == replica.host and r.seq < replica.seq
                and now - r.last_read > self.silence_limit]

    def heard(self, token, now):
        """Bytes arrived from ``token``'s slave without completing a report."""
        self.replicas[token].last_read = now

    def is_live(self, replica, now):
        return replica.reported and now - replica.last_read <= self.silence_limit

    def live_ack_offset(self, now):
        """The best ack offset of the live replicas, or None when none is live."""
        best = None
        limit = self.silence_limit
        for replica in self.replicas.values():  # a loop: this runs for every SYNC_MASTER put
            # is_live(replica, now), without the calls (reported's test in place)
            if (replica.slave_request_offset >= 0 and now - replica.last_read <= limit
                    and (best is None or replica.slave_ack_offset > best)):
                best = replica.slave_ack_offset
        return best

    def is_slave_ok(self, master_put_where, now):
        """``isSlaveOK``: a live replica exists and the best of them is less than
        ``haSlaveFallbehindMax`` bytes behind ``master_put_where``."""
        best = self.live_ack_offset(now)
        return best is not None and master_put_where - best < self.fallbehind_max

    def is_in_sync(self, replica, master_put_where, now):
        """RocketMQ 5 ``isInSyncSlave`` (here also: live)."""
        return (self.is_live(replica, now)
                and master_put_where - replica.slave_ack_offset < self.fallbehind_max)

    def expired(self, now):
        """Tokens of the connections silent for more than ``haHousekeepingInterval``."""
        return [r.token for r in self.replicas.values()
                if now - r.last_read > self.housekeeping_interval]

    def ha_runtime_info(self, master_put_where, now):
        """GET_BROKER_HA_STATUS's body (RocketMQ 5 ``DefaultHAService#getRuntimeInfo``): one
        entry per connection; a slave that has not acked yet is ``master_put_where`` behind."""
        info = HARuntimeInfo(master=True, master_commit_log_max_offset=master_put_where)
        for r in self.replicas.values():
            ack = r.slave_ack_offset
            synced = self.is_in_sync(r, master_put_where, now)
            info.in_sync_slave_nums += synced
            info.ha_connection_info.append(HAConnectionRuntimeInfo(
                addr=r.addr, slave_ack_offset=ack,
                diff=master_put_where - ack if ack >= 0 else master_put_where, in_sync=synced,
                transferred_byte_in_second=r.flow.speed(now),
                transfer_from_where=r.transfer_from_where))
        return info

    def runtime_info(self, master_put_where, now):
        """Replication entries for GET_BROKER_RUNTIME_INFO: :meth:`ha_runtime_info`'s, per
        slave suffixed with ``_<addr>`` (see docs/ha.md)."""
        ha = self.ha_runtime_info(master_put_where, now)
        info = {
            "haConnectionCount": str(len(self.replicas)),
            "push2SlaveMaxOffset": str(self.push2slave_max_offset),
            "slaveFallBehindMuch": str(master_put_where - self.push2slave_max_offset),
            "masterCommitLogMaxOffset": str(master_put_where),
        }
        for c in ha.ha_connection_info:
            info["slaveAckOffset_" + c.addr] = str(c.slave_ack_offset)
            info["diff_" + c.addr] = str(c.diff)
            info["inSync_" + c.addr] = "true" if c.in_sync else "false"
            info["transferFromWhere_" + c.addr] = str(c.transfer_from_where)
            info["transferredByteInSecond_" + c.addr] = str(c.transferred_byte_in_second)
        info["inSyncSlaveNums"] = str(ha.in_sync_slave_nums)
        return info
