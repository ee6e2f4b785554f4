"""Processes the tests start (our daemons, Java peers): ports, readiness, logs, stopping."""

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

__all__ = ["ManagedProcess", "free_port", "wait_for_port"]


def free_port(count=1, step=1):
    """A port p such that p, p+step, … (``count`` of them) are all free on 127.0.0.1."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        ports = [base + i * step for i in range(count)]
        if max(ports) < 65000 and all(_port_free(p) for p in ports):
            return base


def _port_free(port):
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def wait_for_port(port, timeout=60.0, process=None):
    """Block until something accepts on 127.0.0.1:``port``; raise if the process dies first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError("process exited with %s before listening on %d:\n%s"
                               % (process.returncode, port, process.output()))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError("nothing listening on port %d after %.0f s" % (port, timeout))


class ManagedProcess:
    """A process in its own session with its output captured in a log file."""

    def __init__(self, args, log_path, cwd):
        self.log_path = Path(log_path)
        self._log = open(self.log_path, "wb")
        self.popen = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, cwd=cwd,
                                      start_new_session=True)

    def poll(self):
        return self.popen.poll()

    @property
    def returncode(self):
        return self.popen.returncode

    def output(self):
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Send ``sig`` to the process group, wait (SIGKILL after ``timeout``); the exit code."""
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, sig)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
        self._log.close()
        return self.popen.returncode

    def kill(self):
        """kill -9."""
        return self.stop(signal.SIGKILL)
