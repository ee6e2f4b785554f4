"""One DLedger member (``docs/dledger.md``): role, term, indices, peers' water marks, elections,
append latency.

Labels ``group`` and ``id`` name the member; ``peer`` a member whose water mark (the highest
index it is known to hold, ``DLedgerEntryPusher``) the leader tracks. :class:`RoleHistory`
listens to the server's role changes (never on the append path) to count elections;
:class:`AppendLatency` counts each settled append into a bucket (a dict entry and a bisect).
"""

from bisect import bisect_left

from prometheus_client.core import HistogramMetricFamily

from rmqproto.dledger.actions import Role
from rmqproto.metrics.families import counter, gauge, gauges

__all__ = ["APPEND_BUCKETS_MS", "AppendLatency", "DLedgerCollector", "RoleHistory"]

#: Upper bounds of the append latency buckets, in ms.
APPEND_BUCKETS_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)

_MEMBER = ["group", "id"]


class RoleHistory:
    """Role changes of one member: candidacies, leaderships, when the role last changed."""

    def __init__(self, server):
        self.server = server
        self.candidacies = 0
        self.leaderships = 0
        self.since = server.now() / 1000.0
        server.role_listeners.append(self.role_changed)

    def role_changed(self, term, role):
        self.since = self.server.now() / 1000.0
        if role is Role.CANDIDATE:
            self.candidacies += 1
        elif role is Role.LEADER:
            self.leaderships += 1


class AppendLatency:
    """How long the member's successful appends took, from arrival to quorum, as bucket
    counts (the server times appends only while this observes them)."""

    def __init__(self, server, bounds=APPEND_BUCKETS_MS):
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total_ms = 0
        server.append_observers.append(self.observe)

    def observe(self, ms):
        self.counts[bisect_left(self.bounds, ms)] += 1
        self.total_ms += ms

    def family(self, names, values):
        metric = HistogramMetricFamily(
            "rmqproto_dledger_append_latency_seconds", "time from an append's arrival at the "
            "leader to its quorum (successful appends)", labels=names)
        cumulative, buckets = 0, []
        for bound, count in zip(self.bounds + (None,), self.counts):
            cumulative += count
            buckets.append(("+Inf" if bound is None else repr(bound / 1000), cumulative))
        metric.add_metric(values, buckets, self.total_ms / 1000)
        return metric


class DLedgerCollector:
    """The figures of the :class:`~rmqproto.dledger.server.DLedgerServer` ``server``."""

    def __init__(self, server):
        self.server = server
        self.history = RoleHistory(server)
        self.latency = AppendLatency(server)

    def collect(self):
        node, config = self.server.node, self.server.config
        labels = [config.group, config.selfId]
        role = node.role
        yield gauges("rmqproto_dledger_role", "1 for the member's current role", _MEMBER + ["role"],
                     [(labels + [r.name], int(r is role)) for r in Role if r is not Role.UNKNOWN])
        yield gauge("rmqproto_dledger_is_leader", "1 while the member leads", _MEMBER, labels,
                    int(role is Role.LEADER))
        yield gauge("rmqproto_dledger_term", "the member's current term", _MEMBER, labels,
                    node.term)
        yield gauge("rmqproto_dledger_ledger_end_index", "index of the last entry in the log",
                    _MEMBER, labels, node.member.ledger_end_index)
        yield gauge("rmqproto_dledger_ledger_end_term", "term of the last entry in the log",
                    _MEMBER, labels, node.member.ledger_end_term)
        yield gauge("rmqproto_dledger_committed_index", "the member's committed index",
                    _MEMBER, labels, node.committed_index)
        yield gauge("rmqproto_dledger_role_since_seconds", "unix time of the last role change "
                    "(start, if none)", _MEMBER, labels, self.history.since)
        yield counter("rmqproto_dledger_elections", "times the member stood for election",
                      _MEMBER, labels, self.history.candidacies)
        yield counter("rmqproto_dledger_leaderships", "times the member became leader",
                      _MEMBER, labels, self.history.leaderships)
        marks = node.pusher.water_marks.get(node.term, {}) if role is Role.LEADER else {}
        yield gauges("rmqproto_dledger_peer_water_mark", "highest index the leader knows the "
                     "peer holds (leader only)", _MEMBER + ["peer"],
                     [(labels + [peer], index) for peer, index in sorted(marks.items())])
        yield self.latency.family(_MEMBER, labels)
