"""Subscription groups: Java's defaults, auto-creation, subscriptionGroup.json and the admin requests."""

from consume_support import Controller

from rmqproto.broker.subscriptions import SYSTEM_GROUPS, SubscriptionGroupManager
from rmqproto.codec.bodies.offsets import SubscriptionGroupConfig, SubscriptionGroupWrapper
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R


def test_system_groups_and_auto_create():
    groups = SubscriptionGroupManager(clock=lambda: 1.5)
    assert set(groups.subscription_group_table) == set(SYSTEM_GROUPS)
    config = groups.find_subscription_group_config("g")
    assert config == SubscriptionGroupConfig("g")
    assert (config.retry_queue_nums, config.retry_max_times, config.broker_id,
            config.which_broker_when_consume_slowly) == (1, 16, 0, 1)
    assert (groups.data_version.counter, groups.data_version.timestamp) == (1, 1500)
    assert groups.find_subscription_group_config("g") is config
    assert groups.data_version.counter == 1


def test_no_auto_create_except_system_prefix():
    groups = SubscriptionGroupManager(auto_create=False)
    assert groups.find_subscription_group_config("g") is None
    assert groups.find_subscription_group_config("CID_RMQ_SYS_X") is not None


def test_persist_and_load(tmp_path):
    path = str(tmp_path / "config" / "subscriptionGroup.json")
    groups = SubscriptionGroupManager(path, clock=lambda: 2.0)
    groups.update_subscription_group_config(SubscriptionGroupConfig("g", retry_max_times=3))
    groups.disable_consume("g")
    loaded = SubscriptionGroupManager(path)
    assert loaded.load()
    assert loaded.subscription_group_table["g"].retry_max_times == 3
    assert not loaded.subscription_group_table["g"].consume_enable
    assert loaded.data_version == groups.data_version
    assert loaded.delete_subscription_group_config("g")
    assert not loaded.delete_subscription_group_config("g")


def test_admin_requests(tmp_path):
    broker = Controller(tmp_path)
    body = SubscriptionGroupConfig("g", retry_queue_nums=2).to_json()
    assert broker.call(RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body).code == R.SUCCESS
    wrapper = SubscriptionGroupWrapper.from_json(broker.call(RC.GET_ALL_SUBSCRIPTIONGROUP_CONFIG).body)
    assert wrapper.subscription_group_table["g"].retry_queue_nums == 2
    slave = Controller(tmp_path / "slave", brokerRole="SLAVE", brokerId=1)
    response = slave.call(RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
    assert response.code == R.SYSTEM_ERROR
    assert response.remark.startswith("Can't modify topic or subscription group from slave broker")
