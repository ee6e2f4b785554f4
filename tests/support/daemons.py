"""Our own servers, started the way an operator starts them: ``twistd -n <plugin> …``."""

import sys
from pathlib import Path

from support.processes import ManagedProcess, free_port, wait_for_port

_TWISTD = "from twisted.scripts.twistd import run; run()"


class Daemon(ManagedProcess):
    """A ``twistd -n <plugin> …`` process; waits for ``port`` when given."""

    def __init__(self, workdir, plugin, *args, port=None):
        command = [sys.executable, "-c", _TWISTD, "-n", "--pidfile=", plugin, *map(str, args)]
        super().__init__(command, Path(workdir) / ("%s.log" % plugin), cwd=workdir)
        if port is not None:
            wait_for_port(port, 30, self)


def start_nameserver(workdir, *args):
    """``twistd -n rmq-nameserver`` on a free port; returns ``(daemon, "127.0.0.1:port")``."""
    port = free_port()
    daemon = Daemon(workdir, "rmq-nameserver", "--listenPort", port, "--bindAddress", "127.0.0.1",
                    "--kvConfigPath", Path(workdir) / "kvConfig.json",
                    "--configStorePath", Path(workdir) / "namesrv.properties", *args, port=port)
    return daemon, "127.0.0.1:%d" % port
