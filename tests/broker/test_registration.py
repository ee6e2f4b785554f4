"""Registration with NameServers (``BrokerOuterAPI#registerBrokerAll``), answered by our NameServer's processor."""

import zlib

import pytest
from twisted.internet import defer

from rmqproto.broker.registration import build_register_request, register_period
from rmqproto.codec import headers as h
from rmqproto.codec.bodies.topic import RegisterBrokerBody, TopicConfig
from rmqproto.codec.codes import CURRENT_VERSION, RequestCode as RC, ResponseCode as R
from rmqproto.codec.frame import FLAG_ONEWAY, decode_frame
from rmqproto.namesrv.kvconfig import KVConfig
from rmqproto.namesrv.processor import NameServerProcessor
from rmqproto.namesrv.routeinfo import RouteInfoManager
from rmqproto.remoting import RequestContext, RequestDispatcher, RemotingTimeoutError
from rmqproto.services.namesrv import SETTINGS as NAMESRV_SETTINGS
from brokerkit import call, make_controller

NAMESRVS = "127.0.0.1:9876;127.0.0.1:9877"


class NameServers:
    """Stands in for ``RemotingClient``: each address is one of our NameServer processors."""

    def __init__(self, clock, addresses=NAMESRVS, down=()):
        self.sent = []
        self.down = set(down)
        self.route_infos = {}
        self.dispatchers = {}
        for address in addresses.split(";"):
            self.route_infos[address] = RouteInfoManager()
            self.dispatchers[address] = dispatcher = RequestDispatcher()
            config, _ = NAMESRV_SETTINGS.resolve()
            NameServerProcessor(self.route_infos[address], KVConfig(), config, NAMESRV_SETTINGS,
                                clock).register_with(dispatcher)

    def invoke(self, address, request, timeout=3):
        request.version = CURRENT_VERSION  # as RemotingProtocol.send_request stamps it
        self.sent.append((address, request))
        if address in self.down:
            return defer.fail(RemotingTimeoutError("down"))
        frame = self.dispatchers[address].dispatch(request, RequestContext(object(), "10.0.0.1:5"))
        return defer.succeed(decode_frame(frame[4:]) if frame else None)

    def invoke_oneway(self, address, request):
        request.flag |= FLAG_ONEWAY
        return self.invoke(address, request).addCallback(lambda _: None)

    def close(self):
        return defer.succeed(None)

    def route(self, address, topic):
        return self.route_infos[address].pickup_topic_route_data(topic)

    def codes(self):
        return [request.code for _, request in self.sent]


@pytest.fixture
def broker(tmp_path):
    controller = make_controller(tmp_path, namesrvAddr=NAMESRVS)
    controller.client = NameServers(controller.reactor)
    return controller


def test_register_request_matches_java(tmp_path):
    controller = make_controller(tmp_path, listenPort="20911")
    wrapper = controller.topic_config_manager.build_topic_config_serialize_wrapper()
    for compressed in (False, True):
        request = build_register_request(controller.config, wrapper, compressed)
        header = h.RegisterBrokerRequestHeader.from_ext_fields(request.ext_fields)
        assert (header.broker_addr, header.ha_server_addr) == ("10.0.0.1:20911", "10.0.0.2:20912")
        assert (header.broker_name, header.cluster_name, header.broker_id) == (
            "broker-a", "DefaultCluster", 0)
        assert header.compressed is compressed
        assert header.body_crc32 == zlib.crc32(request.body) & 0x7FFFFFFF
        body = RegisterBrokerBody.decode(request.body, compressed)
        assert set(body.topic_config_serialize_wrapper.topic_config_table) == set(
            wrapper.topic_config_table)


def test_unwritable_broker_registers_its_own_perm(tmp_path):
    controller = make_controller(tmp_path, brokerPermission="4")
    wrapper = controller.topic_config_manager.build_topic_config_serialize_wrapper()
    body = RegisterBrokerBody.decode(build_register_request(controller.config, wrapper).body)
    assert {tc.perm for tc in body.topic_config_serialize_wrapper.topic_config_table.values()} == {4}


def test_start_registers_with_every_nameserver_then_periodically(broker):
    broker.start()
    assert broker.client.codes() == [RC.REGISTER_BROKER] * 2
    for address in NAMESRVS.split(";"):
        route = broker.client.route(address, "TBW102")
        assert route.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911"}
    broker.reactor.advance(9.9)
    assert len(broker.client.sent) == 2
    broker.reactor.advance(0.1)
    assert len(broker.client.sent) == 4  # first periodic registration after 10 s
    broker.reactor.advance(30)
    assert len(broker.client.sent) == 6
    broker.registration.stop()
    # its first pass (at 60 s) creates the half topic, which registers it as Java does
    broker.transaction_check_service.stop()
    broker.reactor.advance(60)
    assert len(broker.client.sent) == 6


@pytest.mark.parametrize("period, seconds", [(1000, 10), (30000, 30), (600000, 60)])
def test_register_period_is_clamped(tmp_path, period, seconds):
    assert register_period(make_controller(tmp_path, registerNameServerPeriod=str(period)).config) == seconds


def test_a_nameserver_down_does_not_stop_the_others(broker):
    broker.client.down.add("127.0.0.1:9876")
    results = []
    broker.registration.register_all().addCallback(results.append)
    assert len(results[0]) == 1
    assert broker.client.route("127.0.0.1:9877", "TBW102") is not None


def test_auto_created_topic_is_registered_oneway(broker):
    from test_send import send
    assert send(broker, topic="Fresh").code == R.SUCCESS
    address, request = broker.client.sent[-1]
    assert request.code == RC.REGISTER_BROKER and request.flag & FLAG_ONEWAY
    assert broker.client.route(address, "Fresh").queue_datas[0].write_queue_nums == 4


def test_update_and_create_topic_registers_only_that_topic(broker):
    ext = h.CreateTopicRequestHeader(topic="Admin", default_topic="TBW102", read_queue_nums=3,
                                     write_queue_nums=3, perm=6, topic_filter_type="SINGLE_TAG",
                                     topic_sys_flag=0, order=False).to_ext_fields()
    assert call(broker, RC.UPDATE_AND_CREATE_TOPIC, ext).code == R.SUCCESS
    (_, request), (_, _) = broker.client.sent
    body = RegisterBrokerBody.decode(request.body)
    assert list(body.topic_config_serialize_wrapper.topic_config_table) == ["Admin"]
    assert body.topic_config_serialize_wrapper.data_version == broker.topic_config_manager.data_version
    assert not request.flag & FLAG_ONEWAY


def test_slave_learns_master_and_ha_address(tmp_path):
    master = make_controller(tmp_path / "m", namesrvAddr="127.0.0.1:9876")
    slave = make_controller(tmp_path / "s", namesrvAddr="127.0.0.1:9876", brokerRole="SLAVE",
                            brokerId="1", listenPort="10921", brokerIP1="10.0.0.9")
    master.client = slave.client = NameServers(master.reactor, "127.0.0.1:9876")
    learned = []
    slave.registration.master_listeners.append(lambda *a: learned.append(a))
    slave.registration.register_all()
    assert slave.registration.master_addr is None  # the master is not registered yet
    master.registration.register_all()
    slave.registration.register_all()
    assert slave.registration.master_addr == "10.0.0.1:10911"
    assert slave.registration.ha_master_address == "10.0.0.2:10912"
    assert learned == [("10.0.0.1:10911", "10.0.0.2:10912")]
    slave.registration.register_all()
    assert len(learned) == 1


def test_configured_ha_master_address_is_kept(tmp_path):
    slave = make_controller(tmp_path, namesrvAddr="127.0.0.1:9876", brokerRole="SLAVE",
                            brokerId="1", haMasterAddress="10.9.9.9:10912")
    slave.client = NameServers(slave.reactor, "127.0.0.1:9876")
    slave.registration.register_all()
    assert slave.registration.ha_master_address == "10.9.9.9:10912"


def test_without_force_register_only_a_changed_version_registers(tmp_path):
    broker = make_controller(tmp_path, namesrvAddr="127.0.0.1:9876", forceRegister="false")
    broker.client = NameServers(broker.reactor, "127.0.0.1:9876")
    broker.registration.register_all()
    broker.registration.register_periodically()
    assert broker.client.codes() == [RC.REGISTER_BROKER, RC.QUERY_DATA_VERSION]
    broker.topic_config_manager.update_topic_config(TopicConfig("Changed"))
    broker.registration.register_periodically()
    assert broker.client.codes()[2:] == [RC.QUERY_DATA_VERSION, RC.REGISTER_BROKER]


def test_shutdown_unregisters_from_every_nameserver(broker):
    broker.start()
    broker.shutdown()
    assert broker.client.codes()[-2:] == [RC.UNREGISTER_BROKER] * 2
    assert broker.client.route("127.0.0.1:9876", "TBW102") is None
    assert broker.store.stopped
