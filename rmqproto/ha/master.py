"""The master's HA service: the HA listener and the SYNC_MASTER replica waits (Java ``HAService``, ``HAConnection``).

* :class:`HAMasterConnection` is one slave's connection (Java's ``HAConnection``): the read
  side feeds the 8-byte reports to the :class:`~rmqproto.ha.replicas.ReplicaTable`; the
  write side is a streaming producer that sends ``[offset][size][commit-log bytes]``
  transfers of at most ``haTransferBatchSize`` bytes while the transport takes them
  (``pauseProducing`` / ``resumeProducing``) and a size-0 heartbeat after
  ``haSendHeartbeatInterval`` of silence.
* :class:`HAMasterService` listens on ``haListenPort``, installs ``store.replica_waiter``
  (the group transfer: :class:`~rmqproto.ha.transfer.GroupTransferWaits` and one timer for
  the earliest deadline), wakes the connections when messages arrive, runs a one-second
  tick (heartbeats, housekeeping) and logs the master/slave offset diff every 60 s.
* :class:`HAMasterFactory` serves only the peers ``haSlaveAllowList`` allows, and with
  ``haTlsEnable`` hands each connection to :class:`TLSOrPlain` (docs/security.md, "HA port").

See docs/ha.md for the rules and where they differ from Java.
"""

from twisted.application import service
from twisted.internet import defer, protocol, task
from twisted.internet.interfaces import IHandshakeListener, IPushProducer, ISSLTransport
from twisted.logger import Logger
from zope.interface import implementer

from rmqproto.codec.ha import TRANSFER_HEADER, SlaveReportReader
from rmqproto.config.allowlist import AllowList
from rmqproto.ha.replicas import ReplicaTable, ReportKind
from rmqproto.ha.tls import TLS_RECORD_HANDSHAKE, tls_factory, tls_options
from rmqproto.ha.transfer import GroupTransferWaits
from rmqproto.remoting.protocol import gathered_writes
from rmqproto.remoting.sendnow import send_now
from rmqproto.remoting.serversettings import server_setting
from rmqproto.store.results import PutMessageStatus

__all__ = ["HAMasterConnection", "HAMasterFactory", "HAMasterService", "TLSOrPlain",
           "TICK_SECONDS", "DIFF_LOG_SECONDS"]

log = Logger()

_HEADER = TRANSFER_HEADER.struct

#: Period of the heartbeat / housekeeping check (Java's ``selector.select(1000)``).
TICK_SECONDS = 1.0
#: ``printMasterAndSlaveDiff``: first after 10 s, then every 60 s.
DIFF_LOG_FIRST_SECONDS = 10.0
DIFF_LOG_SECONDS = 60.0


@implementer(IPushProducer, IHandshakeListener)
class HAMasterConnection(protocol.Protocol):
    """One slave's HA connection; registered with the service before any of its I/O (on
    TLS, once the handshake has verified the slave's certificate)."""

    def __init__(self, ha):
        self.ha = ha
        self.reader = SlaveReportReader()
        self.replica = None
        self.paused = False
        self.closed = False
        self.last_write = 0
        self._flow_wait = None

    @property
    def addr(self):
        return self.replica.addr if self.replica is not None else "?"

    # -- Protocol

    def connectionMade(self):
        if not ISSLTransport.providedBy(self.transport):
            self._start()

    def handshakeCompleted(self):
        self._start()

    def _start(self):
        peer = self.transport.getPeer()
        self.replica = self.ha.register(self, "%s:%s" % (peer.host, peer.port))
        self.last_write = self.ha.now()
        set_no_delay = getattr(self.transport, "setTcpNoDelay", None)
        if set_no_delay is not None:
            set_no_delay(True)
        self.transport.registerProducer(self, True)

    def dataReceived(self, data):
        if self.closed:
            return
        offset = self.reader.feed(data)
        if offset is None:
            self.ha.table.heard(self, self.ha.now())
        else:
            self.ha.on_report(self, offset)

    def connectionLost(self, reason=None):
        if self.replica is None and not self.closed:  # TLS: the handshake did not complete
            self.ha.refuse(self.transport.getPeer(), "TLS handshake failed: %s"
                           % (reason.getErrorMessage() if reason is not None else "closed"))
        self._stop()
        self.ha.unregister(self)

    # -- IPushProducer (the transport's buffer)

    def pauseProducing(self):
        self.paused = True

    def resumeProducing(self):
        self.paused = False
        self.pump()

    def stopProducing(self):
        self._stop()

    # -- write side

    def close(self, why):
        """Drop the connection now (buffered bytes are discarded), logging ``why``."""
        if self.closed:
            return
        log.warn("closing HA connection of slave[{addr}]: {why}", addr=self.addr, why=why)
        self._stop()
        self.ha.unregister(self)
        self.transport.abortConnection()

    def _stop(self):
        self.closed = True
        if self._flow_wait is not None and self._flow_wait.active():
            self._flow_wait.cancel()
        self._flow_wait = None

    def _write(self, offset, data, now):
        send_now(self.transport, _HEADER.pack(offset, len(data)) + data)
        self.replica.flow.add(_HEADER.size + len(data), now)
        self.last_write = now

    def pump(self):
        """Send transfers from ``transferFromWhere`` up to the commit log's end while the
        transport takes them."""
        replica = self.replica
        if (self.closed or self.paused or replica is None or replica.transfer_from_where < 0
                or self._flow_wait is not None):
            return
        ha = self.ha
        store = ha.store
        end = store.get_max_phy_offset()
        now = int(ha.reactor.seconds() * 1000)  # now(), without the call: every put's turn
        while replica.transfer_from_where < end and not self.paused and not self.closed:
            size = min(ha.batch_size, replica.flow.can_transfer(now) - _HEADER.size)
            if size <= 0:
                self._wait_for_budget(now)
                return
            where = replica.transfer_from_where
            data = store.get_commit_log_data(where, size)
            if not data:
                if not ha.skip_removed_data(replica):
                    return
                continue
            replica.transfer_from_where = where + len(data)
            self._write(where, data, now)

    def _wait_for_budget(self, now):
        window = self.replica.flow.next_window(now)
        log.debug("HA flow control: slave[{addr}] waits {ms} ms", addr=self.addr, ms=window - now)
        self._flow_wait = self.ha.reactor.callLater(max(window - now, 0) / 1000.0, self._budget)

    def _budget(self):
        self._flow_wait = None
        self.pump()

    def tick(self, now):
        """The periodic check: a heartbeat after ``haSendHeartbeatInterval`` of silence."""
        if (self.closed or self.paused or self.replica.transfer_from_where < 0
                or now - self.last_write <= self.ha.heartbeat_interval):
            return
        self._write(self.replica.transfer_from_where, b"", now)


class HAMasterFactory(protocol.Factory):
    """Builds :class:`HAMasterConnection` for ``ha`` (an :class:`HAMasterService`) for the
    peers ``haSlaveAllowList`` allows; with ``haTlsEnable``, a :class:`TLSOrPlain` that
    picks TLS or plain TCP by the peer's first byte."""

    noisy = False

    def __init__(self, ha):
        self.ha = ha
        config = ha.config
        self.allow_list = AllowList(config.get("haSlaveAllowList", ""))
        self.tls = None
        if config.get("haTlsEnable"):
            self.tls = tls_factory(tls_options(config), False, _Connections(ha), ha.reactor)

    def buildProtocol(self, addr):
        if addr is not None and not self.allow_list.allows(addr.host):
            self.ha.refuse(addr, "not in haSlaveAllowList")
            return None  # Twisted closes the connection
        if self.tls is None:
            return HAMasterConnection(self.ha)
        return TLSOrPlain(self, addr)


class _Connections(protocol.Factory):
    """:class:`HAMasterConnection` for every peer (the allow-list is checked before)."""

    noisy = False

    def __init__(self, ha):
        self.ha = ha

    def buildProtocol(self, addr):
        return HAMasterConnection(self.ha)


class TLSOrPlain(protocol.Protocol):
    """A connection to the HA port with ``haTlsEnable``: a TLS ClientHello goes to TLS (the
    slave's certificate must chain to ``haTlsTrustCertPath``), plain TCP (a Java slave) is
    accepted only from a non-empty ``haSlaveAllowList``. A peer that neither sends a byte
    nor completes the handshake within ``haHousekeepingInterval`` is closed."""

    def __init__(self, factory, addr):
        self.factory = factory
        self.addr = addr
        self.inner = None
        self._deadline = None

    def connectionMade(self):
        ha = self.factory.ha
        self._deadline = ha.reactor.callLater(ha.config["haHousekeepingInterval"] / 1000.0,
                                              self._too_slow)

    def _too_slow(self):
        self._deadline = None
        connection = getattr(self.inner, "wrappedProtocol", self.inner)
        if connection is None or connection.replica is None:
            self.factory.ha.refuse(self.addr, "no TLS handshake within haHousekeepingInterval")
            if connection is not None:
                connection.closed = True  # refused here: its connectionLost says nothing
            self.transport.abortConnection()

    def dataReceived(self, data):
        if self.inner is None:
            if data[:1] == TLS_RECORD_HANDSHAKE:
                self.inner = self.factory.tls.buildProtocol(self.addr)
            elif self.factory.allow_list:
                self.inner = HAMasterConnection(self.factory.ha)
            else:
                self.factory.ha.refuse(self.addr, "plain TCP while haTlsEnable is set and "
                                                  "haSlaveAllowList is empty")
                self.transport.abortConnection()
                return
            self.inner.makeConnection(self.transport)
        self.inner.dataReceived(data)

    def connectionLost(self, reason=protocol.connectionDone):
        if self._deadline is not None and self._deadline.active():
            self._deadline.cancel()
        self._deadline = None
        if self.inner is not None:
            self.inner.connectionLost(reason)


class HAMasterService(service.Service):
    """HA listener and replica waits of the master ``controller`` (its store and reactor)."""

    def __init__(self, controller):
        self.controller = controller
        self.config = controller.config
        self.reactor = controller.reactor
        self.store = controller.store
        self.batch_size = self.config["haTransferBatchSize"]
        self.heartbeat_interval = self.config["haSendHeartbeatInterval"]
        self.slave_timeout = self.config["slaveTimeout"]
        self.table = ReplicaTable(self.config, self.now())
        self.waits = GroupTransferWaits()
        #: sends answered FLUSH_SLAVE_TIMEOUT since start (for the metrics)
        self.transfer_timeouts = 0
        self.factory = HAMasterFactory(self)
        self.listening_port = None
        self._deadline_timer = None
        self._deadline_at = None  # ms: when the armed deadline timer fires
        self._tick = task.LoopingCall(self.tick)
        self._tick.clock = self.reactor
        self._diff_log = task.LoopingCall(self.log_master_and_slave_diff)
        self._diff_log.clock = self.reactor
        self._diff_log_start = None

    def now(self):
        return int(self.reactor.seconds() * 1000)

    @property
    def port(self):
        """The HA port actually listened on."""
        return self.listening_port.getHost().port

    # -- lifecycle

    def privilegedStartService(self):
        """Listen on ``haListenPort`` before the reactor runs (twistd), so that a port in use
        stops the start."""
        super().privilegedStartService()
        self._listen()

    def startService(self):
        super().startService()
        if self.listening_port is None:
            self._listen()
        log.info("HA service listening on port {port}", port=self.port)
        self.store.replica_waiter = self.wait_for_replica
        self.store.runtime_info_providers.append(self.runtime_info)
        self.controller.ha_runtime_info = self.ha_runtime_info
        self.store.append_listeners.append(self._on_appended)
        self._tick.start(TICK_SECONDS, now=False)
        self._diff_log_start = self.reactor.callLater(
            DIFF_LOG_FIRST_SECONDS, self._diff_log.start, DIFF_LOG_SECONDS, True)

    def _listen(self):
        self.listening_port = self.reactor.listenTCP(
            self.config["haListenPort"], self.factory, interface=self.config.get("bindAddress", ""),
            backlog=server_setting(self.config, "serverSocketBacklog"))

    def stopService(self):
        super().stopService()
        if self.store.replica_waiter == self.wait_for_replica:
            self.store.replica_waiter = None
        _remove(self.store.runtime_info_providers, self.runtime_info)
        if self.controller.ha_runtime_info == self.ha_runtime_info:
            self.controller.ha_runtime_info = None
        _remove(self.store.append_listeners, self._on_appended)
        for timer in (self._deadline_timer, self._diff_log_start):
            if timer is not None and timer.active():
                timer.cancel()
        self._deadline_timer = self._deadline_at = None
        for loop in (self._tick, self._diff_log):
            if loop.running:
                loop.stop()
        for connection in list(self.table.replicas):
            connection.close("the master is stopping")
        _answer(self.waits.take_all(), PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
        port, self.listening_port = self.listening_port, None
        return defer.maybeDeferred(port.stopListening) if port is not None else None

    # -- connections

    def register(self, connection, addr):
        log.info("HAService receive new connection, {addr}", addr=addr)
        return self.table.register(connection, addr, self.now())

    def refuse(self, addr, why):
        """The one log line of a peer the HA port does not serve (its connection is closed)."""
        log.warn("HA port refuses {addr}: {why}",
                 addr="%s:%s" % (addr.host, addr.port) if addr is not None else "?", why=why)

    def unregister(self, connection):
        if self.table.unregister(connection) is not None:
            log.info("HA connection of slave[{addr}] removed", addr=connection.addr)

    def on_report(self, connection, offset):
        store = self.store
        max_offset = store.get_max_phy_offset()
        now = int(self.reactor.seconds() * 1000)  # now(), without the call: every ack
        outcome = self.table.report(connection, offset, now, max_offset,
                                    store.get_min_phy_offset)
        refused = _REFUSALS.get(outcome.kind)
        if refused is not None:
            connection.close(refused % {"offset": offset, "max": max_offset,
                                        "sent": connection.replica.transfer_from_where})
            return
        if outcome.regressed is not None:
            self._warn_regressed(connection, offset, outcome.regressed, now)
        for stale in outcome.retired:
            stale.close("retired: %s of the same host reported and this one is silent"
                        % connection.addr)
        if outcome.kind is ReportKind.REQUEST:
            log.info("slave[{addr}] request offset {offset}", addr=connection.addr, offset=offset)
            if outcome.below_min:
                log.warn("slave[{addr}] requests offset {offset}, below the oldest kept "
                         "commit-log offset {start}: sending from {start}",
                         addr=connection.addr, offset=offset, start=outcome.start)
            log.info("master transfer data from {start} to slave[{addr}], and slave request "
                     "{offset}", start=outcome.start, addr=connection.addr, offset=offset)
            connection.pump()
        self._answer_acks()

    def _warn_regressed(self, connection, offset, previous, now):
        """A report below the connection's previous one, logged at most once per
        :data:`~rmqproto.ha.replicas.REPEATED_WARNING_INTERVAL` per connection."""
        allowed, held_back = connection.replica.warnings.allow("regressed", now)
        if allowed:
            log.warn("slave[{addr}] reported offset {offset}, below its previous report "
                     "{previous} ({held_back} more such reports since the last warning)",
                     addr=connection.addr, offset=offset, previous=previous,
                     held_back=held_back)

    def skip_removed_data(self, replica):
        """When retention removed the data at the replica's next offset, go on from the
        oldest kept offset (logged) instead of waiting forever for data that is gone; True
        then."""
        oldest = self.store.get_min_phy_offset()
        if not 0 <= replica.transfer_from_where < oldest:
            return False
        log.warn("slave[{addr}] needs offset {offset}, below the oldest kept commit-log "
                 "offset {oldest}: sending from {oldest}", addr=replica.addr,
                 offset=replica.transfer_from_where, oldest=oldest)
        replica.transfer_from_where = replica.transfer_start = oldest
        return True

    def _on_appended(self):
        """The store's append listener (once at the end of a turn that appended): new bytes
        for the connected slaves (a slave that connects later is pumped from its own
        report)."""
        for connection in list(self.table.replicas):
            connection.pump()

    def tick(self):
        """Every second: close silent connections (housekeeping), send heartbeats, and
        pump (a safety net behind the arrival wake-ups)."""
        now = self.now()
        for connection in self.table.expired(now):
            connection.close("ha housekeeping: nothing read for %d ms"
                             % (now - connection.replica.last_read))
        for connection in list(self.table.replicas):
            connection.pump()
            connection.tick(now)

    # -- group transfer (SYNC_MASTER)

    def wait_for_replica(self, next_offset, then, token):
        """``store.replica_waiter``: the status when it is decided at once (SLAVE_NOT_AVAILABLE
        when no slave is OK, PUT_OK when a slave acked ``next_offset`` already), else None
        and, once, ``then(status, token)``: PUT_OK when a slave acks ``next_offset``,
        FLUSH_SLAVE_TIMEOUT after ``slaveTimeout`` ms or when the service stops."""
        now = int(self.reactor.seconds() * 1000)  # now(), without the call: every put asks
        table = self.table
        if not table.is_slave_ok(next_offset, now):
            return PutMessageStatus.SLAVE_NOT_AVAILABLE
        if table.push2slave_max_offset >= next_offset:
            return PutMessageStatus.PUT_OK
        deadline = now + self.slave_timeout
        self.waits.add(next_offset, deadline, (then, token))
        # the armed timer already fires early enough unless the clock stepped back
        if self._deadline_at is None or deadline < self._deadline_at:
            self._arm_deadline()
        # a slave with nothing in flight is sent the put's bytes now, as Java's transfer
        # thread wakes on each put; while a transfer is unacked, the turn's puts go together
        # at its end (_on_appended)
        for connection in list(table.replicas):
            replica = connection.replica
            if replica.slave_ack_offset >= replica.transfer_from_where:
                connection.pump()
        return None

    def _answer_acks(self):
        acked = self.waits.acked(self.table.push2slave_max_offset)
        if len(acked) > 1:
            with gathered_writes():  # one ack often answers several sends of one connection
                _answer(acked, PutMessageStatus.PUT_OK)
        elif acked:  # a lone answer has nothing to gather with
            _answer(acked, PutMessageStatus.PUT_OK)

    def _arm_deadline(self):
        """Arm the timer for the earliest deadline (``_deadline_at``, ms), unless it is."""
        deadline = self.waits.next_deadline()
        if deadline is None:
            return
        timer = self._deadline_timer
        if timer is not None and timer.active():
            if self._deadline_at <= deadline:
                return
            timer.cancel()
        self._deadline_at = deadline
        self._deadline_timer = self.reactor.callLater(
            max(deadline / 1000.0 - self.reactor.seconds(), 0), self._expire)

    def _expire(self):
        self._deadline_timer = self._deadline_at = None
        expired = self.waits.expired(self.now())
        if expired:
            self.transfer_timeouts += len(expired)
            log.warn("{count} sends waited {ms} ms for a slave ack: FLUSH_SLAVE_TIMEOUT",
                     count=len(expired), ms=self.slave_timeout)
        _answer(expired, PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
        self._arm_deadline()

    # -- observability

    def runtime_info(self):
        """GET_BROKER_RUNTIME_INFO entries (``store.runtime_info_providers``)."""
        return self.table.runtime_info(self.store.get_max_phy_offset(), self.now())

    def ha_runtime_info(self):
        """GET_BROKER_HA_STATUS's body (``controller.ha_runtime_info``)."""
        return self.table.ha_runtime_info(self.store.get_max_phy_offset(), self.now())

    def log_master_and_slave_diff(self):
        """``printMasterAndSlaveDiff``, plus one line per slave."""
        max_offset = self.store.get_max_phy_offset()
        now = self.now()
        log.info("Slave fall behind master: {diff} bytes",
                 diff=max_offset - self.table.push2slave_max_offset)
        for replica in self.table.replicas.values():
            log.info("slave[{addr}] ack offset {ack}, {lag} bytes behind, {state}",
                     addr=replica.addr, ack=replica.slave_ack_offset,
                     lag=max_offset - max(replica.slave_ack_offset, 0),
                     state="live" if self.table.is_live(replica, now) else "silent")


#: Why a report closes its connection (``ReportKind`` -> message).
_REFUSALS = {
    ReportKind.BEYOND_MAX: "slave offset %(offset)d greater than local commitLog offset %(max)d",
    ReportKind.BEYOND_SENT: "slave acks offset %(offset)d but was sent only up to %(sent)d: "
                            "a forged acknowledgement",
    ReportKind.NEGATIVE: "negative slave offset %(offset)d",
}


def _answer(waits, status):
    """``then(status, token)`` of each wait; one that raises is logged and the rest go on."""
    for then, token in waits:
        try:
            then(status, token)
        except Exception:
            log.failure("answering a SYNC_MASTER send waiting for a slave ack")


def _remove(items, item):
    if item in items:
        items.remove(item)
