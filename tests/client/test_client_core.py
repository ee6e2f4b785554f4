"""The client core on a scripted world and a fake clock: queue selection, latency fault
tolerance, retries, routes, NameServer strategies, request building and message ids."""

import random
import zlib

import pytest

from clientkit import NOW, World, make_core, route_data, send
from rmqproto.client import BrokerError, ClientError, Message, SendStatus
from rmqproto.client.fault import LatencyFaultTolerance, not_available_duration
from rmqproto.client.message import UniqueIds, id_ip, id_time_ms, month_start_ms
from rmqproto.client.nameserver import NameServerStrategy, make_strategy
from rmqproto.client.producer import selecting
from rmqproto.client.route import MessageQueue, TopicRoute
from rmqproto.codec import message as wire
from rmqproto.codec.codes import RequestCode, ResponseCode
from rmqproto.codec.headers import SendMessageRequestHeaderV2
from rmqproto.remoting.errors import RemotingConnectionError, RemotingTimeoutError

ROUTES = {"T": route_data("a", "b")}


def route_calls(world):
    return sum(1 for _, r in world.calls if r.code == RequestCode.GET_ROUTEINFO_BY_TOPIC)


# ---------------------------------------------------------------- queue selection

def test_sends_go_round_robin_over_every_write_queue():
    core, world = make_core(), World(ROUTES)
    queues = [send(core, world, Message("T", b"x")).queue for _ in range(16)]
    assert sorted(set(queues)) == [MessageQueue("T", b, q) for b in "ab" for q in range(4)]
    assert queues[:8] != queues[8:] or len(set(queues[:8])) == 8
    assert route_calls(world) == 1


def test_a_retry_avoids_the_broker_that_just_failed():
    for seed in range(8):
        world = World(ROUTES, {"a": lambda h, r: RemotingTimeoutError("slow")})
        core = make_core(seed)
        result = send(core, world, Message("T", b"x"))
        assert result.queue.broker_name == "b"
        assert world.sent_to()[-1] == "b" and world.sent_to().count("a") <= 1


def test_a_failed_send_refreshes_the_route_before_the_retry():
    core = make_core()
    world = World(ROUTES, {"a": lambda h, r: RemotingConnectionError("down"),
                           "b": lambda h, r: RemotingConnectionError("down")})
    with pytest.raises(ClientError, match=r"Send \[3\] times") as info:
        send(core, world, Message("T", b"x"))
    assert isinstance(info.value.__cause__, RemotingConnectionError)
    assert world.sent_to() in (["a", "b", "a"], ["b", "a", "b"])
    assert route_calls(world) == 3  # the first lookup and one before each retry


# ---------------------------------------------------------------- retries by mode and code

@pytest.mark.parametrize("code", [ResponseCode.SYSTEM_ERROR, ResponseCode.SERVICE_NOT_AVAILABLE,
                                  ResponseCode.TOPIC_NOT_EXIST, ResponseCode.NO_PERMISSION])
def test_sync_retries_the_broker_codes_java_retries(code):
    world = World(ROUTES, {"a": lambda h, r: code})
    result = send(make_core(1), world, Message("T", b"x"))
    assert result.status is SendStatus.SEND_OK and result.queue.broker_name == "b"


def test_other_broker_codes_end_the_send_at_once():
    world = World(ROUTES, {"a": lambda h, r: ResponseCode.MESSAGE_ILLEGAL,
                           "b": lambda h, r: ResponseCode.MESSAGE_ILLEGAL})
    with pytest.raises(BrokerError) as info:
        send(make_core(), world, Message("T", b"x"))
    assert info.value.code == ResponseCode.MESSAGE_ILLEGAL and len(world.sent_to()) == 1


def test_async_retries_transport_errors_only():
    down = World(ROUTES, {"a": lambda h, r: RemotingConnectionError("x"),
                          "b": lambda h, r: RemotingConnectionError("x")})
    with pytest.raises(ClientError):
        send(make_core(retryTimesWhenSendAsyncFailed=4), down, Message("T", b"x"), "async")
    assert len(down.sent_to()) == 5
    busy = World(ROUTES, {"a": lambda h, r: ResponseCode.SYSTEM_ERROR,
                          "b": lambda h, r: ResponseCode.SYSTEM_ERROR})
    with pytest.raises(BrokerError):
        send(make_core(), busy, Message("T", b"x"), "async")
    assert len(busy.sent_to()) == 1


def test_oneway_is_tried_once_and_returns_nothing():
    core, world = make_core(), World(ROUTES)
    assert send(core, world, Message("T", b"x"), "oneway") is None
    assert world.calls[-1][1].is_oneway
    down = World(ROUTES, {"a": lambda h, r: RemotingConnectionError("x"),
                          "b": lambda h, r: RemotingConnectionError("x")})
    with pytest.raises(ClientError):
        send(make_core(), down, Message("T", b"x"), "oneway")
    assert len(down.sent_to()) == 1


@pytest.mark.parametrize("another, expected", [(False, SendStatus.FLUSH_SLAVE_TIMEOUT),
                                               (True, SendStatus.SEND_OK)])
def test_retry_another_broker_when_not_store_ok(another, expected):
    world = World(ROUTES, {"a": lambda h, r: ResponseCode.FLUSH_SLAVE_TIMEOUT})
    core = make_core(3, retryAnotherBrokerWhenNotStoreOK=another)
    results = [send(core, world, Message("T", b"x")) for _ in range(4)]
    assert {r.status for r in results if r.queue.broker_name == "a"} <= {expected}
    assert any(s == "a" for s in world.sent_to())
    assert all(r.status is (SendStatus.SEND_OK if r.queue.broker_name == "b" else expected)
               for r in results)


def test_retries_stop_when_send_msg_timeout_is_spent():
    world = World(ROUTES, {"a": lambda h, r: RemotingTimeoutError("t"),
                           "b": lambda h, r: RemotingTimeoutError("t")},
                  latency=lambda call: 0 if call.request.code == RequestCode.GET_ROUTEINFO_BY_TOPIC else 1600)
    with pytest.raises(ClientError, match="call timeout"):
        send(make_core(), world, Message("T", b"x"))
    sends = [r for _, r in world.calls if r.code != RequestCode.GET_ROUTEINFO_BY_TOPIC]
    assert len(sends) == 2
    timeouts = []
    world2 = World(ROUTES, {"a": lambda h, r: RemotingTimeoutError("t"), "b": lambda h, r: RemotingTimeoutError("t")},
                   latency=lambda call: 0 if call.request.code == RequestCode.GET_ROUTEINFO_BY_TOPIC else 1000)
    core = make_core()
    steps = core.send(core.prepare(Message("T", b"x"), world2.now), "sync", world2.now)
    reply = None
    with pytest.raises(ClientError):
        while True:
            call = steps.send(reply)
            if call.request.code != RequestCode.GET_ROUTEINFO_BY_TOPIC:
                timeouts.append(call.timeout_ms)
            reply = world2.answer(call)
    assert timeouts == [3000, 2000, 1000]


def test_a_selected_queue_is_used_and_tried_once():
    core, world = make_core(), World(ROUTES)
    pick = selecting(lambda queues, message, arg: queues[arg], Message("T", b"x"), 5)
    result = send(core, world, core.prepare(Message("T", b"x"), world.now), choose=pick)
    assert result.queue == MessageQueue("T", "b", 1)
    down = World(ROUTES, {"b": lambda h, r: RemotingConnectionError("x")})
    with pytest.raises(ClientError, match=r"Send \[1\] times"):
        send(make_core(), down, Message("T", b"x"), choose=pick)
    with pytest.raises(ClientError, match="select message queue return null"):
        send(make_core(), World(ROUTES), Message("T", b"x"), choose=lambda queues: None)
    with pytest.raises(ClientError, match=r"The broker\[z\] not exist"):
        send(make_core(), World(ROUTES), Message("T", b"x"),
             choose=lambda queues: MessageQueue("T", "z", 0))


# ---------------------------------------------------------------- latency fault tolerance

def test_not_available_duration_follows_javas_tables():
    assert [not_available_duration(ms) for ms in (0, 49, 100, 549, 550, 999, 1000, 2000, 3000,
                                                  14999, 15000, 30000)] == [
        0, 0, 0, 0, 30000, 30000, 60000, 120000, 180000, 180000, 600000, 600000]


def test_a_slow_broker_is_avoided_until_its_duration_passes():
    slow = {"a": 600, "b": 5}

    def latency(call):
        return 0 if call.request.code == RequestCode.GET_ROUTEINFO_BY_TOPIC else slow[call.address[0]]

    world = World(ROUTES, latency=latency)
    core = make_core(0, sendLatencyFaultEnable=True)
    while send(core, world, Message("T", b"x")).queue.broker_name != "a":
        pass
    marked = world.now
    assert not core.selector.faults.is_available("a", world.now)
    brokers = [send(core, world, Message("T", b"x")).queue.broker_name for _ in range(20)]
    assert set(brokers) == {"b"}
    world.now = marked + 30000
    brokers = [send(core, world, Message("T", b"x")).queue.broker_name for _ in range(4)]
    assert "a" in brokers


def test_without_fault_tolerance_a_slow_broker_keeps_its_turn():
    world = World(ROUTES, latency=lambda c: 600)
    core = make_core(0)
    brokers = [send(core, world, Message("T", b"x")).queue.broker_name for _ in range(8)]
    assert brokers.count("a") == brokers.count("b") == 4


def test_when_every_broker_is_unavailable_one_of_the_better_half_is_tried():
    faults = LatencyFaultTolerance(random.Random(1))
    for name, latency in (("a", 100), ("b", 900), ("c", 2000), ("d", 5000)):
        faults.update(name, latency, 60000, NOW)
    picks = {faults.pick_one_at_least(NOW) for _ in range(10)}
    assert picks == {"a", "b"}
    faults.update("d", 5000, 0, NOW)
    assert faults.is_available("d", NOW) and not faults.is_available("a", NOW + 59999)
    assert LatencyFaultTolerance(random.Random()).pick_one_at_least(NOW) is None


def test_all_brokers_isolated_still_sends_to_a_queue_of_a_known_broker():
    world = World(ROUTES)
    core = make_core(0, sendLatencyFaultEnable=True)
    for name in "ab":
        core.selector.update_fault(name, 30000, True, world.now)
    result = send(core, world, Message("T", b"x"))
    assert result.status is SendStatus.SEND_OK and result.queue.queue_id < 4


# ---------------------------------------------------------------- routes

def test_the_route_is_fetched_again_after_poll_name_server_interval():
    core, world = make_core(), World(dict(ROUTES))
    send(core, world, Message("T", b"x"))
    world.routes["T"] = route_data("b")
    world.now += 29000
    assert send(core, world, Message("T", b"x")) and route_calls(world) == 1
    world.now += 1000
    assert {send(core, world, Message("T", b"x")).queue.broker_name for _ in range(4)} == {"b"}
    assert route_calls(world) == 2
    assert core.live_addresses() == {"b:10911", "ns1:9876", "ns2:9876"}  # broker a is gone


def test_an_unknown_topic_borrows_the_auto_create_route():
    world = World({"TBW102": route_data("a", queues=8)})
    core = make_core(defaultTopicQueueNums=3)
    result = send(core, world, Message("NewTopic", b"x"))
    header = SendMessageRequestHeaderV2.from_ext_fields(world.calls[-1][1].ext_fields)
    assert (header.topic, header.default_topic, header.default_topic_queue_nums) == ("NewTopic", "TBW102", 3)
    assert core.routes["NewTopic"][0].queues == [MessageQueue("NewTopic", "a", i) for i in range(3)]
    assert result.queue.topic == "NewTopic"
    with pytest.raises(ClientError, match="No route info of this topic: Other"):
        send(make_core(), World({}), Message("Other", b"x"))


def test_a_known_route_is_kept_while_no_name_server_answers():
    core, world = make_core(), World(ROUTES)
    send(core, world, Message("T", b"x"))
    world.down |= {"ns1:9876", "ns2:9876"}
    world.now += 60000
    assert send(core, world, Message("T", b"x")).status is SendStatus.SEND_OK
    lookups = route_calls(world)
    assert send(core, world, Message("T", b"x")).status is SendStatus.SEND_OK
    assert route_calls(world) == lookups  # not asked again before pollNameServerInterval
    with pytest.raises(ClientError, match="no NameServer answered"):
        send(core, world, Message("U", b"x"))


def test_publish_queues_need_a_master_and_write_permission():
    data = route_data("a", "b", "c")
    data.queue_datas[1].perm = 4  # b: read only
    data.broker_datas[2].broker_addrs = {1: "c-slave:10911"}  # c: no master
    route = TopicRoute("T", data)
    assert {q.broker_name for q in route.queues} == {"a"}
    assert {q.broker_name for q in route.read_queues} == {"a", "b", "c"}
    assert route.subscribe_address("c") == ("c-slave:10911", True)
    assert route.subscribe_address("c", only_this=True) == (None, False)
    assert route.subscribe_address("a") == ("a:10911", False)
    data.order_topic_conf = "b:2;a:1"
    assert TopicRoute("T", data).queues == [MessageQueue("T", "b", 0), MessageQueue("T", "b", 1),
                                            MessageQueue("T", "a", 0)]


# ---------------------------------------------------------------- NameServer strategies

def _spread(name, addresses, rounds, fail=()):
    strategy = make_strategy(name, addresses, random.Random(4))
    chosen = []
    for i in range(rounds):
        address = strategy.choose(NOW + i)
        strategy.begin(address, NOW + i)
        chosen.append(address)
        strategy.end(address, address not in fail, NOW + i)
    return chosen


def test_random_strategy_keeps_its_name_server_until_it_fails():
    assert len(set(_spread("random", ["n1", "n2", "n3"], 6))) == 1
    starts = {make_strategy("random", ["n1", "n2", "n3"], random.Random(s)).choose(NOW)
              for s in range(20)}
    assert starts == {"n1", "n2", "n3"}
    strategy = make_strategy("random", ["n1", "n2", "n3"], random.Random(2))
    first = strategy.choose(NOW)
    strategy.end(first, False, NOW)
    second = strategy.choose(NOW)
    strategy.end(second, True, NOW)
    assert second != first and strategy.choose(NOW) == second


def test_fixed_round_robin_and_fewest_connections():
    assert set(_spread("fixed", ["n1", "n2", "n3"], 5, fail={"n1"})) == {"n1"}
    chosen = _spread("round-robin", ["n1", "n2", "n3"], 6)
    assert sorted(chosen) == ["n1", "n1", "n2", "n2", "n3", "n3"] and chosen[:3] == chosen[3:]
    fewest = make_strategy("fewest-connections", ["n1", "n2", "n3"], random.Random(0))
    opened = [fewest.choose(NOW) for _ in range(3) if not fewest.begin(fewest.choose(NOW), NOW)]
    assert sorted(opened) == ["n1", "n2", "n3"]  # one open request on each
    fewest.end("n2", False, NOW)
    fewest.end("n3", True, NOW)
    assert fewest.choose(NOW) == "n3"  # n2 failed: it rests for 30 s
    fewest.begin("n3", NOW)
    fewest.begin("n3", NOW)
    assert fewest.choose(NOW + 29999) == "n1" and fewest.choose(NOW + 30000) == "n2"
    with pytest.raises(ClientError, match="unknown nameServerStrategy"):
        make_strategy("nearest", ["n1"], random.Random())
    with pytest.raises(ClientError, match="No name server address"):
        next(make_core(namesrvAddr="").ask_nameserver(None, NOW))


def test_a_strategy_of_ones_own_can_be_plugged_in():
    class Last(NameServerStrategy):
        def choose(self, now):
            return self.addresses[-1]

    world = World(ROUTES)
    core = make_core(nameServerStrategy=Last)
    send(core, world, Message("T", b"x"))
    assert world.calls[0][0] == "ns2:9876"


def test_a_failed_name_server_is_followed_by_the_next():
    world = World(ROUTES)
    core = make_core(namesrvAddr="ns1:9876;ns2:9876;ns3:9876", nameServerStrategy="round-robin")
    world.down.add(core.nameservers.addresses[(core.nameservers.index + 1) % 3])
    assert send(core, world, Message("T", b"x")).status is SendStatus.SEND_OK
    assert [a for a, r in world.calls if r.code == RequestCode.GET_ROUTEINFO_BY_TOPIC][1] not in world.down


# ---------------------------------------------------------------- requests

def test_the_send_request_is_shaped_like_javas():
    core, world = make_core(producerGroup="pg"), World(ROUTES)
    message = Message("T", "héllo", tags="TagA", keys=["k1", "k2"], properties={"color": "red"},
                      delay_level=3, flag=9)
    result = send(core, world, message)  # the route lookup took 1 ms: born then
    request = world.calls[-1][1]
    header = SendMessageRequestHeaderV2.from_ext_fields(request.ext_fields)
    assert request.code == RequestCode.SEND_MESSAGE_V2 and request.language == "PYTHON"
    assert (header.producer_group, header.topic, header.default_topic, header.sys_flag,
            header.flag, header.born_timestamp, header.batch) == ("pg", "T", "TBW102", 0, 9, NOW + 1, False)
    assert header.broker_name == result.queue.broker_name and header.queue_id == result.queue.queue_id
    props = wire.string_to_properties(header.properties)
    assert props == {"color": "red", "TAGS": "TagA", "KEYS": "k1 k2", "DELAY": "3", "WAIT": "true",
                     "UNIQ_KEY": result.msg_id}
    assert request.body == "héllo".encode()
    assert result.offset_msg_id == "%032X" % result.queue_offset


def test_a_send_header_from_its_topic_template_is_the_whole_header_encoded():
    core = make_core(producerGroup="pg")
    for outgoing, queue, now in [
            (core.prepare(Message("T", b"x", tags="A", flag=-3), NOW), MessageQueue("T", "a", 7), NOW),
            (core.prepare_batch([Message("U", b"y"), Message("U", b"z")], NOW),
             MessageQueue("U", "broker-b", 0), 2**62),
            (core.prepare(Message("T", b"c" * 5000), NOW), MessageQueue("T", "b", 3), 0)]:
        fields = core.build_request(outgoing, queue, now).ext_fields
        whole = SendMessageRequestHeaderV2(
            producer_group="pg", topic=outgoing.topic, default_topic="TBW102",
            default_topic_queue_nums=4, queue_id=queue.queue_id, sys_flag=outgoing.sys_flag,
            born_timestamp=now, flag=outgoing.flag,
            properties=wire.properties_to_string(outgoing.properties), reconsume_times=0,
            unit_mode=False, batch=outgoing.batch, broker_name=queue.broker_name).to_ext_fields()
        assert list(fields.items()) == list(whole.items())  # the same fields in the same order


def test_bodies_from_compress_msg_body_over_howmuch_are_zlib_compressed():
    core = make_core(compressMsgBodyOverHowmuch=100)
    small, big = core.prepare(Message("T", b"s" * 99), NOW), core.prepare(Message("T", b"b" * 100), NOW)
    assert (small.sys_flag, small.body) == (0, b"s" * 99)
    assert big.sys_flag == wire.COMPRESSED_FLAG and zlib.decompress(big.body) == b"b" * 100
    assert make_core().prepare(Message("T", b"b" * 4095), NOW).sys_flag == 0
    assert make_core().prepare(Message("T", b"b" * 4096), NOW).sys_flag == wire.COMPRESSED_FLAG


def test_a_batch_carries_each_message_with_its_own_id():
    core, world = make_core(), World(ROUTES)
    messages = [Message("T", b"m%d" % i, tags="t", keys="k%d" % i) for i in range(3)]
    result = send(core, world, core.prepare_batch(messages, world.now))
    request = world.calls[-1][1]
    header = SendMessageRequestHeaderV2.from_ext_fields(request.ext_fields)
    assert request.code == RequestCode.SEND_BATCH_MESSAGE and header.batch
    items = wire.decode_batch(request.body)
    assert [m.body for m in items] == [b"m0", b"m1", b"m2"]
    assert ",".join(m.properties["UNIQ_KEY"] for m in items) == result.msg_id
    assert [m.properties["KEYS"] for m in items] == ["k0", "k1", "k2"]


@pytest.mark.parametrize("build, error", [
    (lambda c: c.prepare_batch([], NOW), "at least one"),
    (lambda c: c.prepare_batch([Message("T", b"x"), Message("U", b"x")], NOW), "should be the same"),
    (lambda c: c.prepare_batch([Message("T", b"x", delay_level=2)], NOW), "not supported for batching"),
    (lambda c: c.prepare(Message("T", b""), NOW), "length is zero"),
    (lambda c: c.prepare(Message("bad topic", b"x"), NOW), "illegal characters"),
    (lambda c: c.prepare(Message("T" * 128, b"x"), NOW), "longer than topic max length"),
    (lambda c: c.prepare(Message("T", b"x" * 101), NOW), "over max value, MAX: 100"),
    (lambda c: Message("T", b"x", properties={"KEYS": "k"}), "used by the system"),
])
def test_bad_messages_are_refused_before_anything_is_sent(build, error):
    with pytest.raises(ClientError, match=error):
        build(make_core(maxMessageSize=100))


def test_unknown_settings_are_refused():
    with pytest.raises(ClientError, match="sendMsgTimeOut"):
        make_core(sendMsgTimeOut=5)
    with pytest.raises(ClientError, match="non-negative int"):
        make_core(sendMsgTimeout="3000")


# ---------------------------------------------------------------- UNIQ_KEY

def test_unique_ids_are_shaped_as_message_client_id_setter():
    ids = UniqueIds("10.1.2.3", 0x12345, 0xCAFEBABE)
    first, second = ids.next_id(NOW), ids.next_id(NOW + 5)
    assert len(first) == 32 and first[:20] == "0A010203" + "2345" + "CAFEBABE"
    assert int(second[-4:], 16) == int(first[-4:], 16) + 1
    assert id_ip(first) == "10.1.2.3"
    assert id_time_ms(first, NOW + 1000) == NOW and id_time_ms(second, NOW + 5) == NOW + 5
    assert int(first[20:28], 16) == NOW - month_start_ms(NOW)
    ids.counter = 0xFFFF
    assert ids.next_id(NOW)[-4:] == "FFFF" and ids.next_id(NOW)[-4:] == "0000"
    next_month = month_start_ms(NOW + 32 * 86_400_000)
    assert ids.next_id(next_month + 7)[20:28] == "00000007"
    assert id_time_ms(first, next_month + 10) == NOW  # read in the next month


def test_heartbeats_to_masters_when_due_and_unregister():
    world = World({"T": route_data("a", "b")})
    core = make_core(heartbeatBrokerInterval=30_000)
    send(core, world, Message("T", "x"))
    assert core.heartbeat_due(world.now)  # masters not tried yet
    world.down.add("b:10911")
    world.now = world.run(core.heartbeat(world.now))
    beats = [(a, r) for a, r in world.calls if r.code == RequestCode.HEART_BEAT]
    assert [a for a, _ in beats] == ["a:10911", "b:10911"]
    body = beats[0][1].body.decode()
    assert '"groupName":"DEFAULT_PRODUCER"' in body and '"consumerDataSet":[]' in body
    assert not core.heartbeat_due(world.now)  # the dead master is not asked after each send
    assert core.heartbeat_due(world.now + 30_000)
    del world.calls[:]
    world.run(core.shutdown(world.now))
    assert [(a, r.code, r.ext_fields["producerGroup"]) for a, r in world.calls] == [
        ("a:10911", RequestCode.UNREGISTER_CLIENT, "DEFAULT_PRODUCER")]
