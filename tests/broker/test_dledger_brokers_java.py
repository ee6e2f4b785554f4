"""Broker groups on a DLedger commit log with real Java 4.9.7 brokers in them
(docs/broker-dledger.md, "Proof"): one Java broker and two of ours (``java1-ours2``, n1
Java), two Java and one of ours (``java2-ours1``, n1 ours). Every member's ``broker.conf``
has ``preferredLeaderId=n1``, so n1 leads whatever the election chose first: the leader
killed is a Java broker in ``java1-ours2`` and one of ours in ``java2-ours1``, and the
member that takes over is of the other kind.

One run a group (started once for all the module's checks), through our NameServer: a Java
producer (``OpenStorm``, four threads of sync sends without retries, routes refreshed every
second) sends while n1 is killed with -9, and goes on through the new leader; n1 comes back
as a follower, catches up and takes the leadership back (a leadership transfer between
kinds), and the producer goes on through it; meanwhile the C++ client sends and consumes
through the group. Then:

* every message acknowledged SEND_OK is consumed by a Java consumer, nothing is consumed
  that no send attempted, and nothing twice (the producer never retries);
* ``mqadmin clusterList`` shows each member with the brokerId a Java broker shows in its
  place: every member is Java in one of the two groups and ours in the other, with n1
  leading in both;
* the members' DLedger data and index files are byte-identical up to the committed entry,
  every acknowledged message is in each at its offset message id, and no key is stored twice.
"""

import types
from concurrent.futures import ThreadPoolExecutor

import pytest

from support import cppclient
from support.brokergroup import KINDS, OpenStorm, broker_group, delivery_problems, kinds_params
from support.interop import java_available

TOPIC = "DLedgerStorm"
CPP_TOPIC = "DLedgerCpp"
CPP_COUNT = 20
THREADS = 2
#: The member every broker.conf prefers as leader: Java in java1-ours2, ours in java2-ours1.
PREFERRED = "n1"
#: Acks wanted from each master in turn: n1, its successor, n1 again.
ACKS_PER_MASTER = 50
#: ``{member: brokerId}`` in ``mqadmin clusterList`` with n1 leading, as the Java members
#: register (``DLedgerRoleChangeHandler``: the leader master 0, a follower slave selfId + 1):
#: Java's n1 in java1-ours2, Java's n0 and n2 in java2-ours1.
JAVA_ROLES = {"n0": 1, "n1": 0, "n2": 3}
#: Registrations every 10 s (Java's shortest ``registerNameServerPeriod``): a slave learns
#: its master's address from the answer to one, and copies its topics within 10 s of that.
REGISTER_PERIOD_MS = 10000

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")


def cpp(group, topic):
    """The C++ client's send-and-consume report on ``topic`` (None without the client)."""
    if not cppclient.available():
        return None
    return cppclient.run(group.namesrv_addr, topic, CPP_COUNT, topic + "_cpp", timeout=60)


def run_failover(group):
    """The run the module's tests check: what it saw."""
    run = types.SimpleNamespace(kinds=dict(group.kinds))
    run.first = group.wait_master(member=PREFERRED)
    group.create_topics(TOPIC, CPP_TOPIC)
    storm = OpenStorm(group, TOPIC, THREADS)
    group.wait_synced(TOPIC, CPP_TOPIC)
    run.acks_on_first = storm.wait_new_acks(ACKS_PER_MASTER, group.listen_ports[PREFERRED])
    group.kill(PREFERRED)
    run.second = group.wait_master(among=[m for m in group.ids if m != PREFERRED])
    run.acks_on_second = storm.wait_new_acks(ACKS_PER_MASTER, group.listen_ports[run.second])
    group.spawn(PREFERRED)  # back as a follower; once caught up it takes the leadership back
    run.cpp = cpp(group, CPP_TOPIC)
    group.wait_listening(PREFERRED)
    run.third = group.wait_master(member=PREFERRED)
    run.acks_on_third = storm.wait_new_acks(ACKS_PER_MASTER, group.listen_ports[PREFERRED])
    acks = storm.stop()
    with ThreadPoolExecutor(1) as pool:  # two JVMs at once: mqadmin while the consumer reads
        roles = pool.submit(group.cluster_list_roles)
        consumed = group.consume_keys(TOPIC, "DLedgerConsumer", len(acks))
        run.roles = roles.result()
    run.delivery = delivery_problems([a.key for a in acks], storm.attempted(), consumed)
    group.wait_committed_everywhere()
    group.stop()
    run.log_problems = group.log_problems(acks, TOPIC)
    run.acks = len(acks)
    return run


@pytest.fixture(scope="module", params=kinds_params("java1-ours2", "java2-ours1"))
def failover(request, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("dledger-brokers-" + request.param)
    with broker_group(workdir, KINDS[request.param], preferredLeaderId=PREFERRED,
                      registerNameServerPeriod=REGISTER_PERIOD_MS) as group:
        yield run_failover(group)


def test_the_preferred_leader_is_killed_and_comes_back_as_leader(failover):
    assert failover.first == failover.third == PREFERRED
    assert failover.second != PREFERRED
    # the other kind takes over: a Java leader killed in java1-ours2, one of ours in java2-ours1
    assert failover.kinds[failover.second] != failover.kinds[PREFERRED]


def test_clients_go_on_through_each_new_leader(failover):
    assert failover.acks_on_first >= ACKS_PER_MASTER
    assert failover.acks_on_second >= ACKS_PER_MASTER
    assert failover.acks_on_third >= ACKS_PER_MASTER


@pytest.mark.skipif(not cppclient.available(), reason="the rocketmq C++ client is not installed")
def test_the_cpp_client_sends_and_consumes_through_the_failover(failover):
    assert failover.cpp == {"sent": CPP_COUNT, "received": CPP_COUNT}


def test_every_acknowledged_message_is_consumed_once(failover):
    assert failover.acks >= 3 * ACKS_PER_MASTER
    assert failover.delivery == []


def test_cluster_list_shows_the_roles_java_brokers_show(failover):
    assert failover.roles == JAVA_ROLES


def test_logs_are_byte_identical_up_to_the_committed_entry(failover):
    assert failover.log_problems == []
