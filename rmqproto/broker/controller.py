"""One broker's parts wired together: Java's ``BrokerController``.

``BrokerController(config, reactor)`` holds the settings dict (``config``, Java property
names), the ``reactor``, the message ``store``, the ``topic_config_manager``, the request
``dispatcher``, the ``client`` used to call NameServers and clients, the NameServer
``registration``, the statistics (``broker_stats_manager``, ``broker_stats``), and the
consume side's managers (``consumer_offset_manager``,
``subscription_group_manager``, ``client_manager``) with their processors. It does not
listen on a port: :mod:`rmqproto.services.broker` does.
"""

import importlib
import os

from twisted.internet import defer
from twisted.logger import Logger

from rmqproto.broker.acl import access_guard
from rmqproto.broker.config import broker_addr, is_slave
from rmqproto.broker.dledgerconfig import is_dledger
from rmqproto.broker.processors import endtransaction
from rmqproto.broker.processors.acl import AclAdminProcessor
from rmqproto.broker.processors.admin import AdminBrokerProcessor
from rmqproto.broker.processors.callconsumer import ConsumerCallProcessor
from rmqproto.broker.processors.maintenance import MaintenanceProcessor
from rmqproto.broker.processors.rocketmq5 import RocketMQ5Processor
from rmqproto.broker.processors.send import SendMessageProcessor
from rmqproto.broker.processors.stats import StatsProcessor
from rmqproto.broker.registration import BrokerRegistration
from rmqproto.broker.stats import BrokerStats, BrokerStatsManager, message_totals
from rmqproto.broker.statssampler import StatsSampler
from rmqproto.broker.topicconfig import TopicConfigManager, topic_config_path
from rmqproto.broker.transaction.checkservice import TransactionCheckService
from rmqproto.codec.bodies.topic import DataVersion
from rmqproto.pluggable import (
    IAccessValidatorFactory, IMessageStoreFactory, PluginNotFoundError, find,
)
from rmqproto.remoting import RemotingClient, RequestDispatcher
from rmqproto.remoting.dispatch import GuardedDispatcher
from rmqproto.remoting.tls import client_policy

__all__ = ["BrokerController", "config_path", "create_store", "create_access_validator"]

log = Logger()


def config_path(config, name):
    """``<storePathRootDir>/config/<name>`` (``BrokerPathConfigHelper``)."""
    return os.path.join(config["storePathRootDir"], "config", name)


def create_store(config, reactor):
    """The store plugin named by ``storeType`` (RocketMQ 5's setting; ``default`` is ours).

    Java's ``messageStorePlugIn`` names Java classes wrapping the store; such a config
    cannot run here, so a non-empty value is refused with a clear error.
    """
    if config.get("messageStorePlugIn"):
        raise PluginNotFoundError("messageStorePlugIn names Java store wrappers (%r); choose a "
                                  "store plugin with storeType instead" % config["messageStorePlugIn"])
    return find(IMessageStoreFactory, config.get("storeType") or "default").create(config, reactor)


def create_access_validator(config, reactor):
    """The ``aclValidator`` plugin's validator when ``aclEnable`` is true, else None."""
    if not config.get("aclEnable"):
        return None
    return find(IAccessValidatorFactory, config.get("aclValidator") or "plain").create(
        config, reactor)


def _optional(module, name):
    """``module.name`` if the consume side provides it, else ``None``."""
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError:
        return None


class BrokerController:
    """Everything one broker is made of; :meth:`start` and :meth:`shutdown` run it."""

    def __init__(self, config, reactor, store=None, config_file=None):
        self.config = config
        self.reactor = reactor
        #: Where UPDATE_BROKER_CONFIG saves the settings: the ``-c`` file, as Java's
        #: ``BrokerPathConfigHelper.brokerConfigPath``; without one
        #: ``<storePathRootDir>/config/broker.properties`` (Java: ``~/store/config/…``).
        self.config_file = config_file or config_path(config, "broker.properties")
        #: checks every request when ``aclEnable`` is true (docs/security.md, "ACL"); made
        #: first, so that an ACL that does not load stops the broker before the store is touched
        self.access_validator = create_access_validator(config, reactor)
        self.store = store if store is not None else create_store(config, reactor)
        self.topic_config_manager = TopicConfigManager(
            config, reactor, topic_config_path(config["storePathRootDir"]))
        self.config_data_version = DataVersion(timestamp=int(reactor.seconds() * 1000))
        #: counts for VIEW_BROKER_STATS_DATA and consumeTps (docs/broker.md, "Statistics")
        self.broker_stats_manager = BrokerStatsManager(
            config["brokerClusterName"], config.get("enableDetailStat", True))
        self.broker_stats = BrokerStats()  # the msgPut/GetTotal* runtime keys
        self.stats_sampler = StatsSampler(reactor, self.broker_stats_manager, lambda: (
            self.broker_stats.record(*message_totals(self.store, self.broker_stats_manager))))
        #: GET_BROKER_HA_STATUS's body maker, set by the running HA service (``rmqproto.ha``);
        #: None without one (a DLedger broker, as in Java)
        self.ha_runtime_info = None
        self.dispatcher = (RequestDispatcher() if self.access_validator is None
                           else GuardedDispatcher(access_guard(self.access_validator)))
        self.client = RemotingClient(reactor, self.dispatcher, tls=client_policy(config))
        self.registration = BrokerRegistration(self)
        # a topic created on the send path is announced at once, oneway (Java's registerBrokerAll(false, true, true))
        self.topic_config_manager.created_listeners.append(
            lambda topic_config: self.registration.register_all(oneway=True))
        self.send_processor = SendMessageProcessor(self)
        self.send_processor.register_with(self.dispatcher)
        self.admin_processor = AdminBrokerProcessor(self)
        self.admin_processor.register_with(self.dispatcher)
        AclAdminProcessor(self).register_with(self.dispatcher)
        StatsProcessor(self).register_with(self.dispatcher)
        self._create_consume_side()
        self.end_transaction_processor = endtransaction.register(self)
        #: the check-back of half messages, run by a master only
        self.transaction_check_service = TransactionCheckService(self)
        RocketMQ5Processor(self).register_with(self.dispatcher)
        if self.client_manager is not None:
            ConsumerCallProcessor(self).register_with(self.dispatcher)
            MaintenanceProcessor(self).register_with(self.dispatcher)

    def _create_consume_side(self):
        offsets = _optional("rmqproto.broker.offsets", "ConsumerOffsetManager")
        groups = _optional("rmqproto.broker.subscriptions", "SubscriptionGroupManager")
        clients = _optional("rmqproto.broker.clients", "ClientManager")
        self.consumer_offset_manager = (
            offsets(config_path(self.config, "consumerOffset.json")) if offsets else None)
        self.subscription_group_manager = (
            groups(config_path(self.config, "subscriptionGroup.json"),
                   auto_create=self.config["autoCreateSubscriptionGroup"]) if groups else None)
        self.client_manager = clients(self) if clients else None
        register = _optional("rmqproto.broker.processors.consume", "register")
        self.consume_processor = register(self) if register is not None else None

    def _running_parts(self):
        parts = [self.client_manager, self.consume_processor]
        # with DLedger the role changes start it (docs/broker-dledger.md)
        if not is_slave(self.config) and not is_dledger(self.config):
            parts.append(self.transaction_check_service)
        return parts

    def _managers(self):
        return [m for m in (self.topic_config_manager, self.consumer_offset_manager,
                            self.subscription_group_manager) if m is not None]

    @property
    def broker_addr(self):
        return broker_addr(self.config)

    def start(self):
        """Load metadata and the store, start the store, register with the NameServers.

        Fires once the first registration round is over.
        """
        for manager in self._managers():
            load = getattr(manager, "load", None)
            if load is not None:
                load()
        self.store.load()
        self.store.start()
        self.stats_sampler.start()
        if self.access_validator is not None:
            self.access_validator.start()
        for part in self._running_parts():
            start = getattr(part, "start", None)
            if start is not None:
                start()
        log.info("The broker[{name}, {addr}] boot success. serializeType=JSON and name server "
                 "is {namesrv}", name=self.config["brokerName"], addr=self.broker_addr,
                 namesrv=self.config["namesrvAddr"])
        # a DLedger broker registers once it has a role (``BrokerController#start``)
        return self.registration.start(register_now=not is_dledger(self.config))

    @defer.inlineCallbacks
    def shutdown(self):
        """Unregister from the NameServers, persist metadata, shut the store down (flush,
        remove ``abort``), close outgoing connections."""
        self.registration.stop()
        self.stats_sampler.stop()
        for part in (self.access_validator, self.client_manager, self.consume_processor,
                     self.transaction_check_service):
            stop = getattr(part, "stop", None)
            if stop is not None:
                stop()
        try:
            yield self.registration.unregister_all()
        except Exception:
            log.failure("unregisterBrokerAll failed")
        for manager in self._managers():
            persist = getattr(manager, "persist", None)
            if persist is not None:
                persist()
        self.store.shutdown()
        yield self.client.close()
        log.info("The broker[{name}, {addr}] shut down", name=self.config["brokerName"],
                 addr=self.broker_addr)
