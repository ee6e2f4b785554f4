"""Transactional messages through our SYNC_MASTER with our slave: the real Java 4.9.8
``TransactionMQProducer`` commits, rolls back and answers check-backs; after the master is
killed with SIGKILL the slave holds exactly the committed messages (their real topic,
COMMIT sysFlag, body), and refuses END_TRANSACTION as Java's slave does. (Our slave only:
a Java slave adds some 40 s of start-up and the transaction path is the master's.)"""

import pytest

from rmqproto.codec import headers as h
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.message import iter_records
from support.hapair import HAPair
from support.interop import java_available
from support.syncclient import call, create_topic, wait_until

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

TOPIC = "TxHA"


@pytest.fixture
def pair(tmp_path):
    pair = HAPair(tmp_path, "ours", topic=TOPIC, transactionCheckInterval=1000,
                  transactionTimeOut=1000, transactionCheckMax=2)
    yield pair
    pair.stop()


def query(addr, key):
    answer = call(addr, RC.QUERY_MESSAGE, {"topic": TOPIC, "key": key, "maxNum": "8",
                                           "beginTimestamp": "0", "endTimestamp": str(2 ** 62)})
    return list(iter_records(answer.body)) if answer.code == R.SUCCESS else []


def test_committed_messages_are_on_the_slave_after_a_master_kill(pair):
    pair.wait_in_sync()
    create_topic(pair.master_addr, TOPIC)
    wait_until(lambda: call(pair.namesrv_addr, RC.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC}).code
               == R.SUCCESS, timeout=30)
    result = pair.peers.run_client("rmqproto.peers.Transactions", pair.namesrv_addr, 2, 60, TOPIC)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    pair.master.kill()
    for kind in ("commit", "check-commit"):
        [record] = query(pair.slave_addr, "key-" + kind)
        assert record.topic == TOPIC and record.body == (kind + " body").encode()
        assert record.sys_flag & 0xC == 8 and record.properties["kind"] == kind
    for kind in ("rollback", "check-rollback", "check-unknown"):
        assert query(pair.slave_addr, "key-" + kind) == []
    answer = call(pair.slave_addr, RC.END_TRANSACTION, h.EndTransactionRequestHeader(
        producer_group="TxProducer-" + TOPIC, tran_state_table_offset=0, commit_log_offset=0,
        commit_or_rollback=8, msg_id="X").to_ext_fields())
    assert answer.code == R.SLAVE_NOT_AVAILABLE
