"""Load on a broker from Python: a Twisted client built on ``rmqproto.remoting.RemotingClient``
and the codecs, measuring what ``BrokerLoad.java`` measures with the Java client.

``send``: THREADS senders share one connection to the topic's master (as the Java client's
threads share one channel); each has one request in flight and sends the next as soon as
the answer arrives (closed loop), so THREADS is the number of concurrent requests. Each
request is a SEND_MESSAGE_V2 (or, with BATCH > 1, a SEND_BATCH_MESSAGE of BATCH messages)
shaped like the Java client's: a new ``UNIQ_KEY`` for every message, ``WAIT=true``, queues
taken round-robin. ``consume``: one pull in flight per queue (as the push consumer keeps),
PULL_MESSAGE of up to 32 messages from offset 0, every record decoded, until EXPECTED
messages arrived.

Output as ``BrokerLoad``: ``measuring`` and ``measured`` lines around the measured window,
then one JSON line of figures.

    python benchmarks/loadclient.py NAMESRV send TOPIC THREADS BODY_SIZE BATCH WARMUP_S MEASURE_S
    python benchmarks/loadclient.py NAMESRV consume TOPIC EXPECTED TIMEOUT_S
"""

import itertools
import json
import os
import sys
import time

from twisted.internet import defer, task

from rmqproto.codec import headers as h
from rmqproto.codec.bodies.route import TopicRouteData
from rmqproto.codec.codes import RequestCode, ResponseCode
from rmqproto.codec.frame import RemotingCommand
from rmqproto.codec.message import (
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX as UNIQ_KEY, PROPERTY_WAIT_STORE_MSG_OK as WAIT,
    Message, encode_batch, iter_records, properties_to_string)
from rmqproto.remoting import RemotingClient

#: PullSysFlag bits a push consumer sets: suspend (long polling) and subscription (Java ``PullSysFlag``).
PULL_SYS_FLAG = 0x2 | 0x4
PULL_BATCH = 32
REQUEST_TIMEOUT = 3.0
PRODUCER_GROUP = "bench_producer"


class UniqueKeys:
    """``UNIQ_KEY`` values shaped like ``MessageClientIDSetter``'s: 32 hex digits, a fixed
    prefix for this process and a counter."""

    def __init__(self):
        self._prefix = "7F000001%04X%08X" % (os.getpid() & 0xFFFF, int(time.time()) & 0xFFFFFFFF)
        self._counter = itertools.count()

    def __next__(self):
        return "%s%012X" % (self._prefix, next(self._counter))


class SendRequests:
    """SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE requests to ``topic``: the header's fields are
    encoded once and only the queue, born timestamp and properties change per request."""

    def __init__(self, topic, queues, body_size, batch):
        self.body = b"x" * body_size
        self.batch = batch
        self.keys = UniqueKeys()
        self._queues = itertools.cycle(range(queues))
        header = h.SendMessageRequestHeaderV2(
            producer_group=PRODUCER_GROUP, topic=topic, default_topic="TBW102",
            default_topic_queue_nums=4, queue_id=0, sys_flag=0, born_timestamp=0, flag=0,
            properties="", reconsume_times=0, unit_mode=False, batch=batch > 1)
        self._fields = header.to_ext_fields()
        wire = {field.name: field.wire for field in h.SendMessageRequestHeaderV2.fields}
        self._queue_id, self._born, self._properties = (
            wire["queue_id"], wire["born_timestamp"], wire["properties"])

    def _message_properties(self):
        return {WAIT: "true", UNIQ_KEY: next(self.keys)}

    def next_request(self):
        fields = dict(self._fields)
        fields[self._queue_id] = str(next(self._queues))
        fields[self._born] = str(int(time.time() * 1000))
        if self.batch > 1:
            fields[self._properties] = properties_to_string({WAIT: "true"})
            body = encode_batch([Message(self.body, self._message_properties())
                                 for _ in range(self.batch)])
            return RemotingCommand(RequestCode.SEND_BATCH_MESSAGE, ext_fields=fields, body=body)
        fields[self._properties] = properties_to_string(self._message_properties())
        return RemotingCommand(RequestCode.SEND_MESSAGE_V2, ext_fields=fields, body=self.body)

    def send_sync(self, client, count, what):
        """Send ``count`` requests one by one over the ``SyncClient`` ``client``; raise
        ``RuntimeError`` naming ``what`` on the first answer that is not SUCCESS."""
        for _ in range(count):
            request = self.next_request()
            answer = client.call(request.code, request.ext_fields, request.body)
            if answer.code != ResponseCode.SUCCESS:
                raise RuntimeError("%s failed: %s" % (what, answer.remark))


class Figures:
    """Latencies and errors recorded while measuring; the JSON report of a run."""

    def __init__(self):
        self.measuring = False
        self.latencies = []
        self.errors = 0

    def record(self, latency, failed):
        if self.measuring:
            self.latencies.append(latency)
            self.errors += failed

    def send_report(self, seconds, batch):
        latencies = sorted(self.latencies)
        sends = len(latencies)
        return {"sends": sends, "messages": sends * batch, "seconds": seconds,
                "rps": sends / seconds, "tps": sends * batch / seconds,
                "mean_us": sum(latencies) / sends * 1e6 if sends else 0.0,
                "p99_us": latencies[max(0, -(-99 * sends // 100) - 1)] * 1e6 if sends else 0.0,
                "max_us": latencies[-1] * 1e6 if sends else 0.0, "errors": self.errors}


def announce(word):
    print(word, flush=True)


def route_request(topic):
    """The GET_ROUTEINFO_BY_TOPIC request for ``topic``."""
    return RemotingCommand(RequestCode.GET_ROUTEINFO_BY_TOPIC,
                           ext_fields=h.GetRouteInfoRequestHeader(topic=topic).to_ext_fields())


def route_of(answer, topic):
    """``(master address, write queues)`` of ``topic`` from the NameServer's ``answer``."""
    if answer.code != ResponseCode.SUCCESS:
        raise RuntimeError("no route for %s: %s" % (topic, answer.remark))
    data = TopicRouteData.from_json(answer.body)
    return data.broker_datas[0].master_addr(), data.queue_datas[0].write_queue_nums


@defer.inlineCallbacks
def route(client, namesrv, topic):
    """``(master address, write queues)`` of ``topic`` from the NameServer."""
    answer = yield client.invoke(namesrv, route_request(topic))
    return route_of(answer, topic)


@defer.inlineCallbacks
def broker_connection(client, namesrv, topic):
    """``(connection to the topic's master, write queues)``; like the Java client's channels,
    the connection sends without delay (``TCP_NODELAY``)."""
    address, queues = yield route(client, namesrv, topic)
    connection = yield client.connection(address)
    connection.transport.setTcpNoDelay(True)
    return connection, queues


@defer.inlineCallbacks
def closed_loop(reactor, send_one, in_flight, warmup, seconds, batch):
    """Keep ``in_flight`` calls of ``send_one()`` (a Deferred of whether that send failed)
    going, the next one made as one ends; BrokerLoad's report of the measured window."""
    figures = Figures()
    running = [True]

    def send_next():
        if not running[0]:
            return
        started = time.perf_counter()
        send_one().addCallbacks(answered, failed, callbackArgs=(started,),
                                errbackArgs=(started,))

    def answered(refused, started):
        figures.record(time.perf_counter() - started, refused)
        send_next()

    def failed(failure, started):
        figures.record(time.perf_counter() - started, True)
        reactor.callLater(0.1, send_next)  # the connection is gone or the broker is stuck

    for _ in range(in_flight):
        send_next()
    yield task.deferLater(reactor, warmup)
    announce("measuring")
    figures.measuring = True
    start = time.perf_counter()
    yield task.deferLater(reactor, seconds)
    figures.measuring = False
    elapsed = time.perf_counter() - start
    announce("measured")
    running[0] = False
    return figures.send_report(elapsed, batch)


@defer.inlineCallbacks
def send(reactor, client, namesrv, topic, threads, body_size, batch, warmup, seconds):
    connection, queues = yield broker_connection(client, namesrv, topic)
    requests = SendRequests(topic, queues, body_size, batch)

    def send_one():
        sent = connection.send_request(requests.next_request(), REQUEST_TIMEOUT)
        return sent.addCallback(lambda answer: answer.code != ResponseCode.SUCCESS)

    report = yield closed_loop(reactor, send_one, threads, warmup, seconds, batch)
    return report


@defer.inlineCallbacks
def consume(reactor, client, namesrv, topic, expected, timeout):
    connection, queues = yield broker_connection(client, namesrv, topic)
    group = "bench_consumer_%d" % time.monotonic_ns()
    state = {"received": 0, "first": None, "last": None}
    done = defer.Deferred()

    def pull(queue_id, offset):
        header = h.PullMessageRequestHeader(
            consumer_group=group, topic=topic, queue_id=queue_id, queue_offset=offset,
            max_msg_nums=PULL_BATCH, sys_flag=PULL_SYS_FLAG, commit_offset=0,
            suspend_timeout_millis=15_000, subscription="*", sub_version=0,
            expression_type="TAG")
        request = RemotingCommand(RequestCode.PULL_MESSAGE, ext_fields=header.to_ext_fields())
        pulled = connection.send_request(request, 20.0)
        pulled.addCallbacks(arrived, lost, callbackArgs=(queue_id, offset))

    def arrived(answer, queue_id, offset):
        if done.called:
            return
        if answer.code == ResponseCode.SUCCESS:
            count = sum(1 for _ in iter_records(answer.body))
            now = time.perf_counter()
            if state["first"] is None:
                state["first"] = now
                announce("measuring")
            state["received"] += count
            state["last"] = now
            if state["received"] >= expected:
                done.callback(None)
                return
        next_offset = answer.ext_fields.get("nextBeginOffset") if answer.ext_fields else None
        pull(queue_id, int(next_offset) if next_offset is not None else offset)

    def lost(failure):
        if not done.called:
            done.errback(failure)

    for queue_id in range(queues):
        pull(queue_id, 0)
    timer = reactor.callLater(timeout, lambda: done.called or done.callback(None))
    yield done
    if timer.active():
        timer.cancel()
    announce("measured")
    seconds = max(1e-9, (state["last"] or 0) - (state["first"] or 0))
    return {"messages": state["received"], "seconds": seconds,
            "rps": state["received"] / seconds, "tps": state["received"] / seconds, "errors": 0}


@defer.inlineCallbacks
def run(reactor, namesrv, mode, topic, *args):
    client = RemotingClient(reactor)
    try:
        if mode == "send":
            threads, body_size, batch = map(int, args[:3])
            warmup, seconds = map(float, args[3:5])
            report = yield send(reactor, client, namesrv, topic, threads, body_size, batch,
                                warmup, seconds)
        elif mode == "consume":
            report = yield consume(reactor, client, namesrv, topic, int(args[0]), float(args[1]))
        else:
            raise SystemExit("mode must be send or consume: %s" % mode)
        print(json.dumps(report), flush=True)
    finally:
        yield client.close()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 3:
        raise SystemExit(__doc__)
    task.react(run, argv)


if __name__ == "__main__":
    main()
