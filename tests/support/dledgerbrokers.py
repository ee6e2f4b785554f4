"""Three of our brokers on a DLedger commit log, each a ``twistd -n rmq-master`` process, and
our NameServer (docs/broker-dledger.md, "Running it")."""

import re
import shutil

from rmqproto.codec.bodies.route import TopicRouteData
from rmqproto.codec.codes import RequestCode, ResponseCode
from support.daemons import Daemon, start_nameserver
from support.processes import free_port, wait_for_port
from support.syncclient import call, wait_until

__all__ = ["BROKER_NAME", "MEMBERS", "DLedgerBrokers", "cluster_list_roles"]

BROKER_NAME = "broker-dl"
MEMBERS = ("n0", "n1", "n2")
#: small segments: 16 MiB data files (DLedger reserves each one whole), small consume queues
STORE = dict(mappedFileSizeCommitLog=16 * 1024 * 1024, mappedFileSizeConsumeQueue=6000)


class DLedgerBrokers:
    """Members ``n0``..``n2`` of group :data:`BROKER_NAME`: broker *i* on ``base + 10 i``, its
    member on ``base + 10 i + 2``, each under ``workdir / member``."""

    def __init__(self, workdir, **settings):
        self.workdir = workdir
        self.namesrv, self.namesrv_addr = start_nameserver(workdir)
        base = free_port(27) + 2
        self.ports = {m: base + 10 * i for i, m in enumerate(MEMBERS)}
        self.peers = ";".join("%s-127.0.0.1:%d" % (m, p + 2) for m, p in self.ports.items())
        self.settings = dict(STORE, **settings)
        self.brokers = {}
        for member in MEMBERS:      # started together, then waited for: a start takes seconds
            self.start(member, wait=False)
        for member in MEMBERS:
            wait_for_port(self.ports[member], 30, self.brokers[member])

    def addr(self, member):
        return "127.0.0.1:%d" % self.ports[member]

    def member_of(self, addr):
        return next(m for m in MEMBERS if self.addr(m) == addr)

    def start(self, member, wait=True):
        """Start (or restart, on the same store and ports) ``member``'s broker; with ``wait``,
        wait until it listens."""
        directory = self.workdir / member
        directory.mkdir(exist_ok=True)
        values = dict(self.settings, listenPort=self.ports[member], bindAddress="127.0.0.1",
                      brokerIP1="127.0.0.1", brokerIP2="127.0.0.1", brokerName=BROKER_NAME,
                      namesrvAddr=self.namesrv_addr, storePathRootDir=directory / "store",
                      enableDLegerCommitLog="true", dLegerGroup=BROKER_NAME,
                      dLegerPeers=self.peers, dLegerSelfId=member)
        options = [item for name, value in values.items() for item in ("--" + name, value)]
        self.brokers[member] = Daemon(directory, "rmq-master", *options,
                                      port=self.ports[member] if wait else None)

    def broker_addrs(self):
        """``{brokerId: address}`` the NameServer routes TBW102 to, or None."""
        answer = call(self.namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
        if answer.code != ResponseCode.SUCCESS:
            return None
        (broker,) = TopicRouteData.from_json(answer.body).broker_datas
        return broker.broker_addrs

    def wait_for_master(self, members=MEMBERS, not_addr=None, timeout=60):
        """Wait until the NameServer has a master (id 0) other than ``not_addr`` and every one
        of ``members`` registered; the ``{brokerId: address}`` table."""
        wanted = {self.addr(m) for m in members}

        def ready():
            addrs = self.broker_addrs()
            if not addrs or addrs.get(0) in (None, not_addr) or set(addrs.values()) != wanted:
                return None
            return addrs
        return wait_until(ready, timeout=timeout, interval=0.2)

    def stop(self):
        """Stop everything and remove the stores (DLedger reserves its segments whole)."""
        for daemon in self.brokers.values():
            daemon.stop()
        self.namesrv.stop()
        for member in MEMBERS:
            shutil.rmtree(self.workdir / member / "store", ignore_errors=True)


def cluster_list_roles(output, broker_name=BROKER_NAME):
    """``{address: BID}`` of ``broker_name``'s lines in ``mqadmin clusterList``'s output."""
    roles = {}
    for line in output.splitlines():
        fields = line.split()
        if broker_name in fields:
            at = fields.index(broker_name)
            if re.fullmatch(r"\d+", fields[at + 1]):
                roles[fields[at + 2]] = int(fields[at + 1])
    return roles
