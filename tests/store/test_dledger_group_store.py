"""Three ``DLedgerMessageStore`` members on loopback: every member's consume queues hold the
committed entries only, their data files agree byte for byte, an append without a quorum
is OS_PAGECACHE_BUSY and stays out of the queues until it commits (or a new leader drops
it), and a new leader goes on with the right queue offsets."""

from twisted.internet import defer

from dledger_support import Group, pull_bodies, put, record
from rmqproto.store.results import PutMessageStatus
from support.realreactor import poll_until, run_reactor


def same_data(stores):
    """Whether the members' data files agree up to the lowest committed position."""
    end = min(s.commit_log.max_offset for s in stores)
    return len({b"".join(bytes(f.mm[:min(f.wrote_position, end - f.file_from_offset)])
                         for f in s.commit_log.ledger.data.files if f.file_from_offset < end)
                for s in stores}) == 1


def settled(group):
    """One leader whose whole log is committed, and every member's queue as long as its."""
    leader = group.leader()
    return (leader is not None and leader.get_max_phy_offset() == leader.commit_log.wrote_offset
            and len({s.get_max_offset_in_queue("TopicA", 0) for s in group.stores.values()}) == 1)


def test_a_group_of_three_dispatches_committed_entries_only(tmp_path):
    @defer.inlineCallbacks
    def scenario(reactor):
        group = Group(reactor, tmp_path)
        group.open_all()
        try:
            leader = yield group.wait_for_leader()
            followers = [m for m, s in group.stores.items() if s is not leader]
            bodies = []
            for k in range(10):
                result = yield put(leader, record(body=b"single%d" % k))
                assert result.status is PutMessageStatus.PUT_OK
                bodies.append(b"single%d" % k)
            batch = [b"batch%d" % k for k in range(10)]
            result = yield put(leader, *[record(body=b) for b in batch])
            assert result.status is PutMessageStatus.PUT_OK
            bodies += batch
            yield poll_until(reactor, lambda: all(
                s.get_max_offset_in_queue("TopicA", 0) == 20 for s in group.stores.values()))
            for store in group.stores.values():
                assert pull_bodies(store, 0, 64) == bodies
            assert same_data(group.stores.values())

            # no quorum: the entry is written, not committed, not dispatched
            for member in followers:
                yield group.close(member)
            result = yield put(leader, record(body=b"alone"))
            assert result.status is PutMessageStatus.OS_PAGECACHE_BUSY
            assert result.append_result.logics_offset == 20
            assert leader.get_max_phy_offset() < leader.commit_log.wrote_offset
            assert leader.get_max_offset_in_queue("TopicA", 0) == 20
            assert leader.look_message_by_offset(result.append_result.wrote_offset) is None

            # the followers come back. "alone" was never acknowledged: this leader commits
            # it at queue offset 20, or a follower whose log lacks it wins an election first
            # and it is dropped; either way "next" follows what was committed
            for member in followers:
                group.open(member)
            yield poll_until(reactor, lambda: settled(group), timeout=20)
            current = group.leader()
            if current is not leader:
                current.recover_topic_queue_table()
            result = yield put(current, record(body=b"next"))
            assert result.status is PutMessageStatus.PUT_OK
            bodies += [b"alone", b"next"][21 - result.append_result.logics_offset:]
            yield poll_until(reactor, lambda: all(
                s.get_max_offset_in_queue("TopicA", 0) == len(bodies)
                for s in group.stores.values()))

            # the leader goes: the new one rebuilds its queue offsets and goes on
            old = next(m for m, s in group.stores.items() if s.dledger.is_leader)
            yield group.close(old)
            leader = yield group.wait_for_leader()
            leader.recover_topic_queue_table()
            result = yield put(leader, record(body=b"new leader"))
            assert result.status is PutMessageStatus.PUT_OK
            assert result.append_result.logics_offset == len(bodies)
            bodies.append(b"new leader")
            yield poll_until(reactor, lambda: all(
                s.get_max_offset_in_queue("TopicA", 0) == len(bodies)
                for s in group.stores.values()))
            for store in group.stores.values():
                assert pull_bodies(store, 0, 64) == bodies
            assert same_data(group.stores.values())
        finally:
            yield group.close_all()

    run_reactor(scenario, timeout=50)
