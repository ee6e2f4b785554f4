"""Broker groups on a DLedger commit log with real Java 4.9.7 brokers in them
(docs/broker-dledger.md, "Proof"): three Java brokers; one Java broker and two of ours; two
Java and one of ours (``support.brokergroup.KINDS``; a kind with our brokers waits, xfail
and not run, until our broker takes a DLedger commit log).

One run a group, through our NameServer: a Java producer (``SendStorm``, four threads of sync
sends without retries, routes refreshed every second) sends while the leader is killed with
-9, and goes on through the new leader while the old one comes back as a follower; meanwhile
the C++ client sends and consumes through the new leader. Then:

* every message acknowledged SEND_OK is consumed by a Java consumer, nothing is consumed
  that no send attempted, and nothing twice (the producer never retries);
* ``mqadmin clusterList`` shows the Raft leader as master 0 and every follower as slave of
  id selfId + 1, as for a Java group (``DLedgerRoleChangeHandler``);
* the members' DLedger data and index files are byte-identical up to the committed entry,
  every acknowledged message is in each at its offset message id, and no key is stored twice.
"""

import types

import pytest

from rmqproto.codec import message as msg
from support import cppclient
from support.brokergroup import KINDS, broker_group, delivery_problems, kinds_params
from support.hapair import Storm
from support.interop import java_available
from support.syncclient import wait_until

TOPIC = "DLedgerStorm"
CPP_TOPIC = "DLedgerCpp"
CPP_COUNT = 20
THREADS = 4
STORM_SECONDS = 45  # outlasts a failover on a loaded machine; the rest of the run overlaps it
ACKS_BEFORE_KILL = 100
ACKS_ON_NEW_LEADER = 50

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")


def stored_by(group, member, acks):
    """The acks whose offset message id names ``member``'s broker as the store host."""
    port = group.listen_ports[member]
    return [a for a in acks if msg.decode_message_id(a.offset_msg_id)[0][1] == port]


def cpp(group, topic):
    """The C++ client's send-and-consume report on ``topic`` (None without the client)."""
    if not cppclient.available():
        return None
    return cppclient.run(group.namesrv_addr, topic, CPP_COUNT, topic + "_cpp", timeout=60)


def run_failover(group):
    """The run the module's tests check: what it saw."""
    run = types.SimpleNamespace()
    run.first = group.wait_master()
    group.create_topics(TOPIC, CPP_TOPIC)
    group.wait_synced(TOPIC, CPP_TOPIC)
    storm = Storm(group.java_peers, group.namesrv_addr, TOPIC, STORM_SECONDS, THREADS,
                  poll_ms=1000)
    storm.wait_acks(ACKS_BEFORE_KILL)
    run.killed = group.wait_master()
    group.kill(run.killed)
    run.second = group.wait_master(among=[m for m in group.ids if m != run.killed])
    wait_until(lambda: len(stored_by(group, run.second, storm.acks())) >= ACKS_ON_NEW_LEADER,
               timeout=60, interval=0.2)
    group.spawn(run.killed)  # back as a follower while the storm goes on
    run.cpp = cpp(group, CPP_TOPIC)
    group.wait_listening(run.killed)
    acks = storm.wait()
    run.acks_on_second = len(stored_by(group, run.second, acks))
    run.delivery = delivery_problems([a.key for a in acks], storm.attempted(),
                                     group.consume_keys(TOPIC, "DLedgerConsumer", len(acks)))
    wait_until(lambda: len(group.registered()) == len(group.ids), timeout=60)
    leader = group.wait_master()
    run.roles, run.expected_roles = group.cluster_list_roles(), group.expected_roles(leader)
    group.wait_committed_everywhere()
    group.stop()
    run.log_problems = group.log_problems(acks, TOPIC)
    run.acks = len(acks)
    return run


@pytest.fixture(scope="module", params=kinds_params(*KINDS))
def failover(request, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("dledger-brokers-" + request.param)
    with broker_group(workdir, KINDS[request.param]) as group:
        yield run_failover(group)


def test_clients_go_on_through_the_new_leader(failover):
    assert failover.second != failover.killed
    assert failover.acks_on_second >= ACKS_ON_NEW_LEADER


@pytest.mark.skipif(not cppclient.available(), reason="the rocketmq C++ client is not installed")
def test_the_cpp_client_sends_and_consumes_through_the_new_leader(failover):
    assert failover.cpp == {"sent": CPP_COUNT, "received": CPP_COUNT}


def test_every_acknowledged_message_is_consumed_once(failover):
    assert failover.acks > ACKS_BEFORE_KILL + ACKS_ON_NEW_LEADER
    assert failover.delivery == []


def test_cluster_list_shows_the_raft_roles(failover):
    assert failover.roles == failover.expected_roles


def test_logs_are_byte_identical_up_to_the_committed_entry(failover):
    assert failover.log_problems == []
