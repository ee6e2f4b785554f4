"""Every ``twistd`` service meets what a new user gets wrong with one line and exit status 1:
a port another process holds (naming the setting to change), a store another broker
locked, a ``-c`` file that is not there; and ``--help`` says which defaults it runs on."""

import fcntl
import os
import socket
import subprocess
import sys

import pytest

from support.processes import free_port
from support.syncclient import wait_until

_TWISTD = "from twisted.scripts.twistd import run; run()"


def twistd(cwd, *args):
    """Run ``twistd -n …`` to its end; returns ``(exit status, everything it printed)``."""
    run = subprocess.run([sys.executable, "-c", _TWISTD, "-n", "--pidfile=", *map(str, args)],
                         cwd=cwd, capture_output=True, text=True, timeout=120)
    return run.returncode, run.stdout + run.stderr


def plugin_args(plugin, tmp_path, port):
    """``plugin``'s arguments for a start under ``tmp_path`` whose main port is ``port``."""
    if plugin == "rmq-nameserver":
        return ["--listenPort", port, "--kvConfigPath", tmp_path / "kv.json"]
    if plugin == "rmq-local":
        return ["--namesrvPort", port, "--listenPort", free_port(12) + 2, "--dataDir", tmp_path,
                "--metricsPort", 0, "--consolePort", 0]
    return ["--listenPort", port, "--storePathRootDir", tmp_path / "store",
            "--namesrvAddr", "127.0.0.1:1"]


def assert_one_line(status, output, line):
    assert status == 1, output
    assert "Traceback" not in output, output
    assert [text for text in output.splitlines() if line in text] != [], output


PLUGINS = ["rmq-nameserver", "rmq-master", "rmq-slave", "rmq-local"]
SETTING = {"rmq-nameserver": "give this NameServer a free listenPort",
           "rmq-master": "give this broker its own listenPort",
           "rmq-slave": "give this broker its own listenPort",
           "rmq-local": "give this cluster a free namesrvPort"}


@pytest.mark.parametrize("plugin", PLUGINS)
def test_a_port_in_use_is_one_line_naming_the_setting(plugin, tmp_path):
    port = free_port(3) + 2  # a broker takes port - 2 too
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", port))
        taken.listen()
        status, output = twistd(tmp_path, plugin, *plugin_args(plugin, tmp_path, port))
    assert_one_line(status, output, ":%d: Address already in use; %s" % (port, SETTING[plugin]))


@pytest.mark.parametrize("plugin", PLUGINS)
def test_a_missing_config_file_is_one_line(plugin, tmp_path):
    status, output = twistd(tmp_path, plugin, "-c", tmp_path / "broker.conf")
    assert_one_line(status, output, "cannot read the configuration file %s (-c): No such file "
                    "or directory" % (tmp_path / "broker.conf"))


def test_a_store_another_broker_locked_is_one_line(tmp_path):
    (tmp_path / "store").mkdir()
    with open(tmp_path / "store" / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        status, output = twistd(tmp_path, "rmq-slave",
                                *plugin_args("rmq-slave", tmp_path, free_port(3) + 2))
    assert_one_line(status, output, "the store in %s is locked by another process (is another "
                    "broker running on it?); give this broker its own storePathRootDir"
                    % (tmp_path / "store"))
    assert not os.path.exists(tmp_path / "store" / "abort")


@pytest.mark.parametrize("plugin, defaults", [
    ("rmq-nameserver", "Defaults are Java's: port 9876, KV config under ~/namesrv"),
    ("rmq-master", "Defaults are Java's: ports 10911 (listenPort), 10909 and 10912, the store "
                   "under ~/store (storePathRootDir)"),
    ("rmq-slave", "Defaults are Java's: ports 10911 (listenPort), 10909 and 10912, the store "
                  "under ~/store (storePathRootDir)"),
    ("rmq-local", "a NameServer on 9876, a SYNC_MASTER on 10911 and its slave on 10921, data "
                  "under ~/rmqproto-local"),
])
def test_help_says_which_defaults_it_runs_on(plugin, defaults, tmp_path):
    status, output = twistd(tmp_path, plugin, "--help")
    assert status == 0 and defaults in " ".join(output.split()), output


def test_daemonized_the_start_fails_with_the_line_in_its_log(tmp_path):
    """Without -n, twistd's waiting parent is told (it exits 1) and the pidfile is removed."""
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", port))
        taken.listen()
        run = subprocess.run(
            [sys.executable, "-c", _TWISTD, "--pidfile", tmp_path / "twistd.pid", "--logfile",
             tmp_path / "twistd.log", "rmq-nameserver",
             *map(str, plugin_args("rmq-nameserver", tmp_path, port))],
            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "cannot listen on" in run.stderr, run.stderr
    # the daemon tells its parent before its log has the line: wait for it, not the exit
    log = tmp_path / "twistd.log"
    wait_until(lambda: "give this NameServer a free listenPort" in log.read_text(), timeout=30,
               interval=0.05)
    assert not (tmp_path / "twistd.pid").exists()
