"""The DLedger fault harness (:mod:`support.dledgerfaults`) run against a broker group on a
DLedger commit log (:mod:`support.brokergroup`) while Java producers send
(docs/broker-dledger.md, "Proof").

The members' DLedger links go through fault proxies (:class:`~support.dledgerfaults.Proxied`);
the producers and the NameServer reach the brokers directly, so a partition cuts the Raft
group, not the clients. A Java producer (:class:`~support.brokergroup.OpenStorm`: threads of
sync sends without retries, routes refreshed every second) sends the whole time while the
:class:`~support.dledgerfaults.Nemesis` kills members with -9 and restarts them, stops them
with SIGSTOP, isolates the leader or a follower and cuts links one way. Then the network is
healed, the producer goes on until the master has acknowledged 20 more sends, a Java
consumer reads the topic from its first offset, every member is stopped and:

* every message acknowledged SEND_OK was consumed, nothing was consumed that no send
  attempted, nothing twice (:func:`~support.brokergroup.delivery_problems`);
* every acknowledged message is in every member's log at its offset message id, no key is
  stored twice, and the logs are byte-identical up to the committed entry
  (:meth:`~support.brokergroup.BrokerGroup.log_problems`).

A longer round: ``python -m support.brokerfaults --kinds java1-ours2 --seconds 300`` from
``tests/`` (``--kinds``: a kind of :data:`~support.brokergroup.KINDS`, ``ours`` for three of
ours).
"""

import argparse
import random
import tempfile
import time
from pathlib import Path

from support.brokergroup import KINDS, BrokerGroup, OpenStorm, broker_group, delivery_problems
from support.dledgerfaults import Nemesis, Proxied, report

__all__ = ["ProxiedBrokerGroup", "run_round"]

TOPIC = "FaultStorm"
#: Faults held 4 to 8 s: longer than DLedger's 6 s heartbeat leak, so some of them elect.
PERIOD = (4.0, 8.0)
#: Sends acknowledged before the first fault, and by the master after the last one.
ACKS_AROUND_FAULTS = 20


class ProxiedBrokerGroup(Proxied, BrokerGroup):
    """A :class:`~support.brokergroup.BrokerGroup` whose DLedger links go through fault
    proxies."""


def run_round(workdir, kinds, seconds=20, seed=0, threads=4):
    """One round on a group of ``kinds``; ``(problems, acks, nemesis)``."""
    rng = random.Random(seed)
    with broker_group(Path(workdir), kinds, ProxiedBrokerGroup) as group:
        group.wait_master()
        group.create_topics(TOPIC)
        group.wait_synced(TOPIC)
        storm = OpenStorm(group, TOPIC, threads)
        storm.wait_new_acks(ACKS_AROUND_FAULTS)
        nemesis = Nemesis(group, rng, period=PERIOD)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            nemesis.step()
        group.heal()
        master = group.wait_master()
        storm.wait_new_acks(ACKS_AROUND_FAULTS, group.listen_ports[master])
        acks = storm.stop()
        problems = delivery_problems([a.key for a in acks], storm.attempted(),
                                     group.consume_keys(TOPIC, "FaultConsumer", len(acks)))
        group.wait_committed_everywhere()
        group.stop()
        problems += group.log_problems(acks, TOPIC)
    return problems, acks, nemesis


def main():
    parser = argparse.ArgumentParser(description="A fault round of a DLedger broker group.")
    parser.add_argument("--kinds", choices=sorted(KINDS), default="java")
    parser.add_argument("--seconds", type=int, default=300)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="broker-faults-") as tmp:
        problems, acks, nemesis = run_round(Path(tmp), KINDS[args.kinds], args.seconds,
                                            args.seed, args.threads)
    report("%s, %d s, seed %d: %d sends acknowledged"
           % (args.kinds, args.seconds, args.seed, len(acks)), nemesis, problems)

if __name__ == "__main__":
    main()
