"""A full disk under our running brokers (docs/store.md, "Disk full and read-only
directories"; docs/security.md, "Disk full and read-only stores").

The store lives on a 64 MiB tmpfs that a ballast file fills but for room for two
commit-log segments; the sends go on until the third segment finds no room. Without the
blocks reserved when a segment is created, the write into its mapping would fault
(SIGBUS) and the process would die. The broker must survive, refuse the sends it stores
nothing of (the disk-full status), serve reads, take sends again once the ballast is gone,
and every message answered SEND_OK must be in the store; on a slave, the replication must
stop without a fault and catch up once there is room.
"""

import signal

from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from support.hacheck import compare_commit_logs
from support.hapair import runtime_info
from support.mounts import fill, tmpfs
from support.processes import free_port
from support.storefaults import CQ_FILE_SIZE, Processes, check_answers
from support.syncclient import call, wait_until

DISK = 64 << 20
SEGMENT = 16 << 20
BODY = 256 << 10
#: The ballast leaves a little more than two segments (and the small files) of room.
ROOM = 2 * SEGMENT + (2 << 20)


def test_a_full_disk_refuses_sends_keeps_reads_and_recovers(tmp_path):
    with tmpfs(tmp_path / "disk", DISK) as disk, Processes(tmp_path) as run:
        fill(disk / "ballast", leave=ROOM)
        broker, address = run.broker("rmq-master", disk / "store",
                                     mappedFileSizeCommitLog=SEGMENT)
        sender = run.sender(address, "DiskTopic")
        while len(sender.refused) < 5:
            sender.send(BODY)
            assert len(sender.acked) < 3 * SEGMENT // BODY, "the disk never filled"
        assert broker.poll() is None, broker.output()[-3000:]
        assert len(sender.acked) >= 2 * SEGMENT // BODY - 2
        for code, remark in sender.refused.values():
            assert code == R.SERVICE_NOT_AVAILABLE and "disk is full" in remark
        # reads go on: the last message acknowledged, by offset and from its queue
        last = max(sender.acked.values())
        assert call(address, RC.VIEW_MESSAGE_BY_ID, {"offset": str(last)}).code == R.SUCCESS
        offset = call(address, RC.GET_MAX_OFFSET, {"topic": "DiskTopic", "queueId": "0"})
        assert int(offset.ext_fields["offset"]) == len(sender.acked)
        # room again: the next disk check (every 10 s) lets the sends in
        (disk / "ballast").unlink()
        wait_until(lambda: sender.send(BODY) == R.SUCCESS, timeout=30, interval=1)
        for _ in range(5):
            assert sender.send(BODY) == R.SUCCESS
        assert "Traceback" not in broker.output()
        assert broker.stop() in (0, -signal.SIGTERM)
        check_answers(disk / "store", SEGMENT, [sender])


def test_a_slave_without_room_stops_replicating_and_catches_up(tmp_path):
    with tmpfs(tmp_path / "disk", DISK) as disk, Processes(tmp_path) as run:
        fill(disk / "ballast", leave=ROOM)
        master, master_addr = run.broker("rmq-master", tmp_path / "store",
                                         brokerRole="ASYNC_MASTER",
                                         mappedFileSizeCommitLog=SEGMENT)
        slave, slave_addr = run.broker("rmq-slave", disk / "store", brokerRole="SLAVE",
                                       brokerId=1, mappedFileSizeCommitLog=SEGMENT)
        wait_until(lambda: runtime_info(master_addr).get("inSyncSlaveNums") == "1",
                   timeout=60)
        sender = run.sender(master_addr, "DiskTopic")
        while len(sender.acked) < 2.5 * SEGMENT // BODY:
            assert sender.send(BODY) == R.SUCCESS
        master_end = int(runtime_info(master_addr)["commitLogMaxOffset"])

        def slave_offset():
            return int(runtime_info(slave_addr)["commitLogMaxOffset"])

        wait_until(lambda: slave_offset() == 2 * SEGMENT, timeout=60)  # no room for more
        assert slave.poll() is None, slave.output()[-3000:]
        assert "commit-log segment for replicated bytes" in slave.output()
        (disk / "ballast").unlink()
        wait_until(lambda: slave_offset() == master_end, timeout=60)
        assert compare_commit_logs(tmp_path / "store" / "commitlog",
                                   disk / "store" / "commitlog") == []
        assert slave.stop() in (0, -signal.SIGTERM)
        assert master.stop() in (0, -signal.SIGTERM)
        check_answers(tmp_path / "store", SEGMENT, [sender])


def test_rmq_local_keeps_its_three_services_on_a_full_disk(tmp_path):
    """``twistd rmq-local`` (NameServer, SYNC_MASTER and slave in one process) with both
    stores on a tmpfs that has room for their first segments only (and never for an index
    file of the default size). Sends that the master stored but the slave could not take
    (SLAVE_NOT_AVAILABLE, FLUSH_SLAVE_TIMEOUT) say so, and are in the store."""
    with tmpfs(tmp_path / "disk", 2 * DISK) as disk, Processes(tmp_path) as run:
        fill(disk / "ballast", leave=ROOM)
        base = free_port(14)  # the master's ports, the slave's (+10, +11), the NameServer's
        master_addr, slave_addr = "127.0.0.1:%d" % (base + 2), "127.0.0.1:%d" % (base + 12)
        namesrv_addr = "127.0.0.1:%d" % (base + 6)
        conf = tmp_path / "broker.conf"
        conf.write_text("mappedFileSizeCommitLog=%d\nmappedFileSizeConsumeQueue=%d\n"
                        "cleanFileForciblyEnable=false\n" % (SEGMENT, CQ_FILE_SIZE))
        local = run.daemon("rmq-local", "--dataDir", disk / "data", "-c", conf,
                           "--listenPort=%d" % (base + 2), "--namesrvPort=%d" % (base + 6),
                           "--metricsPort=0", "--consolePort=0", port=base + 6)
        wait_until(lambda: runtime_info(master_addr).get("inSyncSlaveNums") == "1",
                   timeout=60)
        sender = run.sender(master_addr, "DiskTopic")
        while len(sender.refused) < 3:
            sender.send(BODY)
            assert len(sender.acked) < 2 * SEGMENT // BODY, "the disk never filled"
        assert local.poll() is None, local.output()[-3000:]
        for code, _ in sender.refused.values():
            assert code == R.SERVICE_NOT_AVAILABLE
        for address in (namesrv_addr, master_addr, slave_addr):  # all three still answer
            assert call(address, RC.GET_ALL_TOPIC_CONFIG
                        if address != namesrv_addr else RC.GET_BROKER_CLUSTER_INFO).code \
                == R.SUCCESS
        assert "keys are not indexed meanwhile" in local.output()  # 420 MB index files
        (disk / "ballast").unlink()
        wait_until(lambda: sender.send(BODY) == R.SUCCESS, timeout=30, interval=1)
        assert local.stop() in (0, -signal.SIGTERM)
        check_answers(disk / "data" / "master", SEGMENT, [sender])
        assert compare_commit_logs(disk / "data" / "master" / "commitlog",
                                   disk / "data" / "slave" / "commitlog") == []
