"""Our DLedger store reads the commit log a real Java 4.9.7 broker wrote in DLedger mode: a
Java broker, a group of one, takes sends on two queues and stops; our
``DLedgerMessageStore`` opens its directory and finds every message by queue, by offset and
by key, then goes on writing after Java's entries with Java's queue offsets."""

import pytest
from twisted.internet import defer

from dledger_support import pull_bodies, put, record
from rmqproto.codec import headers as h
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.message import decode_message_id
from rmqproto.store.dledger import DLedgerMessageStore
from rmqproto.store.results import PutMessageStatus
from support.interop import java_available
from support.javapeers import JavaPeers, broker_port
from support.processes import free_port
from support.realreactor import poll_until, run_reactor
from support.syncclient import call, create_topic, wait_until

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

TOPIC = "JavaDLedger"
COUNT = 20
#: What both brokers are configured with: small segments and index files.
SETTINGS = dict(mappedFileSizeCommitLog=1024 * 1024, mappedFileSizeConsumeQueue=6000,
                maxHashSlotNum=64, maxIndexNum=400, dLegerGroup="g", dLegerSelfId="n0")


def send(addr, queue_id, body, keys):
    header = h.SendMessageRequestHeaderV2(
        producer_group="JavaLog", topic=TOPIC, default_topic="TBW102",
        default_topic_queue_nums=4, queue_id=queue_id, sys_flag=0,
        born_timestamp=1_700_000_000_123, flag=0,
        properties="KEYS\x01%s\x02WAIT\x01true" % keys, reconsume_times=0, unit_mode=False,
        batch=False)
    return call(addr, RC.SEND_MESSAGE_V2, header.to_ext_fields(), body)


def test_our_store_reads_the_dledger_log_of_a_java_broker(tmp_path):
    peers = JavaPeers(tmp_path)
    port, member_port = broker_port(), free_port()
    member = dict(SETTINGS, dLegerPeers="n0-127.0.0.1:%d" % member_port)
    try:
        broker = peers.broker("dl", listenPort=port, enableDLegerCommitLog="true", **member)
        addr = "127.0.0.1:%d" % port
        create_topic(addr, TOPIC, queues=2)
        # the broker takes sends once its member leads and it became master
        wait_until(lambda: send(addr, 0, b"java-first", "first").code == R.SUCCESS, 60)
        sent = {0: [b"java-first"], 1: []}
        offsets = {}
        for k in range(COUNT):
            body = b"java%d" % k
            answer = send(addr, k % 2, body, "key%d" % k)
            assert answer.code == R.SUCCESS, answer.remark
            sent[k % 2].append(body)
            offsets[body] = decode_message_id(answer.ext_fields["msgId"])[1]
        broker.stop()  # SIGTERM: Java's shutdown hook flushes and writes its checkpoints
    finally:
        peers.stop_all()

    @defer.inlineCallbacks
    def scenario(reactor):
        store = DLedgerMessageStore(
            dict(member, storePathRootDir=str(tmp_path / "store-dl"), enableDLegerCommitLog=True,
                 brokerRole="SYNC_MASTER"), reactor)
        store.load()
        store.start()
        try:
            assert store.commit_log.divided_commitlog_offset == 0
            for queue_id, bodies in sent.items():
                assert store.get_max_offset_in_queue(TOPIC, queue_id) == len(bodies)
            yield poll_until(reactor, lambda: store.dledger.is_leader)
            # our first append commits whatever Java's checkpoint had not
            result = yield put(store, record(topic=TOPIC, queue_id=1, body=b"ours"))
            assert result.status is PutMessageStatus.PUT_OK
            assert result.append_result.logics_offset == len(sent[1])
            sent[1].append(b"ours")
            yield poll_until(reactor, store.dispatched)
            for queue_id, bodies in sent.items():
                assert pull_bodies(store, 0, 64, TOPIC, queue_id) == bodies
            for body, offset in offsets.items():
                assert store.look_message_by_offset(offset).body == body
            found = store.query_message(TOPIC, "key7", 32, 0, 2 ** 62).messages
            assert len(found) == 1
        finally:
            store.shutdown()

    run_reactor(scenario, timeout=60)
