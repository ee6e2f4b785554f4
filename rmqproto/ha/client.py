"""The slave's HA client as a pure state machine (``HAService.HAClient``; RMQ5 ``DefaultHAClient``).

No sockets and no clock: the caller passes ``now`` (seconds) with every event and carries
out the actions returned (:class:`Connect`, :class:`Send`, :class:`Close`); it asks
:meth:`HAClient.get_timer` when to call :meth:`HAClient.handle_timer` next.

States are RMQ5's :class:`~rmqproto.codec.ha.HAConnectionState`: READY (no connection;
connecting or waiting to retry), TRANSFER (connected, appending what the master sends),
SHUTDOWN. Any error goes back to READY; every change is logged.

Differences from Java, on purpose:

* the first report is sent as soon as the connection is made (Java waits about
  ``haSendHeartbeatInterval``, so its master starts ~5 s late);
* one report per batch of received bytes that grew the offset (Java: one per transfer);
* reconnecting waits 1 s, doubling after each failed attempt up to 5 s (Java: always 5 s);
* a transfer starting at a segment-start offset ahead of the slave's max offset (a master
  that no longer keeps the slave's position restarting it at its oldest file) re-seeds
  the slave's store there when the master is the operator's ``haMasterAddress``: the old
  commit log and consume queues are moved aside, never deleted, and where is logged
  (Java: the slave is stuck forever); from a master learned from a NameServer it is a
  mismatch;
* the records received are checked before they are acknowledged
  (:func:`~rmqproto.ha.framing.check_records`): after the first report (the request, the
  store's max offset) every report is the end of the last whole record that passed; a
  record that does not pass is cut from the commit log with everything after it, and the
  connection is closed (it reconnects and asks again from there). Java appends and
  acknowledges whatever arrives.
"""

from collections import namedtuple

from twisted.logger import Logger

from rmqproto.codec.bodies.ha import HAClientRuntimeInfo
from rmqproto.codec.ha import HAConnectionState, TransferReader, encode_slave_report
from rmqproto.errors import CodecError
from rmqproto.ha.flowcontrol import FlowMonitor
from rmqproto.ha.framing import records_checker

__all__ = ["Connect", "Send", "Close", "HAClient", "RECONNECT_FIRST_DELAY", "RECONNECT_MAX_DELAY"]

log = Logger()

#: Seconds before the first reconnection attempt; doubled after each failure.
RECONNECT_FIRST_DELAY = 1.0
#: Longest wait between attempts (Java's fixed 5 s).
RECONNECT_MAX_DELAY = 5.0

#: Open a TCP connection to the master's HA ``address`` ("host:port").
Connect = namedtuple("Connect", "address")
#: Write ``data`` to the connection.
Send = namedtuple("Send", "data")
#: Close the connection; ``reason`` has been logged.
Close = namedtuple("Close", "reason")


class HAClient:
    """Replicates the master's commit log into ``store``.

    ``store`` provides ``get_max_phy_offset()``, ``append_to_commit_log(offset, data)`` and
    ``reset_commit_log(offset)``, and to check records ``commit_log_view(offset, size)``
    and ``truncate_replicated(offset)``; ``config`` gives
    ``mappedFileSizeCommitLog``, ``haSendHeartbeatInterval`` and ``haHousekeepingInterval``
    (ms). ``check_records=False`` appends and acknowledges what arrives unchecked (as Java
    does; tests of the stream's mechanics with arbitrary bytes).
    """

    def __init__(self, store, config, check_records=True):
        self.store = store
        self._walk = records_checker() if check_records else None
        #: where the last whole record checked ends (None until the first connection)
        self.checked = None
        self.file_size = config["mappedFileSizeCommitLog"]
        self.heartbeat_interval = config["haSendHeartbeatInterval"] / 1000.0
        configured = config.get("haMasterAddress") or ""
        #: the operator's ``haMasterAddress`` (Java's rule: used when 6 characters or more)
        self.configured_master = configured if len(configured) >= 6 else None
        self.housekeeping_interval = config["haHousekeepingInterval"] / 1000.0
        self.state = HAConnectionState.READY
        self.master_ha_address = None
        self.current_reported_offset = 0
        self.last_read_timestamp = 0.0
        self.last_write_timestamp = 0.0
        self.transferred_bytes = 0
        #: counts the bytes received per second (never caps: a slave does not throttle)
        self.flow = FlowMonitor(False, 0, 0)
        self._started = False
        self._connecting = False
        self._reader = None
        self._retry_at = None
        self._failures = 0
        self._receiver = False  # a receive thread reads the connection and reports

    # ------------------------------------------------------------ state

    @property
    def connected(self):
        return self.state is HAConnectionState.TRANSFER

    def _change_state(self, state):
        if state is not self.state:
            log.info("HAClient change state to {state}", state=state.name)
            self.state = state

    def _schedule_retry(self, now):
        delay = min(RECONNECT_FIRST_DELAY * 2 ** self._failures, RECONNECT_MAX_DELAY)
        self._failures += 1
        self._retry_at = now + delay

    def _maybe_connect(self, now):
        if (not self._started or self.state is not HAConnectionState.READY or self._connecting
                or self.master_ha_address is None
                or (self._retry_at is not None and now < self._retry_at)):
            return []
        self._connecting = True
        self._retry_at = None
        return [Connect(self.master_ha_address)]

    def _report(self, now, offset=None):
        """Report ``offset``: by default what the slave acknowledges (:attr:`acked`)."""
        self.current_reported_offset = self.acked if offset is None else offset
        self.last_write_timestamp = now
        return Send(encode_slave_report(self.current_reported_offset))

    @property
    def acked(self):
        """What a report acknowledges: the end of the records checked, or without checks
        the store's max offset."""
        if self._walk is None:
            return self.store.get_max_phy_offset()
        return self.checked

    def _close(self, reason, now):
        log.error("HAClient closes the connection with master {address}: {reason}",
                  address=self.master_ha_address, reason=reason)
        self._reader = None
        self._receiver = False
        self._change_state(HAConnectionState.READY)
        self._schedule_retry(now)
        return [Close(reason)]

    # ------------------------------------------------------------ events

    def start(self, now):
        """Begin: connect as soon as the master's HA address is known."""
        self._started = True
        return self._maybe_connect(now)

    def update_master_address(self, address, now):
        """A new HA address of the master (registration or ``haMasterAddress``).

        An open connection is kept (as Java does); the new address is used next time.
        """
        if address and address != self.master_ha_address:
            log.info("update master ha address, OLD: {old} NEW: {new}",
                     old=self.master_ha_address, new=address)
            self.master_ha_address = address
        return self._maybe_connect(now)

    def connect_failed(self, reason, now):
        self._connecting = False
        log.warn("HAClient connect to master {address} failed: {reason}",
                 address=self.master_ha_address, reason=reason)
        if self.state is not HAConnectionState.SHUTDOWN:
            self._schedule_retry(now)
        return []

    def connection_made(self, now):
        """Connected: TRANSFER, and report the max offset at once."""
        self._connecting = False
        if self.state is HAConnectionState.SHUTDOWN:
            return [Close("shutting down")]
        log.info("HAClient connect to master {address}", address=self.master_ha_address)
        self._change_state(HAConnectionState.TRANSFER)
        self._reader = TransferReader()
        self.last_read_timestamp = now
        max_offset = self.store.get_max_phy_offset()
        if self.checked is None:  # a recovered store ends with a whole record
            self.checked = max_offset
        return [self._report(now, max_offset)]  # the request: where the log ends

    def connection_lost(self, reason, now):
        """The connection closed (not by a :class:`Close` of ours, which already went READY)."""
        if self.state is HAConnectionState.TRANSFER:
            log.info("HAClient close connection with master {address}: {reason}",
                     address=self.master_ha_address, reason=reason)
            self._reader = None
            self._receiver = False
            self._change_state(HAConnectionState.READY)
            self._schedule_retry(now)
        return []

    def data_received(self, data, now):
        """Append what the master sent at exactly the offsets it names; report growth."""
        if self._reader is None:
            return []
        self._received(len(data), now)
        return self._take(data, now)

    def _received(self, count, now):
        self.last_read_timestamp = now
        self.transferred_bytes += count
        self.flow.add(count, int(now * 1000))

    def _take(self, data, now):
        """Append the transfers in ``data`` (read and counted); report growth."""
        try:
            pieces = self._reader.feed(data)
        except CodecError as exc:
            return self._close("bad transfer header: %s" % exc, now)
        for piece in pieces:
            refused = self._append(piece, now)
            if refused:
                return refused
        if self._walk is not None:
            refused = self._check_received(now)
            if refused:
                return refused
        if self.acked > self.current_reported_offset:
            self._failures = 0
            return [self._report(now)]
        return []

    def _check_received(self, now):
        """Walk the records appended since :attr:`checked`; a refused one is cut."""
        store = self.store
        end = store.get_max_phy_offset()
        checked = self.checked
        while checked < end:
            view = store.commit_log_view(checked, end - checked)  # up to a segment end
            if view is None:
                break
            with view:
                size = len(view)
                stop, why = self._walk(view, 0, size, checked, self.file_size, True)
            checked += stop
            if why is not None:
                return self._refuse(checked, why, now)
            if stop < size:
                break
        self.checked = checked
        return None

    def _refuse(self, offset, why, now):
        """The record at ``offset`` did not pass: cut the log back to it, close."""
        self.checked = offset
        if self.store.get_max_phy_offset() > offset and not self.store.truncate_replicated(offset):
            return self._close("refused the record at %d (%s) and cannot cut the commit log "
                               "back to it" % (offset, why), now)
        return self._close("refused the record at %d: %s; the commit log is cut back to %d, "
                           "the end of the last good record" % (offset, why, offset), now)

    def _append(self, piece, now):
        slave_offset = self.store.get_max_phy_offset()
        if slave_offset == 0 and self._walk is not None:
            self.checked = piece.offset  # an empty slave starts where the master says
        if slave_offset != 0 and slave_offset != piece.offset:
            if piece.offset > slave_offset and piece.offset % self.file_size == 0:
                refused = self._reseed(piece.offset, slave_offset, now)
                if refused:
                    return refused
            else:
                return self._close("master pushed offset not equal the max phy offset in slave, "
                                   "SLAVE: %d MASTER: %d" % (slave_offset, piece.offset), now)
        if piece.data and not self.store.append_to_commit_log(piece.offset, piece.data):
            return self._close("cannot append %d bytes at %d (slave max offset %d)"
                               % (len(piece.data), piece.offset, slave_offset), now)
        return None

    def _reseed(self, offset, slave_offset, now):
        """The master restarts this slave at ``offset``, a segment start ahead of it: only
        the operator's ``haMasterAddress`` may, and the old files are moved aside."""
        if self.master_ha_address != self.configured_master:
            return self._close("master sends from %d, the start of a commit-log file ahead of "
                               "this slave's max offset %d; only the master named by "
                               "haMasterAddress may re-seed a slave, so the store is left as "
                               "it is" % (offset, slave_offset), now)
        moved = self.store.reset_commit_log(offset)
        if not moved:
            return self._close("cannot restart the commit log at %d" % offset, now)
        log.error("master sends from {master}, the start of a commit-log file ahead of this "
                  "slave's max offset {slave}: the slave's commit log and consume queues were "
                  "moved aside to {moved}, replication continues at {master}",
                  master=offset, slave=slave_offset, moved=", ".join(moved))
        self.checked = offset
        return None

    # ------------------------------------------------------------ a receive thread

    def receive_point(self):
        """Where a receive thread (:mod:`rmqproto.ha.receiver`) may take the connection
        over now: ``(segment, header, remaining)``, the store's :meth:`replication_segment`
        (open, not full), the bytes of a header read so far and the bytes of a body still
        to come (which must fit the segment); None when not in TRANSFER or not there."""
        if self.state is not HAConnectionState.TRANSFER or self._reader is None:
            return None
        segment = self.store.replication_segment()
        if segment is None:
            return None
        header, offset, remaining = self._reader.pending()
        end = segment.file_from_offset + segment.wrote_position
        if remaining and (offset != end or remaining > segment.file_size - segment.wrote_position):
            return None
        if self._walk is not None and not segment.file_from_offset <= self.checked <= end:
            return None
        return segment, header, remaining

    @property
    def checking(self):
        """Whether received records are checked before they are acknowledged."""
        return self._walk is not None

    def receiver_started(self):
        """A receive thread took the stream where :meth:`receive_point` said; it reads the
        connection, appends and reports (heartbeats too) until :meth:`receiver_ended` or
        the connection closes."""
        self._receiver = True
        self._reader = TransferReader()  # the thread hands back from a header on

    def receiver_progress(self, end, read_bytes, reported, reports, now):
        """The thread wrote the commit log up to ``end``, read ``read_bytes`` and sent
        ``reports`` reports (the last of ``reported``) since the last call."""
        if end > self.store.get_max_phy_offset() and not self.store.appended_in_place(end):
            return self._close("cannot take the bytes received up to %d" % end, now)
        if read_bytes:
            self._received(read_bytes, now)
        if reports:
            self.current_reported_offset = reported
            self.last_write_timestamp = now
            self._failures = 0
            if self._walk is not None:  # the thread reports the end of what it checked
                self.checked = max(self.checked, reported)
        return []

    def receiver_refused(self, offset, why, now):
        """The thread refused the record at ``offset`` (it published nothing after it)."""
        self._receiver = False
        return self._refuse(offset, why, now)

    def receiver_ended(self, leftover, now):
        """The thread returned on its own; ``leftover`` (the bytes it read from a header
        on that it does not handle) is taken as read here."""
        self._receiver = False
        if not leftover or self._reader is None:
            return []
        return self._take(leftover, now)  # read and counted by the thread

    def get_timer(self):
        """When :meth:`handle_timer` is due next (seconds), or None."""
        if self.state is HAConnectionState.TRANSFER:
            housekeeping = self.last_read_timestamp + self.housekeeping_interval
            if self._receiver:
                return housekeeping
            return min(self.last_write_timestamp + self.heartbeat_interval, housekeeping)
        if self.state is HAConnectionState.READY and self._started and not self._connecting \
                and self.master_ha_address is not None:
            return self._retry_at
        return None

    def handle_timer(self, now):
        """Housekeeping (silence for ``haHousekeepingInterval``), heartbeat reports, retries."""
        if self.state is HAConnectionState.TRANSFER:
            if now >= self.last_read_timestamp + self.housekeeping_interval:
                return self._close("housekeeping: nothing read from the master for %d ms"
                                   % ((now - self.last_read_timestamp) * 1000), now)
            if not self._receiver and now >= self.last_write_timestamp + self.heartbeat_interval:
                return [self._report(now)]
            return []
        return self._maybe_connect(now)

    def shutdown(self):
        """SHUTDOWN: close the connection, never connect again."""
        was_connected = self.connected
        self._reader = None
        self._receiver = False
        self._change_state(HAConnectionState.SHUTDOWN)
        return [Close("shutdown")] if was_connected else []

    # ------------------------------------------------------------ observability

    def runtime_info(self):
        """RMQ5 ``HARuntimeInfo.HAClientRuntimeInfo`` fields as GET_BROKER_RUNTIME_INFO entries."""
        return {
            "haClientState": self.state.name,
            "haClientMasterAddr": self.master_ha_address or "",
            "haClientMaxOffset": str(self.store.get_max_phy_offset()),
            "haClientReportedOffset": str(self.current_reported_offset),
            "haClientLastReadTimestamp": str(int(self.last_read_timestamp * 1000)),
            "haClientLastWriteTimestamp": str(int(self.last_write_timestamp * 1000)),
            "haClientTransferredBytes": str(self.transferred_bytes),
        }

    def ha_client_runtime_info(self, now):
        """RMQ5 ``HARuntimeInfo.HAClientRuntimeInfo``; ``masterFlushOffset`` stays 0, as a
        RocketMQ 5 slave's does unless ``syncMasterFlushOffsetWhenStartup`` is set."""
        return HAClientRuntimeInfo(
            master_addr=self.master_ha_address,
            transferred_byte_in_second=self.flow.speed(int(now * 1000)),
            max_offset=self.store.get_max_phy_offset(),
            last_read_timestamp=int(self.last_read_timestamp * 1000),
            last_write_timestamp=int(self.last_write_timestamp * 1000))
