"""DLedger groups of ``twistd -n rmq-dledger`` processes for tests, and a blocking client that
speaks DLedger's RPC to them (what Java's ``DLedgerClient`` sends)."""

import os
import subprocess
from pathlib import Path

from rmqproto.codec.dledger import decode_checkpoint, decode_index
from rmqproto.codec.dledger_rpc import (
    AppendEntryRequest, AppendEntryResponse, DLedgerRequestCode, DLedgerResponseCode,
    MetadataRequest, MetadataResponse,
)
from rmqproto.dledger.store import DLedgerStore, StoreSettings
from support.daemons import Daemon
from support.interop import JAVA_FLAGS
from support.javapeers import build_classpath
from support.processes import ManagedProcess, free_port, wait_for_port
from support.syncclient import call, wait_until


def peers_string(ids, ports):
    return ";".join("%s-127.0.0.1:%d" % (member, port) for member, port in zip(ids, ports))


def rpc(addr, code, request, response_class, timeout=5.0):
    """One DLedger request on a fresh connection; the decoded answer, or None if it failed."""
    try:
        answer = call(addr, code, body=request.to_json())
    except OSError:
        return None
    return response_class.from_json(answer.body)


class Group:
    """Members ``ids`` as separate processes under ``workdir`` (ports picked free): ours
    (``twistd -n rmq-dledger``), and the real DLedger 0.3.1.2 for the ids in ``java``.
    With ``metrics``, ours serve ``/metrics`` on the ports of :attr:`metrics_ports`; with
    ``console``, the web console on those of :attr:`console_ports`; ``java_options`` go to
    the Java members' JVMs after the usual flags (``-Xmx256m``)."""

    def __init__(self, workdir, ids=("n0", "n1", "n2"), group="g", ports=None, java=(),
                 metrics=False, console=False, java_options=(), **settings):
        self.workdir = Path(workdir)
        self.ids = list(ids)
        self.java = set(java)
        self.group = group
        self.ports = dict(zip(self.ids, ports or [free_port() for _ in self.ids]))
        self.peers = peers_string(self.ids, [self.ports[m] for m in self.ids])
        self.settings = settings
        self.java_options = list(java_options)
        self.metrics_ports = ({m: free_port() for m in self.ids if m not in self.java}
                              if metrics else {})
        self.console_ports = ({m: free_port() for m in self.ids if m not in self.java}
                              if console else {})
        self.daemons = {}

    def addr(self, member):
        return "127.0.0.1:%d" % self.ports[member]

    def base_dir(self, member):
        return self.workdir / member

    def start(self, member):
        base = self.base_dir(member)
        base.mkdir(parents=True, exist_ok=True)
        if member in self.java:
            self.daemons[member] = self._start_java(member, base)
            return
        conf = base / "dledger.properties"
        conf.write_text("".join("%s=%s\n" % item for item in self.settings.items()))
        metrics = ("--metricsPort", self.metrics_ports[member]) if self.metrics_ports else ()
        if self.console_ports:
            metrics += ("--consolePort", self.console_ports[member])
        self.daemons[member] = Daemon(
            base, "rmq-dledger", "-c", conf, "--group", self.group, "--id", member,
            "--peers", self.peers_of(member), "--store-base-dir", base, *metrics,
            port=self.ports[member])

    def peers_of(self, member):
        """The peer list ``member`` is started with (the same for all here)."""
        return self.peers

    def _start_java(self, member, base):
        command = ["java", *JAVA_FLAGS, *self.java_options, "-cp", build_classpath("dledger"), "rmqproto.dledger.Member",
                   self.group, member, self.peers_of(member), str(base),
                   *("%s=%s" % item for item in self.settings.items())]
        process = ManagedProcess(command, base / "java-member.log", cwd=base)
        wait_for_port(self.ports[member], 60, process)
        return process

    def java_append(self, prefix, count):
        """Append ``count`` entries with DLedger's own Java client; the indexes it was given."""
        result = subprocess.run(
            ["java", *JAVA_FLAGS, "-cp", build_classpath("dledger"), "rmqproto.dledger.Append",
             self.group, self.peers, prefix, str(count)],
            capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        return [int(line.split()[1]) for line in result.stdout.splitlines()
                if line.startswith("APPENDED ")]

    def start_all(self):
        for member in self.ids:
            if member not in self.daemons:
                self.start(member)

    def kill(self, member):
        """kill -9 of one member."""
        self.daemons.pop(member).kill()

    def stop(self):
        for member in list(self.daemons):
            self.daemons.pop(member).stop()

    def metadata(self, member):
        return rpc(self.addr(member), DLedgerRequestCode.METADATA,
                   MetadataRequest(group=self.group, remote_id=member), MetadataResponse)

    def leader(self, among=None):
        """The leader every live member (of ``among``) agrees on, itself one of them; or None."""
        members = list(among or self.daemons)
        seen = set()
        for member in members:
            answer = self.metadata(member)
            if answer is None:
                return None
            seen.add(answer.leader_id)
        leader = seen.pop() if len(seen) == 1 else None
        return leader if leader in members else None

    def wait_leader(self, among=None, timeout=60):
        found = []
        wait_until(lambda: found.append(self.leader(among)) or found[-1] is not None,
                   timeout=timeout)
        return found[-1]

    def append(self, member, body):
        return rpc(self.addr(member), DLedgerRequestCode.APPEND,
                   AppendEntryRequest(group=self.group, remote_id=member, body=body),
                   AppendEntryResponse)

    def append_ok(self, body, timeout=60):
        """Append ``body`` on the leader, finding it again after failures; its index."""
        done = []

        def attempt():
            leader = self.leader()
            answer = self.append(leader, body) if leader else None
            if answer is not None and answer.code == DLedgerResponseCode.SUCCESS:
                done.append(answer.index)
            return bool(done)

        wait_until(attempt, timeout=timeout, interval=0.1)
        return done[0]

    def log_bytes(self, member, kind, end):
        """The first ``end`` bytes of a member's ``kind`` files ("data" or "index") end to end,
        reading no further (a Java broker's index files are 160 MiB each)."""
        directory = self.base_dir(member) / ("dledger-" + member) / kind
        parts, left = [], end
        for name in sorted(os.listdir(directory)):
            if left <= 0:
                break
            with open(directory / name, "rb") as fh:
                parts.append(fh.read(left))
            left -= len(parts[-1])
        return b"".join(parts)

    def data_end(self, member, index):
        """The data position just after entry ``index``, from a member's index files."""
        unit = decode_index(self.log_bytes(member, "index", 32 * (index + 1)), 32 * index)
        return unit.pos + unit.size

    def log_differences(self, last, members=None):
        """Members whose data or index files differ from the first member's up to entry
        ``last``, as text (empty when byte-identical); read on stopped members."""
        members = list(members or self.ids)
        ends = {"index": 32 * (last + 1), "data": self.data_end(members[0], last)}
        return ["%s's %s files differ from %s's in their first %d bytes"
                % (m, kind, members[0], end)
                for kind, end in ends.items() for m in members[1:]
                if self.log_bytes(m, kind, end) != self.log_bytes(members[0], kind, end)]

    def read_log(self, member):
        """A stopped member's entries read back from its files with our store:
        ``([(index, term, body)], committed index)``."""
        store = DLedgerStore(StoreSettings(str(self.base_dir(member)), member, None,
                                           self.settings["mappedFileSizeForEntryData"],
                                           self.settings["mappedFileSizeForEntryIndex"])).open()
        try:
            entries = [(e.index, e.term, e.body) for e in (
                store.get(i) for i in range(max(store.begin_index, 0), store.end_index + 1))]
            return entries, store.committed_index
        finally:
            store.close()

    def committed(self, member):
        path = self.base_dir(member) / ("dledger-" + member) / "checkpoint"
        return decode_checkpoint(path.read_bytes())[1] if path.exists() else None
