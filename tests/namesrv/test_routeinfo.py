"""The pure route table: registration, slaves, routes, expiry and channel close (Java ``RouteInfoManager``)."""

import pytest

from rmqproto.codec.bodies.topic import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from rmqproto.namesrv.routeinfo import RouteInfoManager

MASTER = "10.0.0.1:10911"
SLAVE = "10.0.0.2:10911"


def wrapper(*topics, counter=1, **overrides):
    table = {t: TopicConfig(topic_name=t, read_queue_nums=4, write_queue_nums=4, **overrides)
             for t in topics}
    return TopicConfigSerializeWrapper(topic_config_table=table,
                                       data_version=DataVersion(timestamp=1000, counter=counter))


@pytest.fixture
def routes():
    table = RouteInfoManager(expired_time=120_000)
    table.register_broker("C", MASTER, "broker-a", 0, "10.0.0.1:10912", wrapper("T1", "T2"),
                          [], "conn-master", now=0)
    return table


def test_master_registration_creates_routes(routes):
    route = routes.pickup_topic_route_data("T1")
    assert [q.broker_name for q in route.queue_datas] == ["broker-a"]
    assert route.queue_datas[0].read_queue_nums == 4 and route.queue_datas[0].perm == 6
    assert route.broker_datas[0].broker_addrs == {0: MASTER}
    assert routes.get_all_cluster_info().cluster_addr_table == {"C": ["broker-a"]}
    assert routes.pickup_topic_route_data("missing") is None


def test_slave_learns_master_ha_and_remoting_address(routes):
    result = routes.register_broker("C", SLAVE, "broker-a", 1, "10.0.0.2:10912",
                                    wrapper("SLAVE_ONLY"), [], "conn-slave", now=5)
    assert (result.ha_server_addr, result.master_addr) == ("10.0.0.1:10912", MASTER)
    # queue data comes only from masters
    assert routes.pickup_topic_route_data("SLAVE_ONLY") is None
    assert routes.pickup_topic_route_data("T1").broker_datas[0].broker_addrs == {0: MASTER, 1: SLAVE}


def test_slave_without_live_master_gets_no_addresses():
    table = RouteInfoManager()
    result = table.register_broker("C", SLAVE, "broker-a", 1, "h", wrapper("T"), [], None, now=0)
    assert result.ha_server_addr is None and result.master_addr is None


def test_slave_promoted_to_master_keeps_one_id_per_address(routes):
    routes.register_broker("C", SLAVE, "broker-a", 1, "h", wrapper(), [], None, now=0)
    routes.unregister_broker("C", MASTER, "broker-a", 0)
    routes.register_broker("C", SLAVE, "broker-a", 0, "h", wrapper("T1"), [], None, now=1)
    assert routes.broker_addr_table["broker-a"].broker_addrs == {0: SLAVE}


def test_queue_data_refreshed_only_when_data_version_changes(routes):
    routes.register_broker("C", MASTER, "broker-a", 0, "h", wrapper("T3"), [], None, now=1)
    assert routes.pickup_topic_route_data("T3") is None  # same data version: ignored
    routes.register_broker("C", MASTER, "broker-a", 0, "h", wrapper("T3", counter=2), [], None,
                           now=2)
    assert routes.pickup_topic_route_data("T3") is not None
    assert routes.pickup_topic_route_data("T1") is not None  # missing topics are kept (RMQ4)


def test_expiry_after_silence_and_heartbeat_refresh(routes):
    assert routes.scan_not_active_brokers(now=120_000) == []
    routes.update_broker_info_update_timestamp(MASTER, 100_000)
    assert routes.scan_not_active_brokers(now=200_000) == []
    assert routes.scan_not_active_brokers(now=220_001) == [(MASTER, "conn-master")]
    assert routes.pickup_topic_route_data("T1") is None
    assert routes.get_all_cluster_info().cluster_addr_table == {}
    assert routes.get_all_topic_list().topic_list == []


def test_connection_close_removes_broker_at_once(routes):
    assert routes.on_connection_closed("10.9.9.9:5555", "conn-master") == MASTER
    assert routes.pickup_topic_route_data("T1") is None
    assert routes.broker_addr_table == {}


def test_connection_close_of_unknown_peer_changes_nothing(routes):
    assert routes.on_connection_closed("10.9.9.9:5555", object()) is None
    assert routes.pickup_topic_route_data("T1") is not None


def test_unregister_keeps_broker_while_other_addresses_remain(routes):
    routes.register_broker("C", SLAVE, "broker-a", 1, "h", wrapper(), [], None, now=0)
    routes.unregister_broker("C", MASTER, "broker-a", 0)
    assert routes.pickup_topic_route_data("T1").broker_datas[0].broker_addrs == {1: SLAVE}
    routes.unregister_broker("C", SLAVE, "broker-a", 1)
    assert routes.pickup_topic_route_data("T1") is None


def test_write_permission_wipe_and_add(routes):
    assert routes.wipe_write_perm_of_broker("broker-a") == 2
    assert routes.pickup_topic_route_data("T1").queue_datas[0].perm == 4
    assert routes.add_write_perm_of_broker("broker-a") == 2
    assert routes.pickup_topic_route_data("T2").queue_datas[0].perm == 6
    assert routes.wipe_write_perm_of_broker("nobody") == 0


def test_delete_topic_everywhere_or_per_cluster(routes):
    routes.register_broker("D", "10.0.0.3:10911", "broker-b", 0, "h", wrapper("T1"), [], None,
                           now=0)
    routes.delete_topic("T1", "D")
    assert [q.broker_name for q in routes.pickup_topic_route_data("T1").queue_datas] == ["broker-a"]
    routes.delete_topic("T1")
    assert routes.pickup_topic_route_data("T1") is None


def test_topic_lists(routes):
    routes.register_broker("D", "10.0.0.3:10911", "broker-b", 0, "h",
                           wrapper("UNIT", topic_sys_flag=1), [], None, now=0)
    assert sorted(routes.get_topics_by_cluster("C").topic_list) == ["T1", "T2"]
    assert routes.get_topics_by_cluster("nope").topic_list == []
    assert routes.topics_where(lambda q: q.topic_sys_flag & 1).topic_list == ["UNIT"]
    system = routes.get_system_topic_list()
    assert set(system.topic_list) == {"C", "broker-a", "D", "broker-b"}
    assert system.broker_addr == MASTER


def test_filter_servers_appear_in_routes(routes):
    routes.register_broker("C", MASTER, "broker-a", 0, "h", wrapper("T1"), ["10.0.0.9:1"], None,
                           now=0)
    assert routes.pickup_topic_route_data("T1").filter_server_table == {MASTER: ["10.0.0.9:1"]}
