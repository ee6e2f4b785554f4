"""A slave's metadata copy from its master: Java's ``SlaveSynchronize``.

Every 10 s (first after 3 s) the slave asks its master's remoting address, learned from
REGISTER_BROKER answers, for GET_ALL_TOPIC_CONFIG, GET_ALL_CONSUMER_OFFSET,
GET_ALL_DELAY_OFFSET and GET_ALL_SUBSCRIPTIONGROUP_CONFIG, one after the other, and applies
each answer as Java does:

* topics and subscription groups: when the master's data version differs, the whole
  table is replaced by the master's and the version copied;
* consumer offsets: the master's ``topic@group`` entries replace the slave's (others stay);
* delay offsets: the master's ``delayOffset.json`` content is written to the slave's file
  (read when the broker starts delivering delayed messages).

Each is persisted at once. A failed or undecodable answer is logged and skipped, leaving
the slave's table as it was. Java asks topic configs on the master's VIP port
(listenPort − 2); we ask the registered address, which serves every request.
"""

from twisted.internet import defer, task
from twisted.logger import Logger

from rmqproto.broker import configfile
from rmqproto.broker.config import broker_addr
from rmqproto.broker.schedule import delay_offset_path
from rmqproto.codec.bodies.offsets import (ConsumerOffsetSerializeWrapper,
                                           DelayOffsetSerializeWrapper, SubscriptionGroupWrapper)
from rmqproto.codec.bodies.topic import DataVersion, TopicConfigSerializeWrapper
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.frame import RemotingCommand
from rmqproto.errors import RmqError

__all__ = ["SlaveSynchronize", "FIRST_SYNC_DELAY", "SYNC_PERIOD", "SYNC_TIMEOUT",
           "apply_topic_config", "apply_consumer_offsets", "apply_delay_offsets",
           "apply_subscription_groups"]

log = Logger()

#: Seconds before the first sync, and between syncs (``BrokerController.handleSlaveSynchronize``).
FIRST_SYNC_DELAY = 3.0
SYNC_PERIOD = 10.0
#: Seconds each request may take (``BrokerOuterAPI.getAll*``).
SYNC_TIMEOUT = 3.0


def _replace_when_versions_differ(manager, table, master_table, master_version):
    """Java's rule for versioned tables: all of the master's when its version differs."""
    if manager.data_version == master_version:
        return False
    manager.data_version = DataVersion(timestamp=master_version.timestamp,
                                       counter=master_version.counter)
    table.clear()
    table.update(master_table)
    manager.persist()
    return True


def apply_topic_config(manager, wrapper):
    """Replace the topic table with the master's when its version differs; whether it did."""
    return _replace_when_versions_differ(manager, manager.topic_config_table,
                                         wrapper.topic_config_table, wrapper.data_version)


def apply_consumer_offsets(manager, wrapper):
    """The master's offsets replace the slave's, entry by entry."""
    manager.offset_table.update(wrapper.offset_table)
    manager.persist()


def apply_delay_offsets(store_root, body):
    """Write the master's ``delayOffset.json`` (checked to decode first)."""
    DelayOffsetSerializeWrapper.from_json(body)
    configfile.persist(delay_offset_path(store_root), body)


def apply_subscription_groups(manager, wrapper):
    """Replace the group table with the master's when its version differs; whether it did."""
    return _replace_when_versions_differ(manager, manager.subscription_group_table,
                                         wrapper.subscription_group_table, wrapper.data_version)


class SlaveSynchronize:
    """Copies the master's metadata into the slave ``controller`` (config, client, reactor
    and the topic, consumer-offset and subscription-group managers)."""

    def __init__(self, controller):
        self.controller = controller
        #: The master's remoting address, ``None`` until a registration names it.
        self.master_addr = None
        self._loop = task.LoopingCall(self.sync_all)
        self._loop.clock = controller.reactor
        self._first = None

    def start(self):
        self._first = self.controller.reactor.callLater(
            FIRST_SYNC_DELAY, self._loop.start, SYNC_PERIOD, True)

    def stop(self):
        if self._first is not None and self._first.active():
            self._first.cancel()
        if self._loop.running:
            self._loop.stop()

    @defer.inlineCallbacks
    def sync_all(self):
        """One round of the four requests; fires when done (never fails)."""
        master = self.master_addr
        if master is None or master == broker_addr(self.controller.config):
            return
        c = self.controller
        steps = [
            (RC.GET_ALL_TOPIC_CONFIG, "topic config", lambda body: apply_topic_config(
                c.topic_config_manager, TopicConfigSerializeWrapper.from_json(body))),
            (RC.GET_ALL_CONSUMER_OFFSET, "consumer offset", lambda body: apply_consumer_offsets(
                c.consumer_offset_manager, ConsumerOffsetSerializeWrapper.from_json(body))),
            (RC.GET_ALL_DELAY_OFFSET, "delay offset", lambda body: apply_delay_offsets(
                c.config["storePathRootDir"], body)),
            (RC.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, "Subscription Group",
             lambda body: apply_subscription_groups(
                 c.subscription_group_manager, SubscriptionGroupWrapper.from_json(body))),
        ]
        for code, what, apply in steps:
            try:
                response = yield c.client.invoke(master, RemotingCommand(int(code)), SYNC_TIMEOUT)
                if response.code != R.SUCCESS:
                    raise RmqError("CODE: %d DESC: %s" % (response.code, response.remark))
                if apply(response.body or b"") is not False:
                    log.info("Update slave {what} from master, {master}", what=what, master=master)
            except (RmqError, OSError) as exc:  # a failed step does not stop the others (as Java)
                log.error("Sync {what} from master {master} failed: {error}", what=what,
                          master=master, error=exc)
