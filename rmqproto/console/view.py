"""The console's picture of a cluster, without I/O: facts and ``now`` in, a snapshot out.

The poller (:mod:`rmqproto.console.poller`) gathers *facts* (plain dicts, see
:meth:`ConsoleView.observe`); the view keeps what a single look cannot give: each slave's
lag over the last minutes (a slave that has gone stays on the page, its lag growing with its
master's log), and a mark at each DLedger election (a new term or a new leader).
"""

__all__ = ["ConsoleView", "DEFAULT_WINDOW_MS"]

#: How far back the lag charts reach.
DEFAULT_WINDOW_MS = 5 * 60 * 1000


class Series:
    """``(time, value)`` points of the last ``window_ms``."""

    def __init__(self, window_ms):
        self.window_ms = window_ms
        self.points = []

    def add(self, now, value):
        self.points.append((now, value))
        cut = now - self.window_ms
        while self.points and self.points[0][0] < cut:
            self.points.pop(0)


class ConsoleView:
    """What the page shows, rebuilt at every :meth:`observe`."""

    def __init__(self, window_ms=DEFAULT_WINDOW_MS):
        self.window_ms = window_ms
        self.lags = {}        # (broker name, slave address) → Series of lag bytes
        self.acks = {}        # (broker name, slave address) → last ack offset seen
        self.leaders = {}     # DLedger group → (term, leader id) last seen
        self.elections = {}   # DLedger group → [{"time", "term", "leader"}]

    def observe(self, facts, now):
        """The snapshot (JSON-ready) for ``facts`` seen at ``now`` (ms).

        ``facts`` has ``brokers`` (dicts of cluster, name, id, address, role, version),
        ``topics`` (topic, queues: broker, queueId, minOffset, maxOffset), ``groups`` (group,
        lag, tps), ``ha`` (broker, master, maxOffset, slaves: address, ackOffset, inSync),
        ``dledger`` (group, members: id, address, role, leader, term, ledgerEnd, committed)
        and ``errors`` (lines); any may be missing.
        """
        return {
            "time": now,
            "brokers": facts.get("brokers", []),
            "topics": facts.get("topics", []),
            "groups": facts.get("groups", []),
            "ha": [self._replication(master, now) for master in facts.get("ha", [])],
            "dledger": [self._group(group, now) for group in facts.get("dledger", [])],
            "errors": facts.get("errors", []),
            "acl": facts.get("acl", False),
        }

    def _replication(self, master, now):
        name, top = master["broker"], master["maxOffset"]
        seen = {slave["address"]: slave for slave in master["slaves"]}
        for key in self.acks:
            if key[0] == name and key[1] not in seen:   # gone: its lag grows with the log
                seen[key[1]] = {"address": key[1], "ackOffset": self.acks[key],
                                "inSync": False, "connected": False}
        slaves = []
        for address, slave in sorted(seen.items()):
            key = (name, address)
            self.acks[key] = slave["ackOffset"]
            lag = max(0, top - slave["ackOffset"])
            series = self.lags.setdefault(key, Series(self.window_ms))
            series.add(now, lag)
            slaves.append({"address": address, "ackOffset": slave["ackOffset"], "lagBytes": lag,
                           "inSync": slave.get("inSync"), "connected": slave.get("connected", True),
                           "series": series.points[:]})
        return {"broker": name, "master": master["master"], "maxOffset": top, "slaves": slaves}

    def _group(self, group, now):
        name = group["group"]
        leaders = [m for m in group["members"] if m.get("role") == "LEADER"]
        terms = [m["term"] for m in group["members"] if m.get("term") is not None]
        if leaders:
            current = (max(terms, default=None), leaders[0]["id"])
            if self.leaders.get(name) != current:
                self.leaders[name] = current
                self.elections.setdefault(name, []).append(
                    {"time": now, "term": current[0], "leader": current[1]})
        marks = self.elections.get(name, [])
        while marks and marks[0]["time"] < now - self.window_ms and len(marks) > 1:
            marks.pop(0)
        leader = self.leaders.get(name)
        return {"group": name, "members": group["members"],
                "leader": leader[1] if leaders else None,
                "term": leader[0] if leaders else None, "elections": marks[:]}
