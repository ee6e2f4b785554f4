"""The fault proxy used by the HA fault tests forwards, splits, stalls and drops as told."""

import socket
import threading

import pytest

from support.faultproxy import FaultProxy


@pytest.fixture
def echo_port():
    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=echo, args=(conn,), daemon=True).start()

    def echo(conn):
        with conn:
            while True:
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                conn.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def roundtrip(port, payload):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(payload)
        received = b""
        while len(received) < len(payload):
            data = sock.recv(65536)
            if not data:
                break
            received += data
        return received


def test_forwards_and_splits(echo_port):
    payload = bytes(range(256)) * 40
    with FaultProxy(echo_port) as proxy:
        assert roundtrip(proxy.port, payload) == payload
        proxy.split(7)
        assert roundtrip(proxy.port, payload) == payload
        assert proxy.forwarded == 4 * len(payload)


def test_stall_holds_bytes_until_resume(echo_port):
    with FaultProxy(echo_port) as proxy, \
            socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
        proxy.stall()
        sock.sendall(b"held")
        sock.settimeout(0.3)
        with pytest.raises(socket.timeout):
            sock.recv(10)
        proxy.resume()
        sock.settimeout(5)
        assert sock.recv(10) == b"held"


def test_drop_closes_open_connections_and_accepts_new_ones(echo_port):
    with FaultProxy(echo_port) as proxy, \
            socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
        sock.sendall(b"x")
        assert sock.recv(1) == b"x"
        proxy.drop()
        try:
            assert sock.recv(1) == b""
        except ConnectionResetError:
            pass
        assert roundtrip(proxy.port, b"again") == b"again"
        assert proxy.connections == 2
