"""The two transports on their own, over real sockets on 127.0.0.1 without a broker:
what a silent, closing, refusing or chatty server does to a call."""

import socket
import threading
import time

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock

from clientkit import NOW, World, route_data
from rmqproto.client import ClientError, Message, MessageQueue
from rmqproto.client import blocking, deferred
from rmqproto.codec.codes import RequestCode
from rmqproto.codec.frame import FLAG_RESPONSE, FrameDecoder, RemotingCommand, decode_frame, encode_frame
from rmqproto.remoting.errors import RemotingConnectionError, RemotingTimeoutError
from support.processes import free_port
from support.realreactor import run_reactor


class Server:
    """A listening socket on 127.0.0.1; ``serve(connection)`` runs in a thread per accept."""

    def __init__(self, serve=None):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.accepted = []
        if serve is not None:
            threading.Thread(target=self._accept, args=(serve,), daemon=True).start()

    def _accept(self, serve):
        while True:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(connection)
            serve(connection)

    def close(self):
        self.sock.close()
        for connection in self.accepted:
            connection.close()


def read_request(connection):
    decoder = FrameDecoder()
    while True:
        frames = decoder.feed(connection.recv(65536))
        if frames:
            return decode_frame(frames[0])


@pytest.fixture
def refused():
    return "127.0.0.1:%d" % free_port()


def test_a_silent_server_times_out():
    server = Server()  # the kernel accepts; nobody answers
    try:
        connection = blocking.Connection(server.address, 1)
        with pytest.raises(RemotingTimeoutError):
            connection.call(RemotingCommand(RequestCode.GET_ROUTEINFO_BY_TOPIC), 0.2)
        connection.close()
    finally:
        server.close()


def test_a_closing_server_fails_the_call_and_the_connection():
    server = Server(lambda connection: connection.close())
    try:
        connection = blocking.Connection(server.address, 1)
        with pytest.raises(RemotingConnectionError, match="connection to .* failed"):
            connection.call(RemotingCommand(RequestCode.GET_ROUTEINFO_BY_TOPIC), 2)
    finally:
        server.close()


def test_the_response_is_matched_by_opaque():
    def serve(connection):
        request = read_request(connection)
        chatter = [RemotingCommand(39, opaque=1000),  # a request from the server
                   RemotingCommand(0, opaque=request.opaque + 5, flag=FLAG_RESPONSE),  # not ours
                   request.response(0, body=route_data("a").to_json())]
        connection.sendall(b"".join(encode_frame(c) for c in chatter))

    server = Server(serve)
    try:
        connection = blocking.Connection(server.address, 1)
        answer = connection.call(RemotingCommand(RequestCode.GET_ROUTEINFO_BY_TOPIC), 2)
        assert answer.code == 0 and b"brokerDatas" in answer.body
    finally:
        server.close()


def test_refused_name_servers_end_the_send_with_a_clear_error(refused):
    producer = blocking.Producer(namesrvAddr="%s;%s" % (refused, refused))
    with pytest.raises(ClientError, match="no NameServer answered") as info:
        producer.send(Message("T", b"x"))
    assert isinstance(info.value.__cause__, RemotingConnectionError)
    assert producer.connections == {}


def test_the_twisted_producer_fails_the_same_way(refused):
    def scenario(reactor):
        producer = deferred.Producer(reactor, namesrvAddr=refused)
        failures = []
        done = producer.send(Message("T", b"x")).addErrback(failures.append)
        bad = producer.send(Message("T", b"")).addErrback(failures.append)

        def check(_):
            assert all(f.check(ClientError) for f in failures)
            bad_first, refused_then = sorted((str(f.value) for f in failures), key=len)
            assert "length is zero" in bad_first and "no NameServer answered" in refused_then
            return producer.close()

        return done.addCallback(lambda _: bad).addCallback(check)

    run_reactor(scenario, timeout=20)


def test_connections_to_brokers_gone_from_the_routes_are_closed():
    routes = {"T": route_data("a")}
    broker_a = Server()
    answered = []

    def namesrv(connection):
        while True:
            try:
                request = read_request(connection)
            except OSError:
                return
            data = routes["T"]
            answered.append(request.opaque)
            connection.sendall(encode_frame(request.response(0, body=data.to_json())))

    ns = Server(namesrv)
    try:
        producer = blocking.Producer(namesrvAddr=ns.address, sendMsgTimeout=300,
                                     retryTimesWhenSendFailed=0)
        data = route_data("a")
        data.broker_datas[0].broker_addrs = {0: broker_a.address}
        routes["T"] = data
        with pytest.raises(ClientError):
            producer.send(Message("T", b"x"))  # broker a is silent: the send times out
        assert set(producer.connections) == {ns.address, broker_a.address}
        routes["T"] = route_data("b")  # a is no longer in the route: its connection goes
        with pytest.raises(ClientError):
            producer.send(Message("T", b"x"))  # route fetched again after the failure
        assert broker_a.address not in producer.connections
    finally:
        ns.close()
        broker_a.close()


def test_the_twisted_producer_refreshes_its_routes_every_poll_interval():
    clock = Clock()
    clock.advance(NOW / 1000)
    world = World({"T": route_data("a", "b")}, latency=0)
    producer = deferred.Producer(clock, namesrvAddr="ns:9876", pollNameServerInterval=30000)
    producer._perform = lambda call: defer.succeed(world.answer(call))  # no sockets
    results = []
    producer.send(Message("T", b"x")).addCallback(results.append)
    assert results[0].status.name == "SEND_OK"
    lookups = lambda: sum(1 for _, r in world.calls if r.code == RequestCode.GET_ROUTEINFO_BY_TOPIC)  # noqa: E731
    clock.advance(29.9)
    assert lookups() == 1
    world.routes["T"] = route_data("b")
    world.now = NOW + 30000
    clock.advance(0.1)
    assert lookups() == 2 and producer.core.routes["T"][0].broker_names() == ["b"]
    world.down.add("ns:9876")  # a failed refresh keeps the route
    clock.advance(30)
    assert lookups() == 3 and producer.core.routes["T"][0].broker_names() == ["b"]
    producer.close()
    clock.advance(60)
    assert lookups() == 3


def test_pull_consumers_wait_out_their_poll_timeout_while_no_nameserver_answers(refused):
    queue = MessageQueue("T", "broker-a", 0)
    with blocking.LitePullConsumer(namesrvAddr=refused) as consumer:
        consumer.assign([queue])
        started = time.monotonic()
        assert consumer.poll(0.3) == []
        assert 0.3 <= time.monotonic() - started < 5
        consumer.commit_sync()  # no position moved: nothing to send
        with pytest.raises(ClientError, match="no NameServer answered"):
            consumer.seek(queue, 0)

    async def scenario(reactor):
        consumer = deferred.LitePullConsumer(reactor, namesrvAddr=refused)
        consumer.subscribe("T")
        assert await consumer.poll(0.3) == []
        await consumer.close()

    run_reactor(lambda reactor: defer.Deferred.fromCoroutine(scenario(reactor)), timeout=20)
