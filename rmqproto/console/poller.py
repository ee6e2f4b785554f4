"""The console's eyes: every second it asks the cluster what ``mqadmin`` would ask (the admin
core, :mod:`rmqproto.client.admin`, over Twisted) and hands the facts to the view.

Replication and DLedger groups are looked at every round, topics and consumer groups every
``SLOW_EVERY`` rounds (they cost a request per topic and broker). A DLedger group is watched
when the console is given it (``rmq-dledger``) or when a broker's configuration names it
(``enableDLegerCommitLog``, ``dLegerGroup``, ``dLegerPeers``: Java's brokers too). Our members
answer their term and indices in METADATA (Java's answer the leader only); a leader in this
process adds its peers' water marks.
"""

from twisted.internet import defer, task
from twisted.logger import Logger

from rmqproto.client.admin import DLQ_PREFIX, RETRY_PREFIX, broker_addresses
from rmqproto.client.deferred import Admin
from rmqproto.codec.bodies.ha import HARuntimeInfo
from rmqproto.codec.bodies.route import MASTER_ID
from rmqproto.codec.codes import RequestCodeV5, ResponseCode
from rmqproto.console.view import ConsoleView
from rmqproto.dledger.actions import Role

__all__ = ["ConsolePoller", "SYSTEM_TOPICS"]

log = Logger()

#: Topics every broker has for itself, left off the topics view.
SYSTEM_TOPICS = frozenset({
    "TBW102", "SCHEDULE_TOPIC_XXXX", "OFFSET_MOVED_EVENT", "SELF_TEST_TOPIC", "BenchmarkTest",
    "TRANS_CHECK_MAX_TIME_TOPIC", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "RMQ_SYS_TRACE_TOPIC"})
#: Bytes a slave may lag and still count as in sync where its master does not say
#: (RocketMQ 5's ``haMaxGapNotInSync``).
HA_MAX_GAP_NOT_IN_SYNC = 256 * 1024 * 1024
#: Topics and groups are looked at once in this many rounds.
SLOW_EVERY = 5


def _user_topic(topic, own_names):
    return not (topic in SYSTEM_TOPICS or topic in own_names
                or topic.startswith((RETRY_PREFIX, DLQ_PREFIX, "rmq_sys_", "RMQ_SYS_")))


class ConsolePoller:
    """Gathers facts every ``interval`` seconds; :attr:`snapshot` is the latest picture and
    each of :attr:`listeners` is called with every new one. ``namesrv_addr`` (text, or a
    callable giving it once the service listens; None: no cluster to look at) is where
    the cluster is learnt."""

    def __init__(self, reactor, namesrv_addr=None, dledger_groups=(), local_members=(),
                 interval=1.0, view=None, credentials=None, acl=False):
        self.reactor = reactor
        self._namesrv_addr = namesrv_addr
        self.namesrv_addr = None
        self.admin = None
        #: (access key, secret key) signing the console's own requests (ACL on)
        self.credentials = credentials
        #: whether the admin actions are there (ACL on where the console is served)
        self.acl = acl
        #: ``{group: peers}`` watched whatever the brokers say
        self.dledger_groups = dict(dledger_groups)
        #: DLedger servers of this process, by member id
        self.local_members = {server.config.selfId: server for server in local_members}
        self.view = view or ConsoleView()
        self.listeners = []
        self.snapshot = self.view.observe({}, self._now())
        self._round = 0
        self._slow = {"topics": [], "groups": []}
        self._broker_groups = {}   # broker address → (group, peers) or None
        self._loop = task.LoopingCall(self.poll)
        self._loop.clock = reactor
        self._interval = interval

    def _now(self):
        return int(self.reactor.seconds() * 1000)

    def start(self):
        address = self._namesrv_addr
        self.namesrv_addr = address() if callable(address) else address
        self.admin = Admin(self.reactor, namesrvAddr=self.namesrv_addr or "",
                           credentials=self.credentials)
        self._loop.start(self._interval, now=True).addErrback(
            lambda failure: log.failure("the console stopped polling", failure))

    def stop(self):
        if self._loop.running:
            self._loop.stop()
        return self.admin.close() if self.admin is not None else defer.succeed(None)

    @defer.inlineCallbacks
    def poll(self):
        """One round: the facts, the new snapshot, the listeners told."""
        facts = {"errors": [], "acl": self.acl}
        if self.namesrv_addr:
            yield self._look(facts, "cluster", self._cluster)
        yield self._look(facts, "DLedger", self._dledger)
        facts.update(self._slow)
        self._round += 1
        self.snapshot = self.view.observe(facts, self._now())
        for listener in list(self.listeners):
            listener(self.snapshot)

    @defer.inlineCallbacks
    def _look(self, facts, what, step):
        try:
            yield step(facts)
        except Exception as exc:  # one unreachable server must not blank the page
            facts["errors"].append("%s: %s" % (what, exc))

    @defer.inlineCallbacks
    def _cluster(self, facts):
        run, core = self.admin.run, self.admin.core
        info = yield run(core.cluster_info())
        brokers, runtimes = [], {}
        for cluster, name, broker_id, address in broker_addresses(info):
            broker = {"cluster": cluster, "name": name, "id": broker_id, "address": address,
                      "role": "MASTER" if broker_id == MASTER_ID else "SLAVE", "version": None}
            try:
                runtime = runtimes[address] = yield run(core.runtime_info(address))
                broker["version"] = runtime.get("brokerVersionDesc")
                yield self._learn_dledger(address)
            except Exception as exc:
                facts["errors"].append("%s (%s): %s" % (name, address, exc))
            brokers.append(broker)
        facts["brokers"] = brokers
        facts["ha"] = yield self._replication(brokers, runtimes)
        if self._round % SLOW_EVERY == 0:
            own = {b["name"] for b in brokers} | {b["cluster"] for b in brokers}
            yield self._topics_and_groups(own)

    @defer.inlineCallbacks
    def _replication(self, brokers, runtimes):
        """Each master's commit-log end and each reachable slave's, by broker address (a
        slave keeps its place across reconnections); in sync as the master's HA status says
        (GET_BROKER_HA_STATUS, by the slave's host), else within ``HA_MAX_GAP_NOT_IN_SYNC``."""
        by_name = {}
        for broker in brokers:
            by_name.setdefault(broker["name"], {})[broker["id"]] = broker["address"]
        found = []
        for name, addresses in sorted(by_name.items()):
            master = addresses.get(MASTER_ID)
            if master not in runtimes:
                continue
            top = int(runtimes[master]["commitLogMaxOffset"])
            links = yield self._links(master)
            slaves = []
            for broker_id, address in sorted(addresses.items()):
                if broker_id == MASTER_ID or address not in runtimes:
                    continue
                have = int(runtimes[address]["commitLogMaxOffset"])
                host = address.rpartition(":")[0]
                in_sync = (links.get(host, False) if links is not None
                           else top - have <= HA_MAX_GAP_NOT_IN_SYNC)
                slaves.append({"address": address, "ackOffset": have, "inSync": in_sync,
                               "connected": links is None or host in links})
            found.append({"broker": name, "master": master, "maxOffset": top, "slaves": slaves})
        return found

    @defer.inlineCallbacks
    def _links(self, master):
        """``{slave host: in sync}`` of the master's HA connections, None where the master
        does not serve GET_BROKER_HA_STATUS (RocketMQ 4.9)."""
        answer = yield self.admin.run(self.admin.core.call(master, RequestCodeV5.GET_BROKER_HA_STATUS))
        if answer.code != ResponseCode.SUCCESS:
            return None
        links = {}
        for link in HARuntimeInfo.from_json(answer.body).ha_connection_info:
            host = link.addr.rpartition(":")[0]
            links[host] = links.get(host, False) or link.in_sync
        return links

    @defer.inlineCallbacks
    def _learn_dledger(self, address):
        if address in self._broker_groups:
            return
        config = yield self.admin.run(self.admin.core.broker_config(address))
        self._broker_groups[address] = (
            (config.get("dLegerGroup"), config.get("dLegerPeers"))
            if config.get("enableDLegerCommitLog") == "true" else None)

    @defer.inlineCallbacks
    def _topics_and_groups(self, own_names):
        run, core = self.admin.run, self.admin.core
        topics, groups = [], set()
        for topic in sorted(t for t in (yield run(core.topic_list())) if _user_topic(t, own_names)):
            stats = yield run(core.topic_stats(topic))
            topics.append({"topic": topic, "queues": [
                {"broker": queue.broker_name, "queueId": queue.queue_id,
                 "minOffset": offsets.min_offset, "maxOffset": offsets.max_offset}
                for queue, offsets in sorted(stats.items(),
                                             key=lambda item: (item[0].broker_name, item[0].queue_id))]})
            groups.update((yield run(core.consumer_groups(topic))))
        found = []
        for group in sorted(groups):
            stats = yield run(core.consume_stats(group))
            found.append({"group": group, "lag": stats.total_diff(), "tps": stats.consume_tps,
                          "queues": len(stats.offset_table)})
        self._slow = {"topics": topics, "groups": found}

    @defer.inlineCallbacks
    def _dledger(self, facts):
        groups = dict(self.dledger_groups)
        groups.update(g for g in self._broker_groups.values() if g is not None)
        found = []
        for group, peers in sorted(groups.items()):
            members = yield self._members(group, peers)
            found.append({"group": group, "members": members})
        facts["dledger"] = found

    @defer.inlineCallbacks
    def _members(self, group, peers):
        answers = yield self.admin.run(self.admin.core.raft_members(group, peers))
        marks = {}
        for server in self.local_members.values():
            if server.node.role is Role.LEADER:
                marks = server.node.pusher.water_marks.get(server.node.term, {})
        members = []
        for member in answers:
            local = self.local_members.get(member.member_id)
            members.append({
                "id": member.member_id, "address": member.address, "role": member.role,
                "leader": member.leader_id,
                "term": local.node.term if local else member.term,
                "ledgerEnd": (local.node.member.ledger_end_index if local
                              else member.ledger_end_index),
                "committed": local.node.committed_index if local else member.committed_index,
                "waterMark": marks.get(member.member_id)})
        return members
