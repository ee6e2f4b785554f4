"""kill -9 in the middle of a send storm against ``twistd rmq-master``.

``SendStorm.java`` (Java client 4.9.8, eight threads of sync sends, no retries) records every
message acknowledged SEND_OK; the broker is killed with SIGKILL mid-stream and started again
on the same store. Then:

* SYNC_FLUSH: every acknowledged message is in the commit log at its offset msgId, with its
  queue, queue offset, key, tag and body; VIEW_MESSAGE_BY_ID and mqadmin ``queryMsgById``
  find it and a Java consumer reads it; the store is consistent (``support.storecheck``:
  consume queues = commit log) and the broker takes a new storm.
* ASYNC_FLUSH: before the restart the last record is torn (all but its head zeroed), and so are
  the consume-queue units of the records stored after the checkpoint's consume-queue time
  (their pages were not written back): the torn record is not served (no unit, no
  VIEW_MESSAGE_BY_ID, no key match), every acknowledged message before it is, the lost units
  are rebuilt from the commit log (each key indexed once), and the store is consistent.
"""

import re

import pytest
from twisted.internet.task import Clock

from rmqproto.codec import consumequeue as cq
from rmqproto.codec.checkpoint import decode_checkpoint, encode_checkpoint
from rmqproto.codec import message as msg
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.message import MessageRecord
from rmqproto.store.defaultstore import DefaultMessageStore
from support.interop import java_available
from support.storecheck import check_store
from support.syncclient import SyncClient, call, wait_until
from brokerkit import DaemonCluster

TOPIC = "StormTopic"
#: small files: the storm rolls commit-log, consume-queue and index files
STORE = dict(mappedFileSizeCommitLog=256 * 1024, mappedFileSizeConsumeQueue=6000,
             maxHashSlotNum=1000, maxIndexNum=4000)
QUEUES = 4  # the producer's defaultTopicQueueNums: the topic is auto-created with 4 queues
THREADS = 8
ACKS_BEFORE_KILL = 1500
_ACK = re.compile(r"^OK (\S+) ([0-9A-F]{32}) (\d+) (\d+) (storm-\d+-(\d+))$")

java = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")


def storm_body(key, i):
    """``SendStorm.stormBody``."""
    return ((key + " ") * (1 + i % 40)).encode()


class Ack:
    """One message the storm saw acknowledged SEND_OK."""

    def __init__(self, match):
        self.msg_id, offset_msg_id, queue_id, queue_offset, self.key, i = match.groups()
        self.offset = msg.decode_message_id(offset_msg_id)[1]
        self.offset_msg_id = offset_msg_id
        self.queue_id, self.queue_offset = int(queue_id), int(queue_offset)
        self.body = storm_body(self.key, int(i))

    def matches(self, record):
        return (record.uniq_key, record.topic, record.queue_id, record.queue_offset,
                record.keys, record.body) == (self.msg_id, TOPIC, self.queue_id,
                                              self.queue_offset, [self.key], self.body)


class Storm:
    """A running ``SendStorm`` against the cluster's NameServer."""

    def __init__(self, cluster, name, seconds):
        self.process = cluster.peers.start(
            name, cluster.peers.client_cp, "rmqproto.peers.SendStorm", cluster.namesrv_addr, TOPIC,
            str(seconds), str(THREADS))

    def acks(self):
        return [Ack(m) for m in map(_ACK.match, self.process.output().splitlines()) if m]

    def failures(self):
        return [line for line in self.process.output().splitlines()
                if line.startswith(("FAILED", "NOT_OK"))]

    def wait(self, timeout=120):
        self.process.popen.wait(timeout=timeout)
        assert "DONE" in self.process.output()


class CrashCluster(DaemonCluster):
    def __init__(self, workdir, flush_disk_type):
        super().__init__(workdir, flushDiskType=flush_disk_type, **STORE)
        self.root = workdir / "store"
        self.restarts = 0

    def storm_and_kill(self):
        """A storm; kill -9 the broker once ACKS_BEFORE_KILL sends are acknowledged; the acks."""
        storm = Storm(self, "storm", 60)
        wait_until(lambda: len(storm.acks()) >= ACKS_BEFORE_KILL, timeout=90, interval=0.05)
        self.broker.kill()
        wait_until(lambda: storm.failures(), timeout=30)  # the producer saw the broker go
        storm.process.stop()
        assert (self.root / "abort").exists()
        return storm.acks()

    def restart(self):
        """Start again on the same store and port (the last run's log kept aside)."""
        self.restarts += 1
        log = self.broker.log_path
        log.rename(log.with_name("rmq-master-%d.log" % self.restarts))
        self.start_broker()

    def check_on_disk(self):
        """The store checked on disk (the broker killed, idle or stopped)."""
        return check_store(self.root, STORE["mappedFileSizeCommitLog"],
                           STORE["mappedFileSizeConsumeQueue"])

    def check(self):
        """:meth:`check_on_disk`, which must find no problem."""
        check = self.check_on_disk()
        assert check.problems == []
        return check

    def runtime_max_phy_offset(self):
        answer = call(self.broker_addr, RC.GET_BROKER_RUNTIME_INFO)
        return int(re.search(rb'"commitLogMaxOffset":"(\d+)"', answer.body).group(1))

    def viewed(self, acks):
        """VIEW_MESSAGE_BY_ID at each ack's offset: ``{offset: record or None}``."""
        client = SyncClient(self.broker_addr)
        try:
            found = {}
            for ack in acks:
                answer = client.call(RC.VIEW_MESSAGE_BY_ID, {"offset": str(ack.offset)})
                found[ack.offset] = (msg.decode_record(answer.body) if answer.code == R.SUCCESS
                                     else None)
            return found
        finally:
            client.close()

    def consumed(self, group):
        """Everything in TOPIC read by the Java lite pull consumer: msgIds."""
        total = sum(int(call(self.broker_addr, RC.GET_MAX_OFFSET,
                             {"topic": TOPIC, "queueId": str(q)}).ext_fields["offset"])
                    for q in range(QUEUES))
        result = self.peers.run_client("rmqproto.peers.ConsumeAll", self.namesrv_addr, "litepull",
                                       group, TOPIC, total, 90, "linger=1000")
        assert result.returncode == 0, result.stderr
        ids = re.findall(r'"msgId":"([0-9A-F]+)"', result.stdout)
        assert len(ids) == total == len(set(ids))
        return set(ids)

    def takes_a_new_storm(self):
        """A short storm after the restart: every send acknowledged, all stored after a stop."""
        storm = Storm(self, "storm-after", 3)
        storm.wait()
        acks = storm.acks()
        assert acks and storm.failures() == []
        self.broker.stop()
        check = self.check()
        assert all(ack.matches(check.records[ack.offset]) for ack in acks)


@pytest.fixture
def start_cluster(tmp_path):
    """``start_cluster(flushDiskType)``: a :class:`CrashCluster`, stopped at the end."""
    clusters = []

    def start(flush_disk_type):
        clusters.append(CrashCluster(tmp_path, flush_disk_type))
        return clusters[-1]
    yield start
    for cluster in clusters:
        cluster.stop()


def overwrite(directory, file_size, position, data):
    """Overwrite the bytes at absolute ``position`` of the segment files in ``directory``
    (named by their start offsets, ``file_size`` bytes each); within one file."""
    with open(directory / ("%020d" % (position - position % file_size)), "r+b") as fh:
        fh.seek(position % file_size)
        fh.write(data)


def write_commit_log(root, offset, data):
    overwrite(root / "commitlog", STORE["mappedFileSizeCommitLog"], offset, data)


#: A torn write keeps this much of a record's head (TOTALSIZE, MAGICCODE, BODYCRC, QUEUEID,
#: FLAG) and zeros the rest. A cut anywhere in the properties would leave a record that the
#: size checks and the body CRC accept, Java's as well as ours: about one storm record in
#: twenty when the cut was at half the record, which failed these tests now and then.
TORN_HEAD = 20


def torn(data):
    """``data`` (a record's bytes) as a write cut short leaves it on a fresh file."""
    return data[:TORN_HEAD] + bytes(len(data) - TORN_HEAD)


def drop_unflushed_units(root, check):
    """Zero the TOPIC units of records stored after the checkpoint's consume-queue time, as
    if their pages had not been written back; how many.

    Any checkpoint write (an index flush's too) takes the newest dispatch's time, so the
    killed broker may have left none after it: the checkpoint is then taken back to just
    before the last record's time, as if its own page had not been written back either."""
    checkpoint = decode_checkpoint((root / "checkpoint").read_bytes())
    last = max(record.store_timestamp for record in check.records.values())
    if checkpoint.logics_msg_timestamp >= last:
        checkpoint = checkpoint._replace(logics_msg_timestamp=last - 1)
        (root / "checkpoint").write_bytes(encode_checkpoint(checkpoint))
    logics = checkpoint.logics_msg_timestamp
    dropped = 0
    for queue_id in range(QUEUES):
        units = check.queues[TOPIC, queue_id]
        first = check.first_offsets[TOPIC, queue_id]
        keep = len(units)
        while keep and check.records[units[keep - 1].commit_log_offset].store_timestamp > logics:
            keep -= 1
        for logical in range(first + keep, first + len(units)):
            overwrite(root / "consumequeue" / TOPIC / str(queue_id), STORE["mappedFileSizeConsumeQueue"],
                      logical * cq.CQ_STORE_UNIT_SIZE, bytes(cq.CQ_STORE_UNIT_SIZE))
        dropped += len(units) - keep
    return dropped


def query_by_key(cluster, key):
    """QUERY_MESSAGE for ``key`` in TOPIC: the records found."""
    answer = call(cluster.broker_addr, RC.QUERY_MESSAGE, {
        "topic": TOPIC, "key": key, "maxNum": "32", "beginTimestamp": "0",
        "endTimestamp": str(2 ** 62)})
    if answer.code == R.QUERY_NOT_FOUND:
        return []
    assert answer.code == R.SUCCESS, answer.remark
    return list(msg.iter_records(answer.body))


def unreadable(acks, records):
    """The keys of ``acks`` not found intact in ``records`` (``{offset: record or None}``)."""
    return [a.key for a in acks if records.get(a.offset) is None or not a.matches(records[a.offset])]


@java
def test_sync_flush_acknowledged_messages_survive_kill_9(start_cluster):
    cluster = start_cluster("SYNC_FLUSH")
    acks = cluster.storm_and_kill()
    assert len(acks) >= ACKS_BEFORE_KILL
    crashed = cluster.check_on_disk()
    # a write cut short after the last record: a torn copy of it
    last = crashed.records[max(crashed.records)]
    room = STORE["mappedFileSizeCommitLog"] - crashed.log_end % STORE["mappedFileSizeCommitLog"]
    if last.store_size < room:
        write_commit_log(cluster.root, crashed.log_end, torn(msg.encode_record(last)))
    cluster.restart()
    check = cluster.check()
    assert check.log_end == crashed.log_end == cluster.runtime_max_phy_offset()
    assert len(list((cluster.root / "commitlog").iterdir())) >= 2  # the storm rolled segments
    assert unreadable(acks, check.records) == []
    assert unreadable(acks, cluster.viewed(acks)) == []
    out = cluster.peers.mqadmin("queryMsgById", "-i", acks[-1].offset_msg_id,
                                "-n", cluster.namesrv_addr)
    assert re.search(r"Keys:\s+\[%s\]" % acks[-1].key, out), out
    assert {a.msg_id for a in acks} <= cluster.consumed("StormReaders")
    cluster.takes_a_new_storm()


@java
def test_async_flush_store_is_consistent_after_kill_9_and_a_torn_record(start_cluster):
    cluster = start_cluster("ASYNC_FLUSH")
    acks = cluster.storm_and_kill()
    crashed = cluster.check_on_disk()
    torn_offset = max(crashed.records)
    torn_record = crashed.records[torn_offset]
    write_commit_log(cluster.root, torn_offset, torn(msg.encode_record(torn_record)))
    assert drop_unflushed_units(cluster.root, crashed) > 0
    cluster.restart()
    check = cluster.check()
    assert check.log_end == torn_offset, (
        "the log ends at %d after the restart, not at the torn record (%d): found there %r, "
        "torn %r" % (check.log_end, torn_offset, check.records.get(torn_offset), torn_record))
    assert cluster.runtime_max_phy_offset() == torn_offset
    assert torn_offset not in check.records
    kept = [a for a in acks if a.offset < torn_offset]
    assert len(kept) >= len(acks) - 1  # a kill -9 loses no page: only the torn record is gone
    assert unreadable(kept, check.records) == []
    viewed = cluster.viewed(acks)
    assert unreadable(kept, viewed) == []
    assert [viewed[a.offset] for a in acks if a.offset >= torn_offset] == [None] * (len(acks) - len(kept))
    assert query_by_key(cluster, torn_record.keys[0]) == []
    # re-dispatched by the recovery, indexed once
    assert [r.uniq_key for r in query_by_key(cluster, kept[-1].key)] == [kept[-1].msg_id]
    consumed = cluster.consumed("StormReaders")
    assert {a.msg_id for a in kept} <= consumed and torn_record.uniq_key not in consumed
    cluster.takes_a_new_storm()


# ---------------------------------------------------------------- the checker itself

def written_store(root):
    """A store written by DefaultMessageStore on a fake clock: rolled files, a delayed
    message, no tags, a batch; shut down."""
    clock = Clock()
    clock.advance(1_700_000_000)
    store = DefaultMessageStore(dict(storePathRootDir=str(root), mappedFileSizeCommitLog=8 * 1024,
                                     mappedFileSizeConsumeQueue=5 * 20, maxHashSlotNum=64,
                                     maxIndexNum=400), clock)
    store.load()
    store.start()
    for i in range(60):
        props = {"UNIQ_KEY": "U%04d" % i, "KEYS": "k%d" % i}
        if i % 3:
            props["TAGS"] = "Tag%d" % (i % 3)
        if i == 30:
            props["DELAY"] = "2"
        store.put_message(MessageRecord("CheckTopic", b"x" * (100 + i * 7), props, queue_id=i % 2,
                                        store_host=("127.0.0.1", 10911)))
    store.put_messages([MessageRecord("CheckBatch", b"b%d" % i, {"UNIQ_KEY": "B%d" % i},
                                      queue_id=0, store_host=("127.0.0.1", 10911))
                        for i in range(5)])
    store.shutdown()
    return dict(commit_log_file_size=8 * 1024, cq_file_size=5 * 20)


def test_store_check_passes_a_store_we_wrote(tmp_path):
    sizes = written_store(tmp_path)
    check = check_store(tmp_path, **sizes)
    assert check.problems == [] and check.stop == "empty"
    assert len(check.records) == 65 and len(list((tmp_path / "commitlog").iterdir())) >= 2
    assert [r.uniq_key for r in check.queue_records("CheckBatch", 0)] == ["B%d" % i for i in range(5)]
    delayed = check.queue_records("SCHEDULE_TOPIC_XXXX", 1)
    assert [r.properties["REAL_TOPIC"] for r in delayed] == ["CheckTopic"]
    assert len(check.queue_records("CheckTopic", 0)) + len(check.queue_records("CheckTopic", 1)) == 59


@pytest.mark.parametrize("change, problems_wanted", [
    (lambda u: u._replace(tags_code=u.tags_code + 1), ["unit 1 is"]),
    (lambda u: u._replace(commit_log_offset=u.commit_log_offset + 1),
     ["where no record starts", "is not in its consume queue"]),
    (lambda u: u._replace(commit_log_offset=10 ** 9),
     ["where no record starts", "is not in its consume queue"]),
])
def test_store_check_finds_a_unit_that_does_not_match(tmp_path, change, problems_wanted):
    sizes = written_store(tmp_path)
    unit = check_store(tmp_path, **sizes).queues["CheckTopic", 0][1]
    overwrite(tmp_path / "consumequeue" / "CheckTopic" / "0", sizes["cq_file_size"],
              cq.CQ_STORE_UNIT_SIZE, cq.encode_unit(change(unit)))
    problems = check_store(tmp_path, **sizes).problems
    assert len(problems) == len(problems_wanted)
    assert all(any(wanted in p for p in problems) for wanted in problems_wanted), problems


def test_store_check_finds_stale_units_and_data_past_the_log_end(tmp_path):
    sizes = written_store(tmp_path)
    queue = tmp_path / "consumequeue" / "CheckTopic" / "0"
    used = len(check_store(tmp_path, **sizes).queues["CheckTopic", 0])  # 29: its last file has room
    overwrite(queue, sizes["cq_file_size"], used * cq.CQ_STORE_UNIT_SIZE,
              cq.encode_unit((-1, 0, 0)))  # an invalid unit, not zero
    problems = check_store(tmp_path, **sizes).problems
    assert problems == ["consumequeue/CheckTopic/0: non-zero bytes after unit 29"]
    # the first record's header zeroed: the log ends at 0, before the data of later segments
    overwrite(tmp_path / "commitlog", sizes["commit_log_file_size"], 0, bytes(8))
    problems = check_store(tmp_path, **sizes).problems
    assert any("the commit log ends at 0 (empty) but segment" in p for p in problems), problems
