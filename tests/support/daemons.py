"""Our own servers, started the way an operator starts them: ``twistd -n <plugin> …``."""

import os
import signal
import subprocess
import sys
from pathlib import Path

from support.javapeers import free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[2]

_TWISTD = "from twisted.scripts.twistd import run; run()"


class Daemon:
    """A ``twistd -n`` process with its log captured; ``stop()`` sends SIGTERM and waits."""

    def __init__(self, workdir, plugin, *args, port=None):
        self.workdir = Path(workdir)
        self.log_path = self.workdir / ("%s.log" % plugin)
        self._log = open(self.log_path, "wb")
        command = [sys.executable, "-c", _TWISTD, "-n", "--pidfile=", plugin, *map(str, args)]
        self.popen = subprocess.Popen(command, cwd=self.workdir, stdout=self._log,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        if port is not None:
            wait_for_port(port, 30, self)

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
        """Stop the process (SIGTERM by default); its exit code."""
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, sig)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
        self._log.close()
        return self.popen.returncode


def start_nameserver(workdir, *args):
    """``twistd -n rmq-nameserver`` on a free port; returns ``(daemon, "127.0.0.1:port")``."""
    port = free_port()
    daemon = Daemon(workdir, "rmq-nameserver", "--listenPort", port, "--bindAddress", "127.0.0.1",
                    "--kvConfigPath", Path(workdir) / "kvConfig.json",
                    "--configStorePath", Path(workdir) / "namesrv.properties", *args, port=port)
    return daemon, "127.0.0.1:%d" % port
