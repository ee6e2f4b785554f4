"""Batches stored byte for byte as a real Java 4.9.7 broker stores them.

A Java broker and ``twistd rmq-master`` (brokers ``broker-java`` and ``broker-ours`` of one
cluster, one NameServer) get the same batches: from the real Java 4.9.8 client
(``SendBatches.java`` sends the same ``Message`` objects to queue 0 of each, so each message
has one UNIQ_KEY on both) and from our ``SyncClient`` with property strings no Java client
writes (trailing separators, empty fragments, names twice, the batch's names with other
values, a message's own ``DELAY``, bytes that are not UTF-8, a batch body of exactly
``maxMessageSize``). Both answer the same; refused batches get the same code (and remark,
where Java's is not an exception's). The index finds the same keys on both. After a
graceful stop both stores pass ``support.storecheck`` (which recomputes each unit's tags code
from the stored properties, so Java's units check our reading of Java's strings) and every
record is the same bytes except the store timestamp, hosts, born timestamp and physical
offset.
"""

import struct

import pytest

from rmqproto.codec import headers as h
from rmqproto.codec import message as msg
from rmqproto.codec.bodies.route import TopicRouteData
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from support.daemons import start_nameserver
from support.interop import java_available
from support.javapeers import JavaPeers, broker_port
from support.storecheck import check_store
from support.syncclient import SyncClient, call, wait_until
from brokerkit import start_broker

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

FROM_JAVA, FROM_RAW = "BatchFromJava", "BatchRaw"
MAX_MESSAGE_SIZE = 65536
STORE = dict(brokerClusterName="DefaultCluster", maxMessageSize=MAX_MESSAGE_SIZE,
             mappedFileSizeCommitLog=16 * 1024 * 1024, mappedFileSizeConsumeQueue=6000)
BORN = 1_700_000_000_123

#: Batches both brokers store: (header properties, each message's properties bytes).
STORED = [
    ("WAIT\x01true", [
        b"WAIT\x01true\x02UNIQ_KEY\x01R1",            # as a Java client writes it
        b"",                                          # none
        b"TAGS\x01t3\x02",                            # a trailing separator
        b"\x02\x02KEYS\x01k4\x02\x02",                # empty fragments
        b"TAGS\x01a\x02TAGS\x01b\x02KEYS\x01k5 k5b",  # a name twice: the last wins
        b"CLUSTER\x01Mine\x02WAIT\x01false",          # the batch's names, other values
        b"DELAY\x013\x02KEYS\x01k7",                  # a message's delay level: stored as is
        b"NAME\x01\x02\x01v\x02X\x02KEYS\x01k8",      # fragments without a name or a value
        b"U\x01\xff\xfe\x02KEYS\x01k9",               # not UTF-8
        "TAGS\x01\u00e9\u4e2d\x02KEYS\x01k10".encode(),
    ]),
    # the header's TAGS and KEYS come after the message's: they win in the dispatch
    ("TAGS\x01hdr\x02KEYS\x01hk\x02WAIT\x01true\x02", [b"TAGS\x01own\x02KEYS\x01ok", b""]),
    ("", [b"A\x01b", b"A\x01c\x02"]),
    ("WAIT\x01false\x02DELAY\x010", [b"K\x01v"]),
    ("DELAY\x01-1", [b""]),
]
#: Keys the index is asked for on both brokers.
KEYS = ["k4", "k5", "k5b", "k7", "k8", "k9", "k10", "ok", "hk", "R1"]


def batch_body(messages):
    """A batch body (``MessageDecoder#encodeMessages``) of ``(body, properties bytes)`` pairs."""
    return b"".join(struct.pack(">iiiii", 22 + len(body) + len(props), 0, 0, 0, len(body))
                    + body + struct.pack(">h", len(props)) + props for body, props in messages)


def one_message(props):
    return batch_body([(b"body", props)])


#: Batches both refuse: (what, header properties, body, sys flag, whether the remarks match).
REFUSED = [
    ("the batch's delay level", "WAIT\x01true\x02DELAY\x012", one_message(b"A\x01b"), 0, True),
    ("a DELAY that is not an int", "DELAY\x01x", one_message(b""), 0, False),
    ("batch properties over 32767 bytes", "P\x01" + "x" * 33000, one_message(b""), 0, False),
    ("a body over maxMessageSize", "WAIT\x01true",
     batch_body([(bytes(MAX_MESSAGE_SIZE - 22 - 3), b"A\x01b"), (b"", b"")]), 0, True),
    ("no body", "WAIT\x01true", b"", 0, False),
    ("a transaction flag", "WAIT\x01true", one_message(b"A\x01b"), msg.TRANSACTION_PREPARED_TYPE,
     True),
]


def batch_header(topic, properties, sys_flag=0):
    return h.SendMessageRequestHeaderV2(
        producer_group="RawBatches", topic=topic, default_topic="TBW102",
        default_topic_queue_nums=4, queue_id=0, sys_flag=sys_flag, born_timestamp=BORN, flag=0,
        properties=properties, reconsume_times=0, unit_mode=False, batch=True).to_ext_fields()


class Pair:
    """A Java broker and ours, one cluster, one NameServer (ours)."""

    def __init__(self, workdir):
        self.namesrv, self.namesrv_addr = start_nameserver(workdir)
        self.peers = JavaPeers(workdir)
        java_port = broker_port()
        self.java = self.peers.broker("java", brokerName="broker-java", listenPort=java_port,
                                      namesrvAddr=self.namesrv_addr, **STORE)
        self.java_root = workdir / "store-java"
        ours_dir = workdir / "ours"
        ours_dir.mkdir()
        self.ours, ours_addr = start_broker(ours_dir, self.namesrv_addr, brokerName="broker-ours",
                                            **STORE)
        self.ours_root = ours_dir / "store"
        self.addrs = {"java": "127.0.0.1:%d" % java_port, "ours": ours_addr}

    def create_topic(self, topic):
        header = h.CreateTopicRequestHeader(
            topic=topic, default_topic="TBW102", read_queue_nums=1, write_queue_nums=1, perm=6,
            topic_filter_type="SINGLE_TAG", topic_sys_flag=0, order=False)
        for addr in self.addrs.values():
            answer = call(addr, RC.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
            assert answer.code == R.SUCCESS, answer.remark

    def routed_brokers(self, topic):
        answer = call(self.namesrv_addr, RC.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        if answer.code != R.SUCCESS:
            return set()
        return {b.broker_name for b in TopicRouteData.from_json(answer.body).broker_datas}

    def send_to_both(self, ext_fields, body):
        """The answers of the Java broker and ours to one request."""
        answers = []
        for addr in self.addrs.values():
            client = SyncClient(addr)
            try:
                answers.append(client.call(RC.SEND_BATCH_MESSAGE, dict(ext_fields), body))
            finally:
                client.close()
        return answers

    def query_count(self, name, topic, key):
        answer = call(self.addrs[name], RC.QUERY_MESSAGE, {
            "topic": topic, "key": key, "maxNum": "64", "beginTimestamp": "0",
            "endTimestamp": str(2 ** 62)})
        if answer.code == R.QUERY_NOT_FOUND:
            return 0
        assert answer.code == R.SUCCESS, answer.remark
        return len(list(msg.iter_records(answer.body)))

    def stop(self):
        self.peers.stop_all()
        self.ours.kill()
        self.namesrv.stop()


@pytest.fixture
def pair(tmp_path):
    pair = Pair(tmp_path)
    yield pair
    pair.stop()


#: What may differ between the two brokers' records (IPv4 hosts): PHYSICALOFFSET, then
#: BORNTIMESTAMP, BORNHOST, STORETIMESTAMP and STOREHOSTADDRESS.
_VARYING = (slice(28, 36), slice(40, 72))


def masked(raw):
    data = bytearray(raw)
    assert not msg.parse_record_declared(raw).sys_flag & (
        msg.BORNHOST_V6_FLAG | msg.STOREHOSTADDRESS_V6_FLAG)
    for part in _VARYING:
        data[part] = bytes(part.stop - part.start)
    return bytes(data)


def queue_bytes(root, topic):
    """Each record of queue 0 of ``topic``, as stored, after a store check without problems."""
    check = check_store(root, STORE["mappedFileSizeCommitLog"], STORE["mappedFileSizeConsumeQueue"])
    assert check.problems == []
    log = (root / "commitlog" / ("%020d" % 0)).read_bytes()
    return [log[r.commit_log_offset:r.commit_log_offset + r.store_size]
            for r in check.queue_records(topic, 0)]


def test_batches_are_stored_as_the_java_broker_stores_them(pair, tmp_path):
    for topic in (FROM_JAVA, FROM_RAW):
        pair.create_topic(topic)
    wait_until(lambda: pair.routed_brokers(FROM_JAVA) == {"broker-java", "broker-ours"}, 60)

    result = pair.peers.run_client("rmqproto.peers.SendBatches", pair.namesrv_addr, FROM_JAVA,
                                   "broker-java", "broker-ours")
    assert result.returncode == 0, result.stdout + result.stderr
    sent = [line.split()[1:] for line in result.stdout.splitlines() if line.startswith("SENT ")]
    assert [offset for _, _, offset in sent] == ["0", "0", "6", "6", "9", "9"]

    batches = [(properties, batch_body([(b"raw-%d-%d" % (i, j), props)
                                        for j, props in enumerate(messages)]))
               for i, (properties, messages) in enumerate(STORED)]
    exact = b"K\x01v"  # a batch body of exactly maxMessageSize: stored
    batches.append(("WAIT\x01true", batch_body([(bytes(MAX_MESSAGE_SIZE - 22 - len(exact)),
                                                 exact)])))
    for properties, body in batches:
        java, ours = pair.send_to_both(batch_header(FROM_RAW, properties), body)
        assert java.code == R.SUCCESS, java.remark
        assert (ours.code, ours.remark) == (java.code, java.remark), properties
        assert ours.ext_fields["queueOffset"] == java.ext_fields["queueOffset"]
        assert len(ours.ext_fields["msgId"].split(",")) == len(java.ext_fields["msgId"].split(","))

    for what, properties, body, sys_flag, same_remark in REFUSED:
        java, ours = pair.send_to_both(batch_header(FROM_RAW, properties, sys_flag), body)
        assert java.code != R.SUCCESS, what
        assert ours.code == java.code, (what, java.remark, ours.remark)
        if same_remark:
            assert ours.remark == java.remark, what

    # the index holds the keys Java's dispatch reads from the stored strings
    expected = {key: pair.query_count("java", FROM_RAW, key) for key in KEYS}
    assert expected["hk"] == 2 and expected["ok"] == 0  # the header's KEYS won
    wait_until(lambda: {key: pair.query_count("ours", FROM_RAW, key) for key in KEYS} == expected,
               timeout=10)
    for key in ("key-1", "shared-key", "nowait-2"):
        assert pair.query_count("ours", FROM_JAVA, key) == pair.query_count("java", FROM_JAVA, key)

    pair.java.stop()
    pair.ours.stop()
    for topic, count in ((FROM_JAVA, 13), (FROM_RAW, sum(len(m) for _, m in STORED) + 1)):
        java = queue_bytes(pair.java_root, topic)
        ours = queue_bytes(pair.ours_root, topic)
        assert len(java) == len(ours) == count
        for index, (java_raw, our_raw) in enumerate(zip(java, ours)):
            assert masked(our_raw) == masked(java_raw), (
                topic, index, msg.MESSAGE_RECORD.parse(java_raw).properties,
                msg.MESSAGE_RECORD.parse(our_raw).properties)
    # a Java client's batch message stores WAIT twice: its own, then the batch's
    first = msg.MESSAGE_RECORD.parse(queue_bytes(pair.ours_root, FROM_JAVA)[0]).properties
    assert first.count(b"WAIT\x01true") == 2 and first.endswith(b"\x02CLUSTER\x01DefaultCluster\x02WAIT\x01true")
