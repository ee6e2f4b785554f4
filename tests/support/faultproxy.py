"""A TCP proxy for fault tests: it forwards ``127.0.0.1:<port>`` to a target and can stall,
drop or split the traffic on command.

It runs in threads of the test process, so a synchronous test drives it directly::

    with FaultProxy(target_port) as proxy:
        proxy.split(7)        # forward in 7-byte pieces
        proxy.stall()         # hold every byte until resume()
        proxy.drop()          # close every open connection (new ones are accepted)
        proxy.cut()           # close them and refuse new ones until heal(): a partition
"""

import socket
import struct
import threading
import time

__all__ = ["FaultProxy"]

_BUFFER = 256 * 1024


class FaultProxy:
    """Forwards each accepted connection to ``target_port`` on 127.0.0.1."""

    def __init__(self, target_port, target_host="127.0.0.1"):
        self.target = (target_host, target_port)
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._lock = threading.Lock()
        self._running = threading.Event()
        self._running.set()  # cleared while stalled
        self._chunk = None
        self._pairs = []
        self._closed = False
        self._cut = False
        self.forwarded = 0  #: bytes taken for forwarding, both directions
        self.connections = 0  #: connections accepted so far
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    # ------------------------------------------------------------ faults

    def stall(self):
        """Hold all traffic (connections stay open) until :meth:`resume`."""
        self._running.clear()

    def resume(self):
        self._running.set()

    def split(self, size):
        """Forward in pieces of at most ``size`` bytes, each sent on its own (``None``: whole reads)."""
        self._chunk = size

    def drop(self):
        """Close every open connection abruptly; later connections are accepted as usual."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for sock in pair:
                _close(sock, abort=True)

    def cut(self):
        """Drop every connection and refuse new ones until :meth:`heal` (a network partition)."""
        self._cut = True
        self.drop()

    def heal(self):
        self._cut = False

    def close(self):
        self._closed = True
        self.resume()
        _close(self._server)
        self.drop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------ forwarding

    def _accept(self):
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if self._cut:
                _close(client, abort=True)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _close(client, abort=True)
                continue
            pair = (client, upstream)
            with self._lock:
                self._pairs.append(pair)
                self.connections += 1
            for source, sink in (pair, pair[::-1]):
                threading.Thread(target=self._pump, args=(source, sink, pair), daemon=True).start()

    def _pump(self, source, sink, pair):
        try:
            while True:
                data = source.recv(_BUFFER)
                if not data:
                    break
                self._running.wait()
                self._send(sink, data)
        except OSError:
            pass
        with self._lock:
            if pair in self._pairs:
                self._pairs.remove(pair)
        for sock in pair:
            _close(sock)

    def _send(self, sink, data):
        with self._lock:
            self.forwarded += len(data)
        chunk = self._chunk
        if not chunk:
            sink.sendall(data)
        else:
            for start in range(0, len(data), chunk):
                sink.sendall(data[start:start + chunk])
                time.sleep(0)  # let the peer see the pieces separately


def _close(sock, abort=False):
    """Close ``sock``, waking a thread blocked reading it; ``abort`` resets the connection."""
    try:
        if abort:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
