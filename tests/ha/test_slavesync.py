"""SlaveSynchronize: a slave controller copies a master controller's
topics, consumer offsets, delay offsets and subscription groups through the real
GET_ALL_* handlers, on Java's schedule, and persists them; failures leave tables alone."""

import json
import os

from twisted.internet import defer
from twisted.internet.task import Clock

from rmqproto.broker.config import SETTINGS, apply_startup_rules
from rmqproto.broker.controller import BrokerController
from rmqproto.broker.slavesync import FIRST_SYNC_DELAY, SYNC_PERIOD, SlaveSynchronize
from rmqproto.codec.bodies.offsets import SubscriptionGroupConfig
from rmqproto.codec.bodies.topic import TopicConfig
from rmqproto.codec.codes import RequestCode as RC
from rmqproto.codec.frame import decode_frame
from rmqproto.remoting import RequestContext
from rmqproto.remoting.errors import RemotingTimeoutError
from rmqproto.store.defaultstore import DefaultMessageStore

MASTER_ADDR = "10.0.0.1:10911"


def controller(tmp_path, name, **overrides):
    clock = Clock()
    clock.advance(1_700_000_000)
    values, unknown = SETTINGS.resolve(dict(
        brokerName="broker-a", brokerIP1="10.0.0.1", brokerIP2="10.0.0.1", namesrvAddr="",
        storePathRootDir=str(tmp_path / name)), overrides)
    assert not unknown
    values = apply_startup_rules(values)
    return BrokerController(values, clock, store=DefaultMessageStore(values, clock))  # not loaded


class DirectClient:
    """Answers requests with ``master``'s dispatcher, in process; records what was asked."""

    def __init__(self, master):
        self.master = master
        self.asked = []
        self.fail = set()

    def invoke(self, address, request, timeout):
        self.asked.append((address, request.code, timeout))
        if request.code in self.fail:
            return defer.fail(RemotingTimeoutError("timed out"))
        answer = self.master.dispatcher.dispatch(request, RequestContext(None, "10.0.0.2:5000"))
        return defer.maybeDeferred(lambda: answer).addCallback(lambda a: decode_frame(a[4:]))


def pair(tmp_path):
    master = controller(tmp_path, "master")
    slave = controller(tmp_path, "slave", brokerRole="SLAVE", brokerId=1, listenPort=10921)
    slave.client = DirectClient(master)
    sync = SlaveSynchronize(slave)
    sync.master_addr = MASTER_ADDR
    return master, slave, sync


def run(d):
    results = []
    d.addBoth(results.append)
    assert results, "did not finish"
    return results[0]


def test_all_four_tables_are_copied_and_persisted(tmp_path):
    master, slave, sync = pair(tmp_path)
    master.topic_config_manager.update_topic_config(TopicConfig("SyncedTopic", 4, 4, 6))
    master.consumer_offset_manager.commit_offset("g1", "SyncedTopic", 2, 77)
    master.subscription_group_manager.update_subscription_group_config(
        SubscriptionGroupConfig("g1", retry_max_times=3, which_broker_when_consume_slowly=1))
    master.schedule_service.offset_table.update({1: 5, 3: 9})
    slave.consumer_offset_manager.commit_offset("other", "T", 0, 4)

    run(sync.sync_all())

    assert [code for _, code, _ in slave.client.asked] == [
        RC.GET_ALL_TOPIC_CONFIG, RC.GET_ALL_CONSUMER_OFFSET, RC.GET_ALL_DELAY_OFFSET,
        RC.GET_ALL_SUBSCRIPTIONGROUP_CONFIG]
    assert {a for a, _, _ in slave.client.asked} == {MASTER_ADDR}
    assert {t for _, _, t in slave.client.asked} == {3.0}
    topics = slave.topic_config_manager
    assert topics.topic_config_table == master.topic_config_manager.topic_config_table
    assert topics.data_version == master.topic_config_manager.data_version
    assert slave.consumer_offset_manager.query_offset("g1", "SyncedTopic", 2) == 77
    assert slave.consumer_offset_manager.query_offset("other", "T", 0) == 4  # putAll keeps others
    groups = slave.subscription_group_manager
    assert groups.subscription_group_table["g1"].retry_max_times == 3
    assert groups.data_version == master.subscription_group_manager.data_version
    config = tmp_path / "slave" / "config"
    assert "SyncedTopic" in json.loads((config / "topics.json").read_text())["topicConfigTable"]
    assert "SyncedTopic@g1" in (config / "consumerOffset.json").read_text()
    assert "g1" in json.loads((config / "subscriptionGroup.json").read_text())["subscriptionGroupTable"]
    assert (config / "delayOffset.json").read_bytes() == master.schedule_service.encode()


def test_an_unchanged_version_keeps_the_slaves_table(tmp_path):
    master, slave, sync = pair(tmp_path)
    run(sync.sync_all())
    slave.topic_config_manager.topic_config_table["LocalOnly"] = TopicConfig("LocalOnly")
    run(sync.sync_all())
    assert "LocalOnly" in slave.topic_config_manager.topic_config_table
    master.topic_config_manager.update_topic_config(TopicConfig("New", 1, 1, 6))
    run(sync.sync_all())
    assert "LocalOnly" not in slave.topic_config_manager.topic_config_table
    assert "New" in slave.topic_config_manager.topic_config_table


def test_a_failed_step_does_not_stop_the_others(tmp_path):
    master, slave, sync = pair(tmp_path)
    master.topic_config_manager.update_topic_config(TopicConfig("T1", 1, 1, 6))
    master.consumer_offset_manager.commit_offset("g", "T1", 0, 9)
    slave.client.fail.add(RC.GET_ALL_TOPIC_CONFIG)
    run(sync.sync_all())
    assert "T1" not in slave.topic_config_manager.topic_config_table
    assert slave.consumer_offset_manager.query_offset("g", "T1", 0) == 9


def test_bad_bodies_leave_the_tables_and_files_alone(tmp_path):
    master, slave, sync = pair(tmp_path)

    class Garbage(DirectClient):
        def invoke(self, address, request, timeout):
            return super().invoke(address, request, timeout).addCallback(
                lambda response: setattr(response, "body", b"{not json") or response)

    slave.client = Garbage(master)
    before = dict(slave.topic_config_manager.topic_config_table)
    run(sync.sync_all())
    assert slave.topic_config_manager.topic_config_table == before
    assert not os.path.exists(tmp_path / "slave" / "config" / "delayOffset.json")


def test_nothing_is_asked_without_a_master_or_of_itself(tmp_path):
    _, slave, sync = pair(tmp_path)
    sync.master_addr = None
    run(sync.sync_all())
    sync.master_addr = "10.0.0.1:10921"  # the slave's own address
    run(sync.sync_all())
    assert slave.client.asked == []


def test_schedule_first_after_3_s_then_every_10_s(tmp_path):
    _, slave, sync = pair(tmp_path)
    clock = slave.reactor
    sync.start()
    clock.advance(FIRST_SYNC_DELAY - 0.1)
    assert slave.client.asked == []
    clock.advance(0.1)
    assert len(slave.client.asked) == 4
    clock.advance(SYNC_PERIOD)
    assert len(slave.client.asked) == 8
    sync.stop()
    clock.advance(3 * SYNC_PERIOD)
    assert len(slave.client.asked) == 8
