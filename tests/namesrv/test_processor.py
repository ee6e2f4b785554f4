"""NameServer requests through the dispatcher, answered as the Java NameServer answers them."""

import gc
import zlib

import pytest
from twisted.internet.task import Clock

from rmqproto.codec import headers as h
from rmqproto.codec.bodies.route import ClusterInfo, KVTable, TopicList, TopicRouteData
from rmqproto.codec.bodies.topic import (
    DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper,
)
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.frame import RemotingCommand, decode_frame
from rmqproto.namesrv.kvconfig import KVConfig
from rmqproto.namesrv.processor import NameServerProcessor
from rmqproto.namesrv.routeinfo import RouteInfoManager
from rmqproto.remoting import RequestContext, RequestDispatcher
from rmqproto.services.namesrv import SETTINGS


class Server:
    def __init__(self, tmp_path):
        self.clock = Clock()
        self.clock.advance(1_700_000_000)
        self.config, _ = SETTINGS.resolve({"kvConfigPath": str(tmp_path / "kv.json")})
        self.kv = KVConfig()
        self.routes = RouteInfoManager()
        self.dispatcher = RequestDispatcher()
        self.processor = NameServerProcessor(
            self.routes, self.kv, self.config, SETTINGS, self.clock,
            persist_kv=lambda: self.kv.persist(self.config["kvConfigPath"]))
        self.processor.register_with(self.dispatcher)

    def call(self, code, header=None, body=b"", version=409, connection="conn", **ext):
        fields = header.to_ext_fields() if header is not None else (ext or None)
        request = RemotingCommand(int(code), opaque=7, ext_fields=fields, body=body,
                                  version=version)
        frame = self.dispatcher.dispatch(request, RequestContext(connection, "127.0.0.1:40000"))
        return decode_frame(frame[4:])


@pytest.fixture
def server(tmp_path):
    return Server(tmp_path)


def register(server, broker_id=0, addr="127.0.0.1:10911", topics=("T",), compressed=False,
             connection="conn", counter=1):
    table = {t: TopicConfig(topic_name=t, read_queue_nums=8, write_queue_nums=8) for t in topics}
    body = RegisterBrokerBody(topic_config_serialize_wrapper=TopicConfigSerializeWrapper(
        topic_config_table=table, data_version=DataVersion(timestamp=1, counter=counter)))
    raw = body.encode(compressed=compressed)
    header = h.RegisterBrokerRequestHeader(
        broker_name="broker-a", broker_addr=addr, cluster_name="DefaultCluster",
        ha_server_addr=addr.replace("10911", "10912"), broker_id=broker_id,
        compressed=compressed, body_crc32=zlib.crc32(raw) & 0x7FFFFFFF)
    return server.call(RC.REGISTER_BROKER, header, raw, connection=connection)


@pytest.mark.parametrize("compressed", [False, True])
def test_register_and_route_standard_and_fastjson(server, compressed):
    response = register(server, compressed=compressed)
    assert response.code == R.SUCCESS and response.is_response and response.opaque == 7
    assert response.ext_fields == {}  # master: no haServerAddr/masterAddr
    route = server.call(RC.GET_ROUTEINFO_BY_TOPIC, h.GetRouteInfoRequestHeader(topic="T"))
    assert route.code == R.SUCCESS and b'"brokerAddrs":{"0":' in route.body
    old = server.call(RC.GET_ROUTEINFO_BY_TOPIC, h.GetRouteInfoRequestHeader(topic="T"), version=400)
    assert b'"brokerAddrs":{0:' in old.body
    opted = server.call(RC.GET_ROUTEINFO_BY_TOPIC, h.GetRouteInfoRequestHeader(
        topic="T", accept_standard_json_only=True), version=400)
    assert TopicRouteData.from_json(opted.body) == TopicRouteData.from_json(old.body)
    assert b'{"0":' in opted.body


def test_slave_is_told_master_addresses(server):
    register(server)
    response = register(server, broker_id=1, addr="127.0.0.2:10911", connection="slave")
    assert response.ext_fields == {"haServerAddr": "127.0.0.1:10912", "masterAddr": "127.0.0.1:10911"}


def test_bad_crc_is_rejected_and_nothing_registered(server):
    header = h.RegisterBrokerRequestHeader(
        broker_name="b", broker_addr="a:1", cluster_name="c", ha_server_addr="a:2",
        broker_id=0, compressed=False, body_crc32=12345)
    response = server.call(RC.REGISTER_BROKER, header, RegisterBrokerBody().to_json())
    assert (response.code, response.remark) == (R.SYSTEM_ERROR, "crc32 not match")
    assert server.routes.broker_addr_table == {}


def test_missing_required_field_is_system_error(server):
    response = server.call(RC.REGISTER_BROKER, brokerName="b")
    assert response.code == R.SYSTEM_ERROR and "brokerAddr" in response.remark


def test_unknown_topic_and_unknown_code(server):
    response = server.call(RC.GET_ROUTEINFO_BY_TOPIC, h.GetRouteInfoRequestHeader(topic="nope"))
    assert response.code == R.TOPIC_NOT_EXIST
    assert response.remark.startswith("No topic route info in name server for the topic: nope\nSee ")
    response = server.call(9999)
    assert (response.code, response.remark) == (R.REQUEST_CODE_NOT_SUPPORTED,
                                                 " request type 9999 not supported")


def test_invalid_register_body_is_system_error(server):
    header = h.RegisterBrokerRequestHeader(broker_name="b", broker_addr="a:1", cluster_name="c",
                                           ha_server_addr="a:2", broker_id=0, compressed=False)
    assert server.call(RC.REGISTER_BROKER, header, b"{not json").code == R.SYSTEM_ERROR
    header.compressed = True
    assert server.call(RC.REGISTER_BROKER, header, b"not zlib").code == R.SYSTEM_ERROR
    assert server.routes.broker_addr_table == {}


def test_kv_config_round_trip_and_persistence(server, tmp_path):
    put = h.PutKVConfigRequestHeader(namespace="ns", key="k", value="v")
    assert server.call(RC.PUT_KV_CONFIG, put).code == R.SUCCESS
    got = server.call(RC.GET_KV_CONFIG, h.GetKVConfigRequestHeader(namespace="ns", key="k"))
    assert (got.code, got.ext_fields) == (R.SUCCESS, {"value": "v"})
    listing = server.call(RC.GET_KVLIST_BY_NAMESPACE, h.GetKVListByNamespaceRequestHeader(namespace="ns"))
    assert KVTable.from_json(listing.body).table == {"k": "v"}
    reloaded = KVConfig()
    reloaded.load(str(tmp_path / "kv.json"))
    assert reloaded.get("ns", "k") == "v"
    server.call(RC.DELETE_KV_CONFIG, h.DeleteKVConfigRequestHeader(namespace="ns", key="k"))
    missing = server.call(RC.GET_KV_CONFIG, h.GetKVConfigRequestHeader(namespace="ns", key="k"))
    assert missing.code == R.QUERY_NOT_FOUND
    assert missing.remark == "No config item, Namespace: ns Key: k"
    empty = server.call(RC.GET_KVLIST_BY_NAMESPACE, h.GetKVListByNamespaceRequestHeader(namespace="x"))
    assert (empty.code, empty.remark) == (R.QUERY_NOT_FOUND, "No config item, Namespace: x")


def test_order_topic_conf_in_route_when_enabled(server):
    register(server)
    server.call(RC.PUT_KV_CONFIG, h.PutKVConfigRequestHeader(
        namespace="ORDER_TOPIC_CONFIG", key="T", value="broker-a:8"))
    route = server.call(RC.GET_ROUTEINFO_BY_TOPIC, h.GetRouteInfoRequestHeader(topic="T"))
    assert TopicRouteData.from_json(route.body).order_topic_conf is None
    server.config["orderMessageEnable"] = True
    route = server.call(RC.GET_ROUTEINFO_BY_TOPIC, h.GetRouteInfoRequestHeader(topic="T"))
    assert TopicRouteData.from_json(route.body).order_topic_conf == "broker-a:8"
    # a registering broker receives the ORDER_TOPIC_CONFIG namespace
    assert KVTable.from_json(register(server).body).table == {"T": "broker-a:8"}


def test_query_data_version_refreshes_liveness(server):
    register(server)
    server.clock.advance(100)
    header = h.QueryDataVersionRequestHeader(broker_name="broker-a", broker_addr="127.0.0.1:10911",
                                             cluster_name="DefaultCluster", broker_id=0)
    same = server.call(RC.QUERY_DATA_VERSION, header, DataVersion(timestamp=1, counter=1).to_json())
    assert same.ext_fields == {"changed": "false"}
    assert DataVersion.from_json(same.body) == DataVersion(timestamp=1, counter=1)
    assert server.routes.broker_live_table["127.0.0.1:10911"].last_update == 1_700_000_100_000
    other = server.call(RC.QUERY_DATA_VERSION, header, DataVersion(timestamp=2, counter=2).to_json())
    assert other.ext_fields == {"changed": "true"}


def test_cluster_info_topic_lists_and_perm(server):
    register(server, topics=("T", "U"))
    info = ClusterInfo.from_json(server.call(RC.GET_BROKER_CLUSTER_INFO).body)
    assert info.cluster_addr_table == {"DefaultCluster": ["broker-a"]}
    all_topics = TopicList.from_json(server.call(RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body)
    assert sorted(all_topics.topic_list) == ["T", "U"]
    by_cluster = server.call(RC.GET_TOPICS_BY_CLUSTER, h.GetTopicsByClusterRequestHeader(
        cluster="DefaultCluster"))
    assert sorted(TopicList.from_json(by_cluster.body).topic_list) == ["T", "U"]
    wipe = server.call(RC.WIPE_WRITE_PERM_OF_BROKER, h.WipeWritePermOfBrokerRequestHeader(
        broker_name="broker-a"))
    assert wipe.ext_fields == {"wipeTopicCount": "2"}
    add = server.call(RC.ADD_WRITE_PERM_OF_BROKER, h.AddWritePermOfBrokerRequestHeader(
        broker_name="broker-a"))
    assert add.ext_fields == {"addTopicCount": "2"}
    server.call(RC.DELETE_TOPIC_IN_NAMESRV, h.DeleteTopicFromNamesrvRequestHeader(topic="U"))
    assert TopicList.from_json(server.call(
        RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body).topic_list == ["T"]


def test_unregister_removes_routes(server):
    register(server)
    header = h.UnRegisterBrokerRequestHeader(broker_name="broker-a", broker_addr="127.0.0.1:10911",
                                             cluster_name="DefaultCluster", broker_id=0)
    assert server.call(RC.UNREGISTER_BROKER, header).code == R.SUCCESS
    route = server.call(RC.GET_ROUTEINFO_BY_TOPIC, h.GetRouteInfoRequestHeader(topic="T"))
    assert route.code == R.TOPIC_NOT_EXIST


def test_namesrv_config_get_and_update(server):
    body = server.call(RC.GET_NAMESRV_CONFIG).body.decode()
    assert "listenPort=9876\n" in body
    update = server.call(RC.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n")
    assert update.code == R.SUCCESS and server.config["orderMessageEnable"] is True
    denied = server.call(RC.UPDATE_NAMESRV_CONFIG, body=b"kvConfigPath=/tmp/x\n")
    assert (denied.code, denied.remark) == (R.NO_PERMISSION, "Can not update config path")
    for bad in (b"listenPort=abc\n", b"scanNotActiveBrokerInterval=0\n"):
        refused = server.call(RC.UPDATE_NAMESRV_CONFIG, body=bad)
        assert refused.code == R.SYSTEM_ERROR and bad.split(b"=")[0].decode() in refused.remark
    assert server.config["listenPort"] == 9876
    assert server.config["scanNotActiveBrokerInterval"] == 10_000


def test_route_answers_follow_every_table_change(server):
    """Route answers are cached per table version: every change is seen at once."""
    route = lambda: server.call(RC.GET_ROUTEINFO_BY_TOPIC, h.GetRouteInfoRequestHeader(topic="T"))
    assert route().code == R.TOPIC_NOT_EXIST
    register(server)
    assert [q.perm for q in TopicRouteData.from_json(route().body).queue_datas] == [6]
    server.call(RC.WIPE_WRITE_PERM_OF_BROKER, h.WipeWritePermOfBrokerRequestHeader(broker_name="broker-a"))
    assert [q.perm for q in TopicRouteData.from_json(route().body).queue_datas] == [4]
    register(server, broker_id=1, addr="127.0.0.2:10911", connection="slave")
    assert set(TopicRouteData.from_json(route().body).broker_datas[0].broker_addrs) == {0, 1}
    server.routes.on_connection_closed("x", "slave")
    assert set(TopicRouteData.from_json(route().body).broker_datas[0].broker_addrs) == {0}
    server.call(RC.DELETE_TOPIC_IN_NAMESRV, h.DeleteTopicFromNamesrvRequestHeader(topic="T"))
    assert route().code == R.TOPIC_NOT_EXIST
    register(server, counter=2)  # a new data version brings the topic back
    assert route().code == R.SUCCESS
    server.routes.scan_not_active_brokers(now=10 ** 15)
    assert route().code == R.TOPIC_NOT_EXIST


def test_repeated_heartbeat_body_is_decoded_once(server, monkeypatch):
    decoded = []
    original = RegisterBrokerBody.decode
    monkeypatch.setattr(RegisterBrokerBody, "decode",
                        classmethod(lambda cls, *a: decoded.append(1) or original(*a)))
    register(server)
    register(server)
    assert len(decoded) == 1
    register(server, topics=("T", "U"), counter=2)
    assert len(decoded) == 2


def _register_bodies_alive():
    gc.collect()
    return sum(isinstance(o, RegisterBrokerBody) for o in gc.get_objects())


def test_bodies_of_brokers_gone_are_not_kept(server):
    """The decoded heartbeat bodies kept for the repeat check belong to live brokers only: a
    broker that unregistered, lost its connection or expired leaves none behind, however
    many come and go (with changing addresses, as in containers)."""
    before = _register_bodies_alive()
    for n in range(30):
        addr = "10.0.%d.1:10911" % n
        register(server, addr=addr, connection=n)
        if n % 3 == 0:
            server.call(RC.UNREGISTER_BROKER, h.UnRegisterBrokerRequestHeader(
                broker_name="broker-a", broker_addr=addr, cluster_name="DefaultCluster",
                broker_id=0))
        elif n % 3 == 1:
            server.routes.on_connection_closed(addr, n)
        else:
            server.routes.scan_not_active_brokers(now=10 ** 15)
    register(server, addr="10.1.0.1:10911", connection="last")
    assert len(server.routes.broker_live_table) == 1
    assert _register_bodies_alive() == before + 1
