"""Load on a broker from a blocking socket, without Twisted: what each broker can take when
the client costs as little as Python allows.

``send`` only: the topic's master is looked up on the NameServer (GET_ROUTEINFO_BY_TOPIC,
as ``loadclient.py`` does), then one connection (``TCP_NODELAY``) keeps THREADS requests in
flight, sending as many new ones as answers arrive. The requests are 1024 SEND_MESSAGE_V2
frames built as ``loadclient.py`` builds them (a ``UNIQ_KEY`` each, ``WAIT=true``, queues
round-robin) and encoded once before the run, with opaques 0 to 1023; they are sent over and
over in that order. Every answer is decoded: its opaque gives the latency of its request
(from the time its frame was last sent to the time the answer was read), and an answer that
is not SUCCESS counts as a failed send. Batches and consuming are not supported.

Output as ``loadclient.py`` and ``BrokerLoad``: ``measuring`` and ``measured`` lines around
the measured window, then one JSON line of figures.

    python benchmarks/rawclient.py NAMESRV send TOPIC THREADS BODY_SIZE 1 WARMUP_S MEASURE_S

:class:`Pipeline` is the part ``limits.py`` shares: pre-encoded frames kept in flight on a
blocking socket.
"""

import json
import socket
import sys
import time

from loadclient import (
    REQUEST_TIMEOUT, Figures, SendRequests, announce, route_of, route_request)
from rmqproto.codec.codes import ResponseCode
from rmqproto.codec.frame import FrameDecoder, decode_frame, encode_frame

#: Requests encoded before a run and sent in turn.
FRAMES = 1024


def encoded_requests(requests, count=FRAMES):
    """``count`` frames of ``requests.next_request()``, the ``i``-th with opaque ``i``."""
    frames = []
    for opaque in range(count):
        request = requests.next_request()
        request.opaque = opaque
        frames.append(encode_frame(request))
    return frames


def connect(address, timeout=REQUEST_TIMEOUT):
    """A blocking ``TCP_NODELAY`` connection to ``host:port`` whose reads time out."""
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class Pipeline:
    """``frames`` (whole, length prefix included) sent over ``sock`` in turn, ``inflight`` at
    a time: :meth:`start` sends the first ones, :meth:`receive` returns the frames that came
    back, :meth:`send` sends the next ones. ``sent_at[i]`` is when frame ``i`` was last sent
    (``time.perf_counter``)."""

    def __init__(self, sock, frames, inflight):
        self.sock, self.frames, self.inflight = sock, frames, inflight
        self.sent = 0
        self.sent_at = [0.0] * len(frames)
        self.decoder = FrameDecoder()

    def start(self):
        self.send(self.inflight)

    def send(self, count):
        """Send the next ``count`` frames in one write."""
        first, total = self.sent, len(self.frames)
        slots = [(first + i) % total for i in range(count)]
        now = time.perf_counter()
        for slot in slots:
            self.sent_at[slot] = now
        self.sock.sendall(b"".join([self.frames[slot] for slot in slots]))
        self.sent += count

    def receive(self):
        """The frames (without length prefix, as :class:`FrameDecoder` yields them) that one
        read completes, maybe none; raises ``ConnectionError`` if the peer closed."""
        data = self.sock.recv(1 << 16)
        if not data:
            raise ConnectionError("the server closed the connection")
        return self.decoder.feed(data)


def call(address, request):
    """``request``'s answer over a new connection to ``address``."""
    with connect(address) as sock:
        request.opaque = 0
        pipeline = Pipeline(sock, [encode_frame(request)], 1)
        pipeline.start()
        while True:
            for frame in pipeline.receive():
                return decode_frame(frame)


def tally(frames, sent_at, figures):
    """Record the latency and outcome of each answer in ``frames`` (read now) into
    ``figures``; the number of answers (frames that are not answers are passed over)."""
    now = time.perf_counter()
    answers = 0
    for frame in frames:
        answer = decode_frame(frame)
        if not answer.is_response:
            continue
        figures.record(now - sent_at[answer.opaque], answer.code != ResponseCode.SUCCESS)
        answers += 1
    return answers


def send(namesrv, topic, threads, body_size, warmup, seconds):
    address, queues = route_of(call(namesrv, route_request(topic)), topic)
    requests = SendRequests(topic, queues, body_size, 1)
    frames = encoded_requests(requests)
    figures = Figures()
    with connect(address) as sock:
        pipeline = Pipeline(sock, frames, threads)
        pipeline.start()
        measure_at = time.perf_counter() + warmup
        start = None
        while True:
            answers = tally(pipeline.receive(), pipeline.sent_at, figures)
            now = time.perf_counter()
            if start is None and now >= measure_at:
                announce("measuring")
                figures.measuring = True
                start = now
            elif start is not None and now - start >= seconds:
                figures.measuring = False
                announce("measured")
                return figures.send_report(now - start, 1)
            if answers:
                pipeline.send(answers)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 8 or argv[1] != "send":
        raise SystemExit(__doc__)
    namesrv, _, topic, threads, body_size, batch, warmup, seconds = argv
    if int(batch) != 1:
        raise SystemExit("rawclient.py sends single messages only (BATCH must be 1)")
    report = send(namesrv, topic, int(threads), int(body_size), float(warmup), float(seconds))
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
