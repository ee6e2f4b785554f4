"""A blocking remoting client for tests that drive servers running in other processes."""

import socket
import time

from rmqproto.codec.frame import FrameDecoder, RemotingCommand, decode_frame, encode_frame


class SyncClient:
    """One TCP connection; :meth:`call` sends a request and waits for its response."""

    def __init__(self, address, timeout=10.0):
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.decoder = FrameDecoder()
        self.frames = []
        self.opaque = 0

    def send_raw(self, data):
        self.sock.sendall(data)

    def read_command(self):
        """The next command from the server; raises ``ConnectionError`` if it closes."""
        while not self.frames:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("server closed the connection")
            self.frames.extend(self.decoder.feed(data))
        return decode_frame(self.frames.pop(0))

    def call(self, code, ext_fields=None, body=b"", version=409, **kw):
        self.opaque += 1
        request = RemotingCommand(int(code), opaque=self.opaque, ext_fields=ext_fields, body=body,
                                  version=version, **kw)
        self.send_raw(encode_frame(request))
        while True:
            response = self.read_command()
            if response.is_response and response.opaque == self.opaque:
                return response

    def is_closed_by_peer(self, timeout=5.0):
        """True once the server has closed this connection (waits up to ``timeout``)."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (socket.timeout, BlockingIOError):
            return False
        except ConnectionResetError:
            return True

    def close(self):
        self.sock.close()


def call(address, code, ext_fields=None, body=b"", **kw):
    """One request on a fresh connection."""
    client = SyncClient(address)
    try:
        return client.call(code, ext_fields, body, **kw)
    finally:
        client.close()


def wait_until(predicate, timeout=30.0, interval=0.2):
    """Poll ``predicate`` until it returns a true value (returned) or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met after %.0f s" % timeout)
        time.sleep(interval)


def create_topic(address, topic, queues=1):
    """UPDATE_AND_CREATE_TOPIC of ``topic`` (``queues`` read and write queues, perm 6) on the
    broker at ``address``; asserts it succeeded."""
    from rmqproto.codec import headers
    from rmqproto.codec.codes import RequestCode, ResponseCode

    header = headers.CreateTopicRequestHeader(
        topic=topic, default_topic="TBW102", read_queue_nums=queues, write_queue_nums=queues,
        perm=6, topic_filter_type="SINGLE_TAG", topic_sys_flag=0, order=False)
    answer = call(address, RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
    assert answer.code == ResponseCode.SUCCESS, answer.remark
