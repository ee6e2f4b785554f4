"""Broker groups on one DLedger commit log for tests: brokers with ``enableDLegerCommitLog=true``,
each a real Java 4.9.7 broker or ours (``twistd -n rmq-master -c``), both started from the same
kind of ``broker.conf`` with Java's names (``dLegerGroup``, ``dLegerPeers``, ``dLegerSelfId``),
all registered with one NameServer (ours).

The Raft side (the leader, the committed index, the log files) is
:class:`~support.dledgergroup.Group`'s, asked over DLedger's own RPC on each member's
``dLegerPeers`` port; the broker side (who the NameServer names master, topics, clients,
``mqadmin clusterList``) is here, with the checks a run ends with:

* :func:`delivery_problems`: every message acknowledged SEND_OK was consumed, nothing was
  consumed that no send attempted, nothing more often than its sends (the sends of an
  :class:`OpenStorm`, a Java producer that sends until the run ends it);
* :meth:`BrokerGroup.log_problems` on stopped members: every acknowledged message is in every
  member's log at its offset message id, no key is stored twice, and the data and index files
  are byte-identical up to the committed entry.
"""

import collections
import importlib.util
import json
import os
import shutil
import signal
from contextlib import contextmanager

import pytest

from rmqproto.codec import message as msg
from rmqproto.codec.bodies.route import ClusterInfo, TopicRouteData
from rmqproto.codec.codes import RequestCode, ResponseCode
from support.daemons import Daemon, start_nameserver
from support.dledgergroup import Group
from support.hacheck import missing_acks
from support.hapair import Storm
from support.javapeers import JavaPeers, broker_port
from support.processes import wait_for_port
from support.syncclient import call, create_topic, wait_until

__all__ = ["KINDS", "BrokerGroup", "OpenStorm", "broker_group", "delivery_problems",
           "kinds_params", "ours_ready"]

#: The group kinds the proofs run on: the kind of member n0, n1, n2.
KINDS = {
    "java": ("java", "java", "java"),
    "java1-ours2": ("ours", "java", "ours"),
    "java2-ours1": ("java", "ours", "java"),
    "ours": ("ours", "ours", "ours"),
}
#: A DLedger index file: ``DLedgerConfig``'s default, which a broker's settings do not change.
INDEX_FILE_SIZE = 32 * 5 * 1024 * 1024
#: A DLedger data file (``mappedFileSizeCommitLog``): small, so that a test rolls files.
DATA_FILE_SIZE = 1024 * 1024


def ours_ready():
    """Whether our broker takes a DLedger commit log: it has the settings (``dLegerPeers``)
    and the store (``rmqproto.store.dledger``)."""
    from rmqproto.broker.config import SETTINGS

    return ("dLegerPeers" in SETTINGS.by_name
            and importlib.util.find_spec("rmqproto.store.dledger") is not None)


def kinds_params(*names):
    """pytest params of the group kinds ``names``; a kind with any of our brokers in it is
    marked waiting (xfail, not run) while our broker does not take a DLedger commit log."""
    waiting = pytest.mark.xfail(not ours_ready(), run=False,
                                reason="our broker has no DLedger commit log yet (issue 46)")
    return [pytest.param(name, id=name, marks=[waiting] if "ours" in KINDS[name] else [])
            for name in names]


class BrokerGroup(Group):
    """Members ``n0``, ``n1``, … of ``kinds`` (``"java"`` or ``"ours"`` each) under
    ``workdir``, registering with ``namesrv_addr``; ``java_peers`` (a
    :class:`~support.javapeers.JavaPeers`) starts the Java ones and the clients. ``props`` are
    more broker settings (Java names) every member gets."""

    def __init__(self, workdir, kinds, namesrv_addr, java_peers, cluster="DLedgerCluster",
                 name="RaftNode00", **props):
        ids = ["n%d" % k for k in range(len(kinds))]
        super().__init__(workdir, ids, group=name,
                         java=[m for m, kind in zip(ids, kinds) if kind == "java"],
                         mappedFileSizeForEntryData=DATA_FILE_SIZE,
                         mappedFileSizeForEntryIndex=INDEX_FILE_SIZE)
        self.kinds = dict(zip(ids, kinds))
        self.namesrv_addr, self.java_peers = namesrv_addr, java_peers
        self.cluster, self.name, self.props = cluster, name, props
        self.listen_ports = {m: broker_port() for m in ids}
        self.starts = collections.Counter()

    # ------------------------------------------------------------ processes

    def broker_addr(self, member):
        return "127.0.0.1:%d" % self.listen_ports[member]

    def properties(self, member):
        """The member's ``broker.conf`` (as Java's ``conf/dledger/broker-n0.conf``, with a
        store of its own under ``workdir`` and small files)."""
        store = self.base_dir(member)
        return dict(
            brokerClusterName=self.cluster, brokerName=self.name,
            listenPort=self.listen_ports[member], namesrvAddr=self.namesrv_addr,
            brokerIP1="127.0.0.1", brokerIP2="127.0.0.1",
            storePathRootDir=store, storePathCommitLog=store / "commitlog",
            enableDLegerCommitLog="true", dLegerGroup=self.name,
            dLegerPeers=self.peers_of(member), dLegerSelfId=member,
            mappedFileSizeCommitLog=DATA_FILE_SIZE, mappedFileSizeConsumeQueue=6000,
            **self.props)

    def spawn(self, member):
        """Start ``member`` without waiting for it."""
        base = self.base_dir(member)
        base.mkdir(parents=True, exist_ok=True)
        conf = base / "broker.conf"
        conf.write_text("".join("%s=%s\n" % item for item in self.properties(member).items()))
        self.starts[member] += 1
        if self.kinds[member] == "java":
            self.daemons[member] = self.java_peers.start(
                "broker-%s-%d" % (member, self.starts[member]), self.java_peers.server_cp,
                "org.apache.rocketmq.broker.BrokerStartup", "-c", str(conf))
        else:
            log = base / "rmq-master.log"
            if log.exists():  # keep the log of the run before a restart
                log.rename(base / ("rmq-master-%d.log" % (self.starts[member] - 1)))
            self.daemons[member] = Daemon(base, "rmq-master", "-c", conf,
                                          "--bindAddress", "127.0.0.1")

    def wait_listening(self, member, timeout=90):
        process = self.daemons[member]
        for port in (self.listen_ports[member], self.ports[member]):
            wait_for_port(port, timeout, process)

    def start(self, member):
        self.spawn(member)
        self.wait_listening(member)

    def start_all(self):
        """Start every member at once, then wait until each listens."""
        for member in self.ids:
            if member not in self.daemons:
                self.spawn(member)
        for member in self.ids:
            self.wait_listening(member)

    def stop(self):
        """SIGTERM to every member at once (a graceful shutdown each), then wait for each."""
        for process in self.daemons.values():
            if process.poll() is None:
                os.killpg(process.popen.pid, signal.SIGTERM)
        super().stop()

    def close(self):
        """Stop every member (a group with fault proxies also closes them)."""
        self.stop()

    # ------------------------------------------------------------ the broker side

    def registered(self):
        """``{brokerId: address}`` of this broker name in the NameServer."""
        answer = call(self.namesrv_addr, RequestCode.GET_BROKER_CLUSTER_INFO)
        if answer.code != ResponseCode.SUCCESS:
            return {}
        brokers = ClusterInfo.from_json(answer.body).broker_addr_table or {}
        data = brokers.get(self.name)
        return dict(data.broker_addrs or {}) if data is not None else {}

    def wait_master(self, among=None, timeout=90, member=None):
        """The DLedger leader (of the live members, or of ``among``; ``member`` if given),
        once the NameServer names it master (brokerId 0) of the broker name."""
        found = []

        def master_is_leader():
            leader = self.leader(among)
            found.append(leader)
            return (leader is not None and member in (None, leader)
                    and self.registered().get(0) == self.broker_addr(leader))

        wait_until(master_is_leader, timeout=timeout, interval=0.2)
        return found[-1]

    def member_at(self, address):
        """The member whose broker listens at ``address`` (``host:port``)."""
        return next(m for m in self.ids if self.broker_addr(m) == address)

    def create_topics(self, *topics, queues=4):
        """Create ``topics`` on the master (Java's slaves refuse) and wait until the NameServer
        routes them; :meth:`wait_synced` waits until the slaves have them too."""
        master = self.registered()[0]
        for topic in topics:
            create_topic(master, topic, queues=queues)
            wait_until(lambda: self.routed(topic, master, queues), timeout=30)

    def routed(self, topic, master, queues):
        """Whether the NameServer routes ``topic`` to ``queues`` writable queues of
        ``master``."""
        answer = call(self.namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        if answer.code != ResponseCode.SUCCESS:
            return False
        route = TopicRouteData.from_json(answer.body)
        return (any(q.write_queue_nums == queues for q in route.queue_datas or ())
                and any(b.master_addr() == master for b in route.broker_datas or ()))

    def wait_synced(self, *topics, timeout=60):
        """Wait until every live member holds ``topics`` (a slave copies the master's topics
        every 10 s, ``SlaveSynchronize``), so that whichever member leads next serves them."""
        def synced():
            for member in self.daemons:
                answer = call(self.broker_addr(member), RequestCode.GET_ALL_TOPIC_CONFIG)
                if answer.code != ResponseCode.SUCCESS or not all(
                        ('"%s"' % t).encode() in answer.body for t in topics):
                    return False
            return True

        wait_until(synced, timeout=timeout, interval=0.5)

    def cluster_list_roles(self):
        """``{member: brokerId}`` of this broker name in ``mqadmin clusterList``, once every
        live member is registered."""
        wait_until(lambda: len(self.registered()) == len(self.daemons), timeout=60)
        output = self.java_peers.mqadmin("clusterList", "-n", self.namesrv_addr)
        rows = [line.split() for line in output.splitlines()]
        return {self.member_at(row[3]): int(row[2]) for row in rows
                if len(row) > 3 and row[:2] == [self.cluster, self.name] and row[2].isdigit()}

    def wait_committed_everywhere(self, timeout=60):
        """Wait until every live member's checkpoint holds one committed index, at or past the
        leader's; that index."""
        seen = []

        def agreed():
            leader = self.leader()
            indexes = {self.committed(m) for m in self.daemons}
            seen.append(indexes)
            return leader is not None and len(indexes) == 1 and None not in indexes

        wait_until(agreed, timeout=timeout, interval=0.5)
        return seen[-1].pop()

    def consume_keys(self, topic, group, expected, timeout=90):
        """Everything in ``topic`` read from its first offset by a Java push consumer of a new
        ``group`` (lingering 3 s after ``expected`` deliveries, heartbeats every second): the
        keys, one per delivery."""
        result = self.java_peers.run_client(
            "rmqproto.peers.ConsumeAll", self.namesrv_addr, "concurrently", group, topic,
            expected, timeout, "linger=3000", "heartbeat=1000", timeout=timeout + 60)
        log = self.java_peers.workdir / ("consume-%s.log" % group)
        log.write_text(result.stdout + result.stderr)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        return [json.loads(line[4:])["keys"] for line in result.stdout.splitlines()
                if line.startswith("MSG ")]

    # ------------------------------------------------------------ the logs (members stopped)

    def stored_keys(self, member, last, topic):
        """The keys of every message of ``topic`` in ``member``'s log up to entry ``last``."""
        entries, _ = self.read_log(member)
        records = (msg.decode_record(body) for index, _, body in entries if index <= last)
        return [key for record in records if record.topic == topic for key in record.keys]

    def log_problems(self, acks, topic):
        """Checks of the stopped members' logs, as text (empty when all pass): byte-identical
        up to the lowest committed entry; every one of ``acks`` (:class:`~support.hacheck.Ack`)
        at its offset in every member's log; no key of ``topic`` stored twice."""
        last = min(self.committed(m) for m in self.ids)
        problems = self.log_differences(last)
        for member in self.ids:
            data = self.base_dir(member) / ("dledger-" + member) / "data"
            problems += ["%s: %s" % (member, p)
                         for p in missing_acks(data, acks, DATA_FILE_SIZE, topic)]
        keys = collections.Counter(self.stored_keys(self.ids[0], last, topic))
        problems += ["%s stored %d times" % (k, n) for k, n in keys.items() if n > 1]
        return problems


class OpenStorm(Storm):
    """``SendStorm`` (:class:`~support.hapair.Storm`) on ``topic`` of ``group``, ``threads``
    threads of sync sends without retries and routes refreshed every second, sending until
    :meth:`stop` ends it: a run lasts as long as its checks need, not a guess of that."""

    #: The producer's own deadline, far past any run's :meth:`stop`.
    SECONDS = 3600

    def __init__(self, group, topic, threads):
        super().__init__(group.java_peers, group.namesrv_addr, topic, self.SECONDS, threads,
                         poll_ms=1000)
        self.threads = threads

    def wait_new_acks(self, count, port=None, timeout=60):
        """Wait until ``count`` sends are acknowledged from now on (by the broker listening on
        ``port``, named by their offset message id, when given); how many were."""
        before = len(self.acks())

        def new():
            return sum(1 for ack in self.acks()[before:]
                       if port in (None, msg.decode_message_id(ack.offset_msg_id)[0][1]))

        wait_until(lambda: new() >= count, timeout=timeout, interval=0.2)
        return new()

    def stop(self):
        """End the producer with SIGTERM (its outcome lines are flushed as printed); the
        acks."""
        self.process.stop()
        return self.acks()

    def attempted(self):
        """The key of every send with an outcome and of the send each thread had in flight
        when :meth:`stop` came (``storm-<thread>-<i>``: the one after its last outcome), which
        the broker may have stored."""
        keys = super().attempted()
        last = collections.Counter()
        for key in keys:
            _, thread, i = key.split("-")
            last[int(thread)] = max(last[int(thread)], int(i) + 1)
        return keys | {"storm-%d-%d" % (t, last[t]) for t in range(self.threads)}


def delivery_problems(acks, attempted, consumed, retries=0):
    """A consume-everything run checked against the sends, as text (empty when it passed):
    every acknowledged key consumed, nothing consumed that no send attempted, no key
    consumed more often than its sends (1 + ``retries``). ``acks``: keys acknowledged SEND_OK;
    ``attempted``: keys of every send; ``consumed``: the key of every delivery."""
    counts = collections.Counter(consumed)
    problems = ["acknowledged %s was not consumed" % k for k in sorted(set(acks) - set(counts))]
    problems += ["consumed %s, which no send attempted" % k
                 for k in sorted(set(counts) - set(attempted))]
    problems += ["consumed %s %d times" % (k, n)
                 for k, n in sorted(counts.items()) if n > 1 + retries]
    return problems



@contextmanager
def broker_group(workdir, kinds, group_class=BrokerGroup, **props):
    """Our NameServer and a started ``group_class`` of ``kinds`` under ``workdir``; at the
    end every process is stopped and the members' DLedger stores removed (logs are kept)."""
    java_peers = JavaPeers(workdir / "java")
    namesrv, namesrv_addr = start_nameserver(java_peers.workdir)
    group = group_class(workdir, kinds, namesrv_addr, java_peers, **props)
    try:
        group.start_all()
        yield group
    finally:
        group.close()
        java_peers.stop_all()
        namesrv.stop()
        for member in group.ids:
            shutil.rmtree(group.base_dir(member) / ("dledger-" + member), ignore_errors=True)
