"""Transactional messages through our SYNC_MASTER with our slave: the real Java 4.9.8 and
5.3.3 ``TransactionMQProducer`` (side by side, a topic each) commit, roll back and answer
check-backs; after the master is killed with SIGKILL the slave holds exactly the committed
messages (their real topic, COMMIT sysFlag, body), a new push consumer of each client reads
them from the slave, and the slave refuses END_TRANSACTION as Java's slave does. (Our slave
only: a Java slave adds some 40 s of start-up and the transaction path is the master's.)"""

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from rmqproto.codec import headers as h
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.message import iter_records
from support.hapair import HAPair
from support.interop import java_available
from support.syncclient import call, create_topic, wait_until

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

TOPICS = {"4.9.8": "TxHA", "5.3.3": "TxHA5"}  # a topic per client


@pytest.fixture
def pair(tmp_path):
    pair = HAPair(tmp_path, "ours", topic=TOPICS["4.9.8"], transactionCheckInterval=1000,
                  transactionTimeOut=1000, transactionCheckMax=2)
    yield pair
    pair.stop()


def query(addr, topic, key):
    answer = call(addr, RC.QUERY_MESSAGE, {"topic": topic, "key": key, "maxNum": "8",
                                           "beginTimestamp": "0", "endTimestamp": str(2 ** 62)})
    return list(iter_records(answer.body)) if answer.code == R.SUCCESS else []


def run_each(pair, main, args):
    """Run the program ``main`` with each client side by side, with the arguments
    ``args(topic)`` of its topic; its output by client."""
    classpaths = {"4.9.8": pair.peers.client_cp, "5.3.3": pair.peers.client5_cp}
    with ThreadPoolExecutor(len(TOPICS)) as pool:
        runs = {client: pool.submit(pair.peers.run_client, main, pair.namesrv_addr, *args(topic),
                                    classpath=classpaths[client])
                for client, topic in TOPICS.items()}
    outputs = {}
    for client, run in runs.items():
        result = run.result()
        assert result.returncode == 0, (client, result.stdout[-4000:] + result.stderr[-4000:])
        outputs[client] = result.stdout
    return outputs


def test_committed_messages_are_on_the_slave_after_a_master_kill(pair):
    pair.wait_in_sync()
    for topic in TOPICS.values():
        create_topic(pair.master_addr, topic)
        wait_until(lambda t=topic: call(pair.namesrv_addr, RC.GET_ROUTEINFO_BY_TOPIC,
                                        {"topic": t}).code == R.SUCCESS, timeout=30)
    run_each(pair, "rmqproto.peers.Transactions", lambda topic: (2, 60, topic))
    pair.master.kill()
    for topic in TOPICS.values():
        for kind in ("commit", "check-commit"):
            [record] = query(pair.slave_addr, topic, "key-" + kind)
            assert record.topic == topic and record.body == (kind + " body").encode()
            assert record.sys_flag & 0xC == 8 and record.properties["kind"] == kind
        for kind in ("rollback", "check-rollback", "check-unknown"):
            assert query(pair.slave_addr, topic, "key-" + kind) == []
    # consumers of a new group find the master gone and read the committed two from the slave
    consumed = run_each(pair, "rmqproto.peers.ConsumeAll",
                        lambda topic: ("concurrently", "AfterKill-" + topic, topic, 2, 60))
    for client, output in consumed.items():
        got = [json.loads(line[4:]) for line in output.splitlines() if line.startswith("MSG ")]
        assert sorted((m["keys"], m["body"]) for m in got) == [
            ("key-check-commit", "check-commit body"), ("key-commit", "commit body")], client
        assert {m["topic"] for m in got} == {TOPICS[client]}, client
    answer = call(pair.slave_addr, RC.END_TRANSACTION, h.EndTransactionRequestHeader(
        producer_group="TxProducer-" + TOPICS["4.9.8"], tran_state_table_offset=0,
        commit_log_offset=0, commit_or_rollback=8, msg_id="X").to_ext_fields())
    assert answer.code == R.SLAVE_NOT_AVAILABLE
