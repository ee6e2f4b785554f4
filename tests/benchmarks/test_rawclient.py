"""``benchmarks/rawclient.py``: frames split across reads, answers matched to their requests
by opaque, non-SUCCESS answers counted as failed sends, the route looked up first; against
a fake server in this process (no timing is asserted)."""

import json
import socket
import sys
import threading
from pathlib import Path

import pytest

from rmqproto.codec.bodies.route import BrokerData, QueueData, TopicRouteData
from rmqproto.codec.codes import RequestCode, ResponseCode
from rmqproto.codec.frame import FrameDecoder, RemotingCommand, decode_frame, encode_frame

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import rawclient  # noqa: E402
from loadclient import Figures, SendRequests  # noqa: E402

TOPIC = "RawTopic"


def answer(request, code):
    return encode_frame(request.response(code))


def send_requests(count):
    return rawclient.encoded_requests(SendRequests(TOPIC, 4, 16, 1), count)


def test_pipeline_splits_answers_across_reads_and_tallies_them():
    client, server = socket.socketpair()
    with client, server:
        pipeline = rawclient.Pipeline(client, send_requests(5), 3)
        pipeline.start()
        decoder = FrameDecoder()
        requests = [decode_frame(f) for f in decoder.feed(server.recv(1 << 16))]
        assert [r.opaque for r in requests] == [0, 1, 2]
        assert {r.code for r in requests} == {RequestCode.SEND_MESSAGE_V2}
        # the first answer in two pieces, then a request from the server (not an answer),
        # then a failure and a success in one write
        first = answer(requests[0], ResponseCode.SUCCESS)
        server.sendall(first[:7])
        figures = Figures()
        figures.measuring = True
        assert rawclient.tally(pipeline.receive(), pipeline.sent_at, figures) == 0
        notice = encode_frame(RemotingCommand(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, opaque=9))
        server.sendall(first[7:] + notice)
        assert rawclient.tally(pipeline.receive(), pipeline.sent_at, figures) == 1
        server.sendall(answer(requests[2], ResponseCode.SYSTEM_BUSY)
                       + answer(requests[1], ResponseCode.SUCCESS))
        assert rawclient.tally(pipeline.receive(), pipeline.sent_at, figures) == 2
        pipeline.send(3)
        again = [decode_frame(f) for f in decoder.feed(server.recv(1 << 16))]
    assert [r.opaque for r in again] == [3, 4, 0]  # in turn, over and over
    assert again[2].ext_fields == requests[0].ext_fields
    report = figures.send_report(1.0, 1)
    assert (report["sends"], report["errors"]) == (3, 1)
    assert report["max_us"] >= report["mean_us"] >= 0


class FakeServer:
    """A NameServer and broker on one port: routes ``TOPIC`` to itself (4 queues) and
    answers sends, every third one with SYSTEM_BUSY."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.sends = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection):
        decoder = FrameDecoder()
        with connection:
            while True:
                data = connection.recv(1 << 16)
                if not data:
                    return
                out = [self._response(decode_frame(frame)) for frame in decoder.feed(data)]
                connection.sendall(b"".join(out))

    def _response(self, request):
        if request.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            route = TopicRouteData(
                queue_datas=[QueueData(broker_name="b", read_queue_nums=4, write_queue_nums=4,
                                       perm=6)],
                broker_datas=[BrokerData(broker_name="b", cluster="c",
                                         broker_addrs={0: self.address})])
            return encode_frame(request.response(ResponseCode.SUCCESS,
                                                 body=route.to_json()))
        self.sends += 1
        code = ResponseCode.SYSTEM_BUSY if self.sends % 3 == 0 else ResponseCode.SUCCESS
        return answer(request, code)

    def close(self):
        self.listener.close()


@pytest.fixture
def fake_server():
    server = FakeServer()
    yield server
    server.close()


def test_main_prints_measuring_measured_and_the_figures(fake_server, capsys):
    rawclient.main([fake_server.address, "send", TOPIC, "4", "16", "1", "0.05", "0.2"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["measuring", "measured"]
    report = json.loads(lines[2])
    assert set(report) == {"sends", "messages", "seconds", "rps", "tps", "mean_us", "p99_us",
                           "max_us", "errors"}
    assert report["sends"] > 0
    assert report["errors"] in range(report["sends"] // 3 - 2, report["sends"] // 3 + 3)


def test_main_refuses_batches():
    with pytest.raises(SystemExit):
        rawclient.main(["127.0.0.1:1", "send", TOPIC, "4", "16", "32", "0.05", "0.2"])
