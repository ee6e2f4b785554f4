"""A running broker following its DLedger member's role (docs/broker-dledger.md, "Role rules").

:class:`DLedgerRoles` feeds the member's role changes and, while a new leader gets ready,
its log's progress every 100 ms to :class:`~rmqproto.broker.dledgerrole.RoleChangeHandler`,
and carries out what it answers on the broker, as Java's ``BrokerController#changeToSlave``
and ``#changeToMaster`` do:

* **to slave** (brokerId from ``dLegerSelfId``): ``brokerRole=SLAVE`` (sends are refused with
  SERVICE_NOT_AVAILABLE from then on), delayed delivery and the transaction checker stop,
  the metadata copy from the master (:mod:`rmqproto.broker.slavesync`) restarts with no
  master known until a NameServer names it, and the broker registers with every NameServer
  at once (oneway, forced);
* **to master**: the metadata copy stops, brokerId 0 and ``brokerRole=SYNC_MASTER`` are set,
  delayed delivery and the transaction checker start, and it registers at once. (All in one
  turn of the reactor: no send comes between.)

It takes the place of the classic HA service, which a DLedger broker does not have
(``BrokerStartup``): it starts once the store is loaded and stops before the store does.
"""

from twisted.application import service
from twisted.logger import Logger

from rmqproto.broker.config import MASTER_ID
from rmqproto.broker.dledgerrole import (
    ChangeToMaster, ChangeToSlave, LeaderProgress, RecoverTopicQueueTable, RoleChangeHandler,
)
from rmqproto.broker.slavesync import SlaveSynchronize
from rmqproto.dledger.actions import Role
from rmqproto.remoting import RequestDispatcher

__all__ = ["DLedgerRoles", "MemberDispatcher"]

log = Logger()


class DLedgerRoles(service.Service):
    """The role changes of the broker ``controller`` whose store is on a DLedger commit log
    (what it uses of the store: :mod:`rmqproto.store.dledger`); started once the store is
    loaded (:attr:`server` is then the store's DLedger member, ``store.dledger``)."""

    def __init__(self, controller):
        super().__init__()
        self.controller = controller
        self.server = None
        self.handler = RoleChangeHandler(controller.config["dLegerSelfId"],
                                         controller.config["brokerRole"])
        self.slave_sync = SlaveSynchronize(controller)
        self._timer = None

    def now(self):
        return int(self.controller.reactor.seconds() * 1000)

    # ------------------------------------------------------------ life cycle

    def startService(self):
        super().startService()
        self.server = self.controller.store.dledger
        self.server.role_listeners.append(self.role_changed)
        self.controller.registration.master_listeners.append(self.master_changed)
        node = self.server.node
        if node.role is not Role.CANDIDATE:  # a role taken before we listened
            self.role_changed(node.term, node.role)

    def stopService(self):
        super().stopService()
        if self.server is not None and self.role_changed in self.server.role_listeners:
            self.server.role_listeners.remove(self.role_changed)
        listeners = self.controller.registration.master_listeners
        if self.master_changed in listeners:
            listeners.remove(self.master_changed)
        self._cancel_timer()
        self.slave_sync.stop()

    # ------------------------------------------------------------ inputs

    def role_changed(self, term, role):
        """The member's role listener (``DLedgerServer.role_listeners``)."""
        log.info("Begin handling broker role change term={term} role={role} "
                 "currStoreRole={current}", term=term, role=role.name,
                 current=self.controller.config["brokerRole"])
        self._carry_out(self.handler.role_changed(term, role, self.now()))

    def master_changed(self, master_addr, ha_master_address):
        """A registration answer named the master (``BrokerRegistration.master_listeners``)."""
        self.slave_sync.master_addr = master_addr

    def poll(self):
        """One look at the new leader's log."""
        self._timer = None
        ledger = self.server.store
        progress = LeaderProgress(self.server.node.role, self.server.node.term,
                                  ledger.end_index, ledger.end_term, ledger.committed_index,
                                  self.controller.store.dispatched())
        self._carry_out(self.handler.progress(progress, self.now()))

    # ------------------------------------------------------------ outputs

    def _carry_out(self, actions):
        for action in actions:
            if isinstance(action, ChangeToSlave):
                self.change_to_slave(action.broker_id)
            elif isinstance(action, RecoverTopicQueueTable):
                self.controller.store.recover_topic_queue_table()
            elif isinstance(action, ChangeToMaster):
                self.change_to_master(action.role)
        self._cancel_timer()
        deadline = self.handler.next_deadline()
        if deadline is not None and self.running:
            delay = max(deadline - self.now(), 0) / 1000
            self._timer = self.controller.reactor.callLater(delay, self.poll)

    def _cancel_timer(self):
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None

    def _set_role(self, broker_id, role):
        controller = self.controller
        controller.config["brokerId"] = broker_id
        for config in {id(controller.config): controller.config,
                       id(controller.store.config): controller.store.config}.values():
            config["brokerRole"] = role

    def _forget_master(self):
        """``slaveSynchronize.setMasterAddr(null)``; the registration forgets it too, so
        that the next answer naming a master is passed on even if it names the same one."""
        self.slave_sync.master_addr = None
        self.controller.registration.master_addr = None

    def change_to_slave(self, broker_id):
        controller = self.controller
        log.info("Begin to change to slave brokerName={name} brokerId={id}",
                 name=controller.config["brokerName"], id=broker_id)
        self._set_role(broker_id, "SLAVE")
        schedule = getattr(controller, "schedule_service", None)
        if schedule is not None:
            schedule.shutdown()
        controller.transaction_check_service.stop()
        self.slave_sync.stop()
        self._forget_master()
        self.slave_sync.start()
        controller.registration.register_all(check_order_config=True, oneway=True)
        log.info("Finish to change to slave brokerName={name} brokerId={id}",
                 name=controller.config["brokerName"], id=broker_id)

    def change_to_master(self, role):
        controller = self.controller
        log.info("Begin to change to master brokerName={name}", name=controller.config["brokerName"])
        self.slave_sync.stop()
        self._forget_master()
        self._set_role(MASTER_ID, role)
        schedule = getattr(controller, "schedule_service", None)
        if schedule is not None:
            schedule.start()
        controller.transaction_check_service.start()
        controller.registration.register_all(check_order_config=True, oneway=True)
        log.info("Finish to change to master brokerName={name}", name=controller.config["brokerName"])


class MemberDispatcher(RequestDispatcher):
    """The requests to the DLedger member of ``store``, made when the store loads: the port
    is bound before that, and a peer's connection made early must reach the member later.
    Until then every request is answered REQUEST_CODE_NOT_SUPPORTED (a peer takes it as a
    failed call)."""

    def __init__(self, store):
        super().__init__()
        self.store = store

    def dispatch(self, request, context, write=None):
        member = getattr(self.store, "dledger", None)
        if member is None:
            return self._not_supported(request, context)
        return member.dispatcher.dispatch(request, context, write)
