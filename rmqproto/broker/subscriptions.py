"""Subscription groups: Java's ``SubscriptionGroupManager`` and ``config/subscriptionGroup.json``.

Every consumer group has a :class:`~rmqproto.codec.bodies.offsets.SubscriptionGroupConfig`
(retry queues, max reconsume times, which broker to suggest, …). Unknown groups are
created with Java's defaults on first use when ``autoCreateSubscriptionGroup`` is true (and
``CID_RMQ_SYS_*`` groups always); every change bumps the
:class:`~rmqproto.codec.bodies.topic.DataVersion` and rewrites the file.
"""

import os
import time

from twisted.logger import Logger

from rmqproto.broker import configfile
from rmqproto.codec.bodies.offsets import SubscriptionGroupConfig, SubscriptionGroupWrapper
from rmqproto.codec.bodies.topic import DataVersion

__all__ = ["SYSTEM_GROUPS", "CID_RMQ_SYS_PREFIX", "TOOLS_CONSUMER_GROUP", "is_sys_consumer_group",
           "subscription_group_path", "SubscriptionGroupManager"]

log = Logger()

TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
CID_RMQ_SYS_PREFIX = "CID_RMQ_SYS_"
#: The groups Java's manager creates in its constructor (``MixAll`` names).
SYSTEM_GROUPS = (TOOLS_CONSUMER_GROUP, "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP",
                 "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION",
                 "CID_ONSAPI_OWNER")


def is_sys_consumer_group(group):
    """``MixAll.isSysConsumerGroup``."""
    return group.startswith(CID_RMQ_SYS_PREFIX)


def subscription_group_path(store_root):
    """``BrokerPathConfigHelper.getSubscriptionGroupPath``."""
    return os.path.join(store_root, "config", "subscriptionGroup.json")


class SubscriptionGroupManager:
    """The subscription-group table of one broker; ``path`` is its JSON file (or ``None``).

    ``auto_create`` is ``autoCreateSubscriptionGroup``; ``clock()`` gives seconds (for
    data-version timestamps).
    """

    def __init__(self, path=None, auto_create=True, clock=time.time):
        self.path = path
        self.auto_create = auto_create
        self.clock = clock
        self.subscription_group_table = {g: SubscriptionGroupConfig(g) for g in SYSTEM_GROUPS}
        self.data_version = DataVersion()

    def _changed(self):
        self.data_version = self.data_version.next_version(int(self.clock() * 1000))
        self.persist()

    def find_subscription_group_config(self, group):
        """The group's config, created with Java's defaults if allowed; else ``None``."""
        config = self.subscription_group_table.get(group)
        if config is None and (self.auto_create or is_sys_consumer_group(group)):
            config = self.subscription_group_table[group] = SubscriptionGroupConfig(group)
            log.info("auto create a subscription group, {config}", config=config)
            self._changed()
        return config

    def update_subscription_group_config(self, config):
        """Create or replace a group (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)."""
        old = self.subscription_group_table.get(config.group_name)
        self.subscription_group_table[config.group_name] = config
        log.info("{what} subscription group {config}",
                 what="update" if old is not None else "create new", config=config)
        self._changed()

    def disable_consume(self, group):
        config = self.subscription_group_table.get(group)
        if config is not None:
            config.consume_enable = False
            self._changed()

    def delete_subscription_group_config(self, group):
        """Remove a group; whether it existed."""
        if self.subscription_group_table.pop(group, None) is None:
            log.warn("delete subscription group failed, {group} not exist", group=group)
            return False
        self._changed()
        return True

    # ------------------------------------------------------------ JSON and the file

    def encode(self):
        """``subscriptionGroup.json`` and GET_ALL_SUBSCRIPTIONGROUP_CONFIG's body."""
        return SubscriptionGroupWrapper(subscription_group_table=self.subscription_group_table,
                                        data_version=self.data_version).to_json()

    def load(self):
        """Read the file (or its ``.bak``) over the table; whether one was read."""
        if self.path is None:
            return False
        wrapper = configfile.load(self.path, SubscriptionGroupWrapper.from_json)
        if wrapper is None:
            return False
        self.subscription_group_table.update(wrapper.subscription_group_table)
        self.data_version = wrapper.data_version
        return True

    def persist(self):
        if self.path is not None:
            configfile.persist(self.path, self.encode())
