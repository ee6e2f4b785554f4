"""The slave's HA service (``HAService.HAClient``; ``docs/ha-slave.md``): the HA client on a TCP connection and
the metadata sync.

:class:`HAClientConnector` carries out the actions of the pure
:class:`~rmqproto.ha.client.HAClient` (connect, write, close) and drives its timer; between
transfers it hands the connection to a receive thread (:mod:`rmqproto.ha.receiver`) when
the C loop is built, and takes it back when the loop ends;
:class:`HASlaveService` feeds it the master's addresses from the broker's NameServer
registration (or ``haMasterAddress``), runs :class:`~rmqproto.broker.slavesync.SlaveSynchronize`
and adds the client's state to GET_BROKER_RUNTIME_INFO.
"""

import os

from twisted.application import service
from twisted.internet import protocol
from twisted.logger import Logger

from rmqproto.broker.slavesync import SlaveSynchronize
from rmqproto.codec.bodies.ha import HARuntimeInfo
from rmqproto.ha import receiver
from rmqproto.ha.client import Close, Connect, HAClient, Send
from rmqproto.ha.tls import tls_factory, tls_options
from rmqproto.remoting.client import connect
from rmqproto.remoting.sendnow import plain_and_idle, send_now

__all__ = ["HAClientProtocol", "HAClientConnector", "HASlaveService", "CONNECT_TIMEOUT",
           "READ_SIZE", "SMALL_READ_SIZE"]

log = Logger()

#: Seconds a connection attempt to the master's HA port may take.
CONNECT_TIMEOUT = 3.0
#: Bytes one read of the HA connection takes at most while catching up, instead of
#: Twisted's 64 KiB: fewer reads, appends, offset reports and reput slices per megabyte
#: (Java reads into a 4 MiB buffer, ``READ_MAX_BUFFER_SIZE``; 4 MiB reads cost Python a
#: fresh 4 MiB buffer each).
READ_SIZE = 1024 * 1024
#: Bytes a read asks for while the master's transfers are small (SYNC_MASTER sends): a
#: ``recv`` buffer this size comes from the heap, where a 1 MiB one costs an ``mmap``,
#: ``mremap`` and ``munmap`` per read. A read that fills it switches to :data:`READ_SIZE`,
#: a read shorter than it switches back.
SMALL_READ_SIZE = 64 * 1024


class HAClientProtocol(protocol.Protocol):
    """One connection to the master's HA port; events go to its connector."""

    def __init__(self, connector):
        self.connector = connector
        self._sized = False

    def connectionMade(self):
        # reports are 8 bytes: without TCP_NODELAY one waits for the ACK of the one before
        # (Java's RemotingUtil.connect sets it too)
        set_no_delay = getattr(self.transport, "setTcpNoDelay", None)
        if set_no_delay is not None:
            set_no_delay(True)
        self._sized = hasattr(self.transport, "bufferSize")  # what one doRead asks recv for
        if self._sized:
            self.transport.bufferSize = SMALL_READ_SIZE
        self.connector.connection_made(self)

    def dataReceived(self, data):
        if self._sized:
            size = len(data)
            if size >= self.transport.bufferSize:
                self.transport.bufferSize = READ_SIZE
            elif size < SMALL_READ_SIZE:
                self.transport.bufferSize = SMALL_READ_SIZE
        self.connector.data_received(self, data)

    def connectionLost(self, reason=protocol.connectionDone):
        self.connector.connection_lost(self, reason)


class _Factory(protocol.Factory):
    noisy = False

    def __init__(self, connector):
        self.connector = connector

    def buildProtocol(self, addr):
        return HAClientProtocol(self.connector)


class HAClientConnector:
    """Runs ``client`` (an :class:`~rmqproto.ha.client.HAClient`) on ``reactor``; with
    ``receive_thread`` (the default where the C loop is built) a plain TCP connection is
    read by a :class:`~rmqproto.ha.receiver.ReceiveThread` between transfers. With ``tls``
    (:func:`~rmqproto.ha.tls.tls_options`) it connects with TLS and a client certificate,
    and the reactor reads every byte."""

    def __init__(self, client, reactor, receive_thread=None, tls=None):
        self.client = client
        self.reactor = reactor
        self.protocol = None  # the current connection
        self.receive_thread = receiver.available() if receive_thread is None else receive_thread
        self._receive = None  # the ReceiveThread reading self.protocol's connection
        self._attempt = None
        self._timer = None
        self._factory = _Factory(self)
        if tls is not None:
            self._factory = tls_factory(tls, True, self._factory, reactor)

    def _now(self):
        return self.reactor.seconds()

    def _run(self, actions):
        for action in actions:
            if isinstance(action, Connect):
                self._connect(action.address)
            elif isinstance(action, Send):
                if self.protocol is not None:
                    send_now(self.protocol.transport, action.data)
            elif isinstance(action, Close):
                self._stop_receiving()
                current, self.protocol = self.protocol, None
                if current is not None:
                    current.transport.abortConnection()
        self._arm_timer()

    def _connect(self, address):
        try:
            self._attempt = connect(self.reactor, address, self._factory, CONNECT_TIMEOUT)
        except ValueError as exc:
            self._run(self.client.connect_failed(str(exc), self._now()))
            return

        def failed(failure):
            self._attempt = None
            self._run(self.client.connect_failed(failure.getErrorMessage(), self._now()))

        self._attempt.addCallbacks(lambda _: setattr(self, "_attempt", None), failed)

    def _arm_timer(self):
        deadline = self.client.get_timer()
        if deadline is None:
            return
        if self._timer is not None and self._timer.active():
            if self._timer.getTime() <= deadline:
                return  # fires early at worst: handle_timer then only re-arms
            self._timer.cancel()
        self._timer = self.reactor.callLater(max(deadline - self._now(), 0), self._on_timer)

    def _on_timer(self):
        self._timer = None
        self._run(self.client.handle_timer(self._now()))

    # ------------------------------------------------------------ the receive thread

    def _start_receiving(self):
        """Hand the connection to a receive thread if the client is at a point to."""
        if self._receive is not None or not self.receive_thread or self.protocol is None:
            return
        transport = self.protocol.transport
        if not plain_and_idle(transport):
            return
        point = self.client.receive_point()
        if point is None:
            return
        segment, header, remaining = point
        arguments = {
            "fd": transport.fileno(), "segment": segment.mm,
            "segment_from": segment.file_from_offset,
            "end": segment.file_from_offset + segment.wrote_position,
            "reported": self.client.current_reported_offset,
            "heartbeat_ms": max(1, round(self.client.heartbeat_interval * 1000)),
            "header": header, "body_remaining": remaining,
        }
        if self.client.checking:
            arguments.update(checked=self.client.checked, check_crc=True)
        transport.stopReading()
        self._receive = receiver.ReceiveThread(self.reactor, receiver.new_loop(arguments),
                                               self._received, self._receive_ended)
        self.client.receiver_started()
        self._receive.start()
        self._arm_timer()

    def _stop_receiving(self):
        receive, self._receive = self._receive, None
        if receive is not None:
            receive.stop()

    def _received(self, end, read_bytes, reported, reports):
        self._run(self.client.receiver_progress(end, read_bytes, reported, reports,
                                                self._now()))

    def _receive_ended(self, outcome, leftover, error):
        receive, self._receive = self._receive, None
        proto = self.protocol
        if proto is None:
            return
        if outcome == "bad record":
            offset, why = receive.refusal
            self._run(self.client.receiver_refused(offset, why, self._now()))
            return
        if outcome == "failed":
            log.warn("HA receive thread: the connection to master {address} failed: {error}",
                     address=self.client.master_ha_address, error=os.strerror(error))
            proto.transport.abortConnection()  # connectionLost tells the client
            return
        proto.transport.startReading()  # the master's close is then read as any close is
        self._run(self.client.receiver_ended(leftover, self._now()))
        if outcome == "handed back":
            self._start_receiving()

    # ------------------------------------------------------------ from the protocol

    def connection_made(self, proto):
        self.protocol = proto
        self._run(self.client.connection_made(self._now()))
        self._start_receiving()

    def data_received(self, proto, data):
        if proto is self.protocol:
            self._run(self.client.data_received(data, self._now()))
            self._start_receiving()

    def connection_lost(self, proto, reason):
        if proto is self.protocol:
            self._stop_receiving()
            self.protocol = None
            self._run(self.client.connection_lost(reason.getErrorMessage(), self._now()))

    # ------------------------------------------------------------ life cycle

    def start(self):
        self._run(self.client.start(self._now()))

    def update_master_address(self, address):
        self._run(self.client.update_master_address(address, self._now()))

    def shutdown(self):
        if self._attempt is not None:
            self._attempt.cancel()
        self._stop_receiving()
        self._run(self.client.shutdown())
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None


class HASlaveService(service.Service):
    """HA client and metadata sync of the slave ``controller``."""

    def __init__(self, controller):
        super().__init__()
        self.controller = controller
        config = controller.config
        self.client = HAClient(controller.store, config)
        self.connector = HAClientConnector(
            self.client, controller.reactor,
            tls=tls_options(config) if config.get("haTlsEnable") else None)
        self.slave_sync = SlaveSynchronize(controller)

    def master_changed(self, master_addr, ha_master_address):
        """A registration answer named the master (``BrokerRegistration.master_listeners``)."""
        if master_addr != self.slave_sync.master_addr:
            log.info("slave synchronizes from master {addr}", addr=master_addr)
        self.slave_sync.master_addr = master_addr
        if ha_master_address:
            self.connector.update_master_address(ha_master_address)

    def runtime_info(self):
        info = self.client.runtime_info()
        info["masterAddr"] = self.slave_sync.master_addr or ""
        return info

    def ha_runtime_info(self):
        """GET_BROKER_HA_STATUS's body (``controller.ha_runtime_info``): the HA client's state."""
        return HARuntimeInfo(ha_client_runtime_info=self.client.ha_client_runtime_info(
            self.controller.reactor.seconds()))

    def startService(self):
        super().startService()
        registration = self.controller.registration
        registration.master_listeners.append(self.master_changed)
        self.controller.store.runtime_info_providers.append(self.runtime_info)
        self.controller.ha_runtime_info = self.ha_runtime_info
        self.connector.start()
        self.master_changed(registration.master_addr, registration.ha_master_address)
        self.slave_sync.start()

    def stopService(self):
        super().stopService()
        registration = self.controller.registration
        if self.master_changed in registration.master_listeners:
            registration.master_listeners.remove(self.master_changed)
        providers = self.controller.store.runtime_info_providers
        if self.runtime_info in providers:
            providers.remove(self.runtime_info)
        if self.controller.ha_runtime_info == self.ha_runtime_info:
            self.controller.ha_runtime_info = None
        self.slave_sync.stop()
        self.connector.shutdown()
