"""Registering the broker with its NameServers (Java ``BrokerOuterAPI#registerBrokerAll``).

As Java's ``BrokerController.registerBrokerAll`` / ``BrokerOuterAPI``: REGISTER_BROKER to
every NameServer at start, then every ``registerNameServerPeriod`` (clamped to 10–60 s,
first after 10 s), oneway after a topic is created on the send path, and with only the
changed topic after UPDATE_AND_CREATE_TOPIC; UNREGISTER_BROKER to each at shutdown. With
``forceRegister=false`` the periodic registration first asks QUERY_DATA_VERSION and only
registers when a NameServer reports a change.

A slave learns its master from the first answer: :attr:`BrokerRegistration.master_addr`
and :attr:`BrokerRegistration.ha_master_address` (unless ``haMasterAddress`` is configured),
and ``master_listeners`` are called with both whenever they change.
"""

from twisted.internet import defer, task
from twisted.logger import Logger

from rmqproto.broker.config import broker_addr, ha_server_addr, namesrv_addresses
from rmqproto.codec import headers as h
from rmqproto.codec.bodies.route import KVTable
from rmqproto.codec.bodies.topic import (
    PERM_READ, PERM_WRITE, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper,
)
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.frame import RemotingCommand
from rmqproto.codec.javalang import masked_crc32
from rmqproto.errors import RmqError

__all__ = ["RegisterBrokerResult", "BrokerRegistration", "register_period",
           "build_register_request", "FIRST_REGISTER_DELAY", "UNREGISTER_TIMEOUT"]

log = Logger()

#: Seconds before the first periodic registration (Java's initial delay).
FIRST_REGISTER_DELAY = 10.0
#: Seconds UNREGISTER_BROKER waits for each NameServer (``BrokerOuterAPI.unregisterBroker``).
UNREGISTER_TIMEOUT = 3.0


def register_period(config):
    """Seconds between registrations: ``registerNameServerPeriod`` clamped to 10–60 s."""
    return max(10_000, min(config["registerNameServerPeriod"], 60_000)) / 1000.0


class RegisterBrokerResult:
    """One NameServer's answer: the master's address and HA address, and its order-topic table."""

    __slots__ = ("master_addr", "ha_server_addr", "kv_table")

    def __init__(self, master_addr=None, ha_server_addr=None, kv_table=None):
        self.master_addr = master_addr
        self.ha_server_addr = ha_server_addr
        self.kv_table = kv_table


def _with_broker_perm(wrapper, perm):
    """A broker without both READ and WRITE registers every topic with its own permission."""
    if perm & PERM_READ and perm & PERM_WRITE:
        return wrapper
    table = {name: TopicConfig(name, tc.read_queue_nums, tc.write_queue_nums, perm)
             for name, tc in wrapper.topic_config_table.items()}
    return TopicConfigSerializeWrapper(topic_config_table=table, data_version=wrapper.data_version)


def build_register_request(config, wrapper, compressed=None):
    """The REGISTER_BROKER command of this broker for ``wrapper`` (body CRC set as Java does)."""
    if compressed is None:
        compressed = config["compressedRegister"]
    wrapper = _with_broker_perm(wrapper, config["brokerPermission"])
    body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper,
                              filter_server_list=[]).encode(compressed)
    header = h.RegisterBrokerRequestHeader(
        broker_name=config["brokerName"], broker_addr=broker_addr(config),
        cluster_name=config["brokerClusterName"], ha_server_addr=ha_server_addr(config),
        broker_id=config["brokerId"], compressed=bool(compressed), body_crc32=masked_crc32(body))
    return RemotingCommand(int(RC.REGISTER_BROKER), ext_fields=header.to_ext_fields(), body=body)


def _identity_header(config, header_class):
    return header_class(broker_name=config["brokerName"], broker_addr=broker_addr(config),
                        cluster_name=config["brokerClusterName"],
                        broker_id=config["brokerId"]).to_ext_fields()


class BrokerRegistration:
    """Keeps the NameServers informed of one broker (``controller``: config, client, reactor,
    topic_config_manager)."""

    def __init__(self, controller):
        self.controller = controller
        self.config = controller.config
        self.master_addr = None
        self.ha_master_address = self.config.get("haMasterAddress") or None
        self._ha_address_configured = len(self.config.get("haMasterAddress") or "") >= 6
        self.master_listeners = []
        self._loop = task.LoopingCall(self.register_periodically)
        self._loop.clock = controller.reactor
        self._first = None

    @property
    def client(self):
        return self.controller.client

    @property
    def timeout(self):
        return self.config["registerBrokerTimeoutMills"] / 1000.0

    # ------------------------------------------------------------ lifecycle

    def start(self, register_now=True):
        """Register now (unless not ``register_now``), then periodically (first after 10 s).
        Fires after the first round."""
        self._first = self.controller.reactor.callLater(
            FIRST_REGISTER_DELAY, self._loop.start, register_period(self.config), True)
        if not register_now:
            return defer.succeed([])
        return self.register_all(check_order_config=True)

    def stop(self):
        if self._first is not None and self._first.active():
            self._first.cancel()
        if self._loop.running:
            self._loop.stop()

    # ------------------------------------------------------------ registering

    def register_periodically(self):
        if self.config["forceRegister"]:
            return self.register_all(check_order_config=True)
        return self.need_register().addCallback(
            lambda needed: self.register_all(check_order_config=True) if needed else None)

    def register_all(self, check_order_config=False, oneway=False, wrapper=None):
        """REGISTER_BROKER to every NameServer with ``wrapper`` (default: the whole table).

        Fires with the list of :class:`RegisterBrokerResult` (empty when oneway), never fails.
        """
        if wrapper is None:
            wrapper = self.controller.topic_config_manager.build_topic_config_serialize_wrapper()
        addresses = namesrv_addresses(self.config)
        if not addresses:
            return defer.succeed([])
        request = build_register_request(self.config, wrapper)
        calls = [self._register(address, request, oneway) for address in addresses]
        return defer.gatherResults(calls).addCallback(self._registered, check_order_config)

    def register_increment(self, topic_config):
        """Register only ``topic_config`` with the current data version (after UPDATE_AND_CREATE_TOPIC)."""
        manager = self.controller.topic_config_manager
        wrapper = TopicConfigSerializeWrapper(
            topic_config_table={topic_config.topic_name: topic_config},
            data_version=manager.data_version)
        return self.register_all(check_order_config=True, wrapper=wrapper)

    def _register(self, address, request, oneway):
        request = RemotingCommand(request.code, ext_fields=dict(request.ext_fields), body=request.body)
        if oneway:
            d = self.client.invoke_oneway(address, request).addCallback(lambda _: None)
        else:
            d = self.client.invoke(address, request, self.timeout).addCallback(
                self._parse_answer, address)
        return d.addErrback(self._failed, address)

    def _parse_answer(self, response, address):
        if response.code != R.SUCCESS:
            raise RmqError("CODE: %d DESC: %s" % (response.code, response.remark))
        header = h.RegisterBrokerResponseHeader.from_ext_fields(response.ext_fields)
        kv_table = KVTable.from_json(response.body) if response.body else None
        log.info("register broker[{id}] to name server {address} OK",
                 id=self.config["brokerId"], address=address)
        return RegisterBrokerResult(header.master_addr, header.ha_server_addr, kv_table)

    def _failed(self, failure, address):
        log.warn("registerBroker Exception, {address}: {error}", address=address,
                 error=failure.getErrorMessage())
        return None

    def _registered(self, results, check_order_config):
        results = [r for r in results if r is not None]
        if results:
            first = results[0]
            changed = False
            if not self._ha_address_configured and first.ha_server_addr is not None \
                    and first.ha_server_addr != self.ha_master_address:
                self.ha_master_address = first.ha_server_addr
                changed = True
            if first.master_addr != self.master_addr:
                self.master_addr = first.master_addr
                changed = True
            if changed:
                for listener in list(self.master_listeners):
                    listener(self.master_addr, self.ha_master_address)
            if check_order_config and first.kv_table is not None:
                self.controller.topic_config_manager.update_order_topic_config(first.kv_table.table)
        return results

    def need_register(self):
        """QUERY_DATA_VERSION to every NameServer: fires true when any reports a change."""
        wrapper = self.controller.topic_config_manager.build_topic_config_serialize_wrapper()
        ext = _identity_header(self.config, h.QueryDataVersionRequestHeader)
        body = wrapper.data_version.to_json()

        def changed(response):
            if response.code != R.SUCCESS:
                return False
            return bool(h.QueryDataVersionResponseHeader.from_ext_fields(response.ext_fields).changed)

        calls = [self.client.invoke(address, RemotingCommand(int(RC.QUERY_DATA_VERSION),
                                                             ext_fields=dict(ext), body=body),
                                    self.timeout).addCallbacks(changed, lambda _: False)
                 for address in namesrv_addresses(self.config)]
        return defer.gatherResults(calls).addCallback(any)

    # ------------------------------------------------------------ leaving

    def unregister_all(self):
        """UNREGISTER_BROKER to every NameServer (3 s each); fires when all answered or failed."""
        ext = _identity_header(self.config, h.UnRegisterBrokerRequestHeader)
        calls = []
        for address in namesrv_addresses(self.config):
            request = RemotingCommand(int(RC.UNREGISTER_BROKER), ext_fields=dict(ext))
            d = self.client.invoke(address, request, UNREGISTER_TIMEOUT)
            d.addCallbacks(lambda _, a=address: log.info("unregisterBroker OK, NamesrvAddr: {a}", a=a),
                           lambda f, a=address: log.warn("unregisterBroker Exception, {a}: {e}", a=a,
                                                         e=f.getErrorMessage()))
            calls.append(d)
        return defer.gatherResults(calls)
