"""Three of our brokers on a DLedger commit log as processes (``twistd -n rmq-master`` with
``enableDLegerCommitLog=true``), our NameServer, the Java 4.9.8 clients and ``mqadmin``.

* The members elect a leader: its broker registers as master (brokerId 0), the two others
  as slaves with the number of their member id + 1; ``mqadmin clusterList`` shows the same.
* A Java producer's messages reach a Java consumer through the master.
* kill -9 of the master in the middle of a send storm: another member takes over and
  registers as master, the same producer goes on getting SEND_OK from it, and every message
  acknowledged before or after is consumed.
"""

import re

import pytest

from rmqproto.codec.codes import RequestCode, ResponseCode
from support.dledgerbrokers import MEMBERS, DLedgerBrokers, cluster_list_roles
from support.interop import java_available
from support.javapeers import JavaPeers
from support.syncclient import call, wait_until

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

TOPIC = "DLedgerTopic"
QUEUES = 4          # the producers' defaultTopicQueueNums
_ACK = re.compile(r"^OK \S+ \S+ \d+ \d+ (storm-\d+-\d+)$", re.M)


@pytest.fixture
def group(tmp_path):
    brokers = DLedgerBrokers(tmp_path)
    brokers.java = JavaPeers(tmp_path)
    yield brokers
    brokers.java.stop_all()
    brokers.stop()


def check_roles(group, addrs, members=MEMBERS):
    """The NameServer's table: one master, and each other member a slave with its id + 1."""
    master = group.member_of(addrs[0])
    slaves = {group.member_of(addr): broker_id for broker_id, addr in addrs.items() if broker_id}
    assert slaves == {m: int(m[1:]) + 1 for m in members if m != master}
    return master


def test_three_brokers_elect_a_master_clients_and_mqadmin_use(group):
    addrs = group.wait_for_master()
    master = check_roles(group, addrs)
    # only the master takes sends; a slave refuses them as Java's does
    header = {"producerGroup": "PG", "topic": TOPIC, "defaultTopic": "TBW102",
              "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0",
              "bornTimestamp": "1700000000000", "flag": "0", "properties": "",
              "reconsumeTimes": "0"}
    slave = next(addr for broker_id, addr in addrs.items() if broker_id)
    assert call(slave, RequestCode.SEND_MESSAGE, header, b"x").code == \
        ResponseCode.SERVICE_NOT_AVAILABLE

    result = group.java.run_client("rmqproto.peers.ProduceConsume", group.namesrv_addr, TOPIC,
                                   100, "DLedgerGroup", 60)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "SENT 100" in result.stdout and "RECEIVED 100" in result.stdout

    roles = cluster_list_roles(group.java.mqadmin("clusterList", "-n", group.namesrv_addr))
    assert roles == {addr: broker_id for broker_id, addr in addrs.items()}, roles
    assert group.member_of(addrs[0]) == master


def test_kill_the_master_and_the_producer_goes_on_with_the_new_one(group):
    old = group.wait_for_master()
    storm = group.java.start("storm", group.java.client_cp, "rmqproto.peers.SendStorm",
                             group.namesrv_addr, TOPIC, "75", "4")

    def acks():
        return _ACK.findall(storm.output())
    wait_until(lambda: len(acks()) >= 300, timeout=60, interval=0.1)
    group.brokers[group.member_of(old[0])].kill()
    before = len(acks())
    survivors = [m for m in MEMBERS if group.addr(m) != old[0]]
    new = group.wait_for_master(survivors, not_addr=old[0], timeout=60)
    check_roles(group, new, survivors)
    # the same producer: SEND_OK from the new master once its route names it (≤ 30 s)
    wait_until(lambda: len(acks()) >= before + 300, timeout=60, interval=0.2)
    storm.stop()
    acked = set(acks())

    total = sum(int(call(new[0], RequestCode.GET_MAX_OFFSET,
                         {"topic": TOPIC, "queueId": str(q)}).ext_fields["offset"])
                for q in range(QUEUES))
    result = group.java.run_client("rmqproto.peers.ConsumeAll", group.namesrv_addr, "litepull",
                                   "DLedgerSeen", TOPIC, total, 90, "linger=1000")
    assert result.returncode == 0, result.stderr[-2000:]
    keys = re.findall(r'"keys":"(storm-\d+-\d+)"', result.stdout)
    assert len(keys) == total
    assert acked <= set(keys), sorted(acked - set(keys))[:10]
