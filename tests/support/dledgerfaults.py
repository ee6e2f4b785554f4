"""A fault harness for DLedger groups of our members, checked in the manner of the DLedger
Jepsen suites (docs/dledger.md, "Fault harness").

Each member runs as its own process; every link between two members goes through a
:class:`~support.faultproxy.FaultProxy` of its own (member *a* reaches member *b* at the
proxy of ``(a, b)``), so the harness can cut links one way or both. Client threads append
unique values to whichever member leads, while a nemesis kills members with -9 and restarts
them, stops them with SIGSTOP and resumes them, and partitions the group (symmetric,
asymmetric, the leader alone, a bridge node). At the end the network is healed, the group
converges, every member is stopped and its files read back, and:

* **set**: every acknowledged append is present on every member, at the index it was
  acknowledged with, with its value;
* **order**: every member holds the same log up to the committed index (no committed entry
  lost or reordered);
* **linearizable log**: an append acknowledged before another was invoked has the lower
  index (a log's real-time order; the indexes are unique);
* **one leader per term**: no two members were leader in the same term (from the role
  changes each member logs).

Run a longer round with ``python -m support.dledgerfaults --nodes 5 --seconds 600`` from
``tests/``.
"""

import argparse
import os
import random
import re
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from rmqproto.codec.dledger_rpc import DLedgerResponseCode
from support.dledgergroup import Group
from support.faultproxy import FaultProxy

__all__ = ["Proxied", "ProxiedGroup", "Workload", "Nemesis", "run_round", "check", "order_problems",
           "set_problems", "linearizability_problems", "leader_problems", "report"]

#: Fast timing, so that a short round sees many elections.
FAST = dict(heartBeatTimeIntervalMs=200, maxHeartBeatLeak=3, minVoteIntervalMs=100,
            maxVoteIntervalMs=300, maxPushTimeOutMs=500, maxWaitAckTimeMs=1500,
            checkPointInterval=200, mappedFileSizeForEntryData=256 * 1024,
            mappedFileSizeForEntryIndex=32 * 4096)
_ROLE_LINE = re.compile(r"\[(\w+)\] (LEADER|FOLLOWER|CANDIDATE) in term (\d+)")


class Proxied:
    """Member-to-member links through fault proxies, mixed in before a
    :class:`~support.dledgergroup.Group` class: member *a* reaches member *b* at the proxy of
    ``(a, b)``; members can be paused (SIGSTOP) and the links cut."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.links = {(a, b): FaultProxy(self.ports[b]) for a in self.ids for b in self.ids
                      if a != b}
        self.paused = set()

    def peers_of(self, member):
        return ";".join("%s-127.0.0.1:%d" % (
            m, self.ports[m] if m == member else self.links[member, m].port) for m in self.ids)

    def partition(self, *sides):
        """Only members on the same side reach each other."""
        side = {m: k for k, group in enumerate(sides) for m in group}
        for (a, b), link in self.links.items():
            if side.get(a) == side.get(b):
                link.heal()
            else:
                link.cut()

    def cut(self, a, b):
        """``a`` can no longer reach ``b`` (``b`` still reaches ``a``)."""
        self.links[a, b].cut()

    def heal(self):
        for link in self.links.values():
            link.heal()
        for member in list(self.paused):
            self.resume(member)

    def pause(self, member):
        os.kill(self.daemons[member].popen.pid, signal.SIGSTOP)
        self.paused.add(member)

    def resume(self, member):
        if member in self.paused and member in self.daemons:
            os.kill(self.daemons[member].popen.pid, signal.SIGCONT)
        self.paused.discard(member)

    def kill(self, member):
        self.resume(member)
        super().kill(member)

    def close(self):
        self.heal()
        self.stop()
        for link in self.links.values():
            link.close()


class ProxiedGroup(Proxied, Group):
    """A :class:`Group` of our members whose member-to-member links go through fault proxies."""


class Workload:
    """Client threads appending unique values; the history of every append."""

    def __init__(self, group, clients=3):
        self.group = group
        self.clients = clients
        self.history = []          # (value, invoked, completed, index or None if unknown)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = []

    def start(self):
        for k in range(self.clients):
            thread = threading.Thread(target=self._run, args=(k,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join(30)

    def _run(self, k):
        sequence = 0
        members = self.group.ids
        target = members[k % len(members)]
        while not self._stop.is_set():
            value = b"c%d-%d" % (k, sequence)
            sequence += 1
            invoked = time.monotonic()
            answer = self.group.append(target, value) if target in self.group.daemons else None
            completed = time.monotonic()
            index = None
            if answer is not None and answer.code == DLedgerResponseCode.SUCCESS:
                index = answer.index
            elif answer is not None and answer.leader_id in members:
                target = answer.leader_id
            else:
                target = random.choice(members)
            with self._lock:
                self.history.append((value, invoked, completed, index))
            if index is None:
                time.sleep(0.02)

    @property
    def acknowledged(self):
        return [h for h in self.history if h[3] is not None]


class Nemesis:
    """Faults at random, one at a time, each healed before the next."""

    def __init__(self, group, rng, period=(2.0, 4.0)):
        self.group = group
        self.rng = rng
        self.period = period
        self.done = []

    def leader(self):
        live = [m for m in self.group.daemons if m not in self.group.paused]
        return self.group.leader(live) if live else None

    def step(self):
        group, rng = self.group, self.rng
        ids = group.ids
        kind = rng.choice(["kill", "pause", "partition", "asymmetric", "isolate-leader"]
                          + (["bridge"] if len(ids) >= 5 else []))
        victim = self.leader() if rng.random() < 0.5 else None
        victim = victim or rng.choice(ids)
        hold = rng.uniform(*self.period)
        if kind == "kill":
            group.kill(victim)
            time.sleep(hold)
            group.start(victim)
        elif kind == "pause":
            group.pause(victim)
            time.sleep(hold)
            group.resume(victim)
        elif kind == "partition":
            shuffled = rng.sample(ids, len(ids))
            cut = rng.randrange(1, len(ids) // 2 + 1)
            group.partition(shuffled[:cut], shuffled[cut:])
            time.sleep(hold)
        elif kind == "asymmetric":
            others = [m for m in ids if m != victim]
            for other in others:
                group.cut(victim, other)
            time.sleep(hold)
        elif kind == "isolate-leader":
            group.partition([victim], [m for m in ids if m != victim])
            time.sleep(hold)
        else:  # a bridge: two halves that only the bridge node joins
            bridge = victim
            rest = [m for m in ids if m != bridge]
            left, right = rest[:len(rest) // 2], rest[len(rest) // 2:]
            for a in left:
                for b in right:
                    group.cut(a, b)
                    group.cut(b, a)
            time.sleep(hold)
        group.heal()
        self.done.append((kind, victim))
        time.sleep(rng.uniform(0.5, 1.5))


def roles(group):
    """``{term: {leaders}}`` from every member's log lines."""
    leaders = {}
    for member in group.ids:
        log = group.base_dir(member) / "rmq-dledger.log"
        for found in _ROLE_LINE.finditer(log.read_text(errors="replace") if log.exists() else ""):
            if found.group(2) == "LEADER":
                leaders.setdefault(int(found.group(3)), set()).add(found.group(1))
    return leaders


def check(group, workload):
    """The problems found (an empty list when the round passed)."""
    logs = {m: group.read_log(m) for m in group.ids}
    return (order_problems(logs) + set_problems(logs, workload.acknowledged)
            + linearizability_problems(workload.acknowledged) + leader_problems(roles(group)))


def order_problems(logs):
    """Members whose logs differ up to the lowest committed index. ``logs``: ``{member:
    ([(index, term, body)], committed_index)}``."""
    committed = min(c for _, c in logs.values())
    members = sorted(logs)
    reference = [e for e in logs[members[0]][0] if e[0] <= committed]
    problems = ["%s's log differs from %s's up to index %d" % (m, members[0], committed)
                for m in members[1:] if [e for e in logs[m][0] if e[0] <= committed] != reference]
    values = [body for _, _, body in logs[members[0]][0]]
    if len(set(values)) != len(values):
        problems.append("a value was appended twice")
    return problems


def set_problems(logs, acknowledged):
    """Acknowledged appends missing, moved or changed on a member."""
    problems = []
    held = {m: {i: b for i, _, b in entries} for m, (entries, _) in logs.items()}
    for value, _, _, index in acknowledged:
        for member in sorted(held):
            if held[member].get(index) != value:
                problems.append("acknowledged %r at %d: %s holds %r"
                                % (value, index, member, held[member].get(index)))
                break
    return problems


def linearizability_problems(acknowledged):
    """Appends acknowledged with an index below one acknowledged before they began.
    ``acknowledged``: ``(value, invoked, completed, index)``."""
    problems = []
    started = sorted(acknowledged, key=lambda h: h[1])
    finished = sorted(acknowledged, key=lambda h: h[2])
    highest, k = -1, 0
    for value, invoked, _, index in started:
        while k < len(finished) and finished[k][2] < invoked:
            highest = max(highest, finished[k][3])
            k += 1
        if index <= highest:
            problems.append("%r got index %d though index %d was acknowledged before it began"
                            % (value, index, highest))
    return problems


def leader_problems(leaders):
    """Terms with more than one leader. ``leaders``: ``{term: {member}}``."""
    return ["term %d had leaders %s" % (term, sorted(members))
            for term, members in sorted(leaders.items()) if len(members) > 1]


def run_round(workdir, nodes=3, seconds=30, seed=0, clients=3):
    """One round; ``(problems, workload, nemesis)``."""
    rng = random.Random(seed)
    ids = ["n%d" % k for k in range(nodes)]
    group = ProxiedGroup(workdir, ids, **FAST)
    workload = nemesis = None
    try:
        group.start_all()
        group.wait_leader()
        workload = Workload(group, clients)
        workload.start()
        nemesis = Nemesis(group, rng)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            nemesis.step()
        group.heal()
        group.wait_leader(timeout=60)
        workload.stop()
        last = group.append_ok(b"final")
        wait = time.monotonic() + 60
        while time.monotonic() < wait and not all(
                (group.committed(m) or -1) >= last for m in ids):
            time.sleep(0.1)
    finally:
        if workload is not None:
            workload.stop()
        group.close()
    return check(group, workload), workload, nemesis


def main():
    parser = argparse.ArgumentParser(description="A DLedger fault round of our members.")
    parser.add_argument("--nodes", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=300)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--clients", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dledger-faults-") as tmp:
        problems, workload, nemesis = run_round(Path(tmp), args.nodes, args.seconds, args.seed,
                                                args.clients)
    report("nodes %d, %d s, seed %d: %d appends tried, %d acknowledged"
           % (args.nodes, args.seconds, args.seed, len(workload.history),
              len(workload.acknowledged)), nemesis, problems)


def report(summary, nemesis, problems):
    """Print a round's ``summary`` with the faults made, every problem and the verdict; exit
    1 if there were problems."""
    kinds = {}
    for kind, _ in nemesis.done:
        kinds[kind] = kinds.get(kind, 0) + 1
    print("%s; faults %s" % (summary, kinds))
    for problem in problems:
        print("PROBLEM", problem)
    print("PASSED" if not problems else "FAILED")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
