"""``twistd -n rmq-dledger`` groups as separate processes: a leader is elected, appends made
over DLedger's RPC are replicated, a killed leader is replaced, and every member's data and
index files end the same bytes up to the committed entry."""

import pytest

from support.dledgergroup import Group
from support.syncclient import wait_until

SMALL = dict(mappedFileSizeForEntryData=64 * 1024, mappedFileSizeForEntryIndex=32 * 1024,
             heartBeatTimeIntervalMs=300, maxHeartBeatLeak=3, checkPointInterval=200)


@pytest.fixture
def group(tmp_path):
    group = Group(tmp_path, **SMALL)
    group.start_all()
    yield group
    group.stop()


def test_a_group_elects_replicates_and_survives_its_leader(group):
    first = group.wait_leader()
    indexes = [group.append_ok(b"before %d" % i) for i in range(40)]
    assert indexes == list(range(40))
    group.kill(first)
    survivors = [m for m in group.ids if m != first]
    second = group.wait_leader(survivors)
    assert second != first
    indexes += [group.append_ok(b"after %d" % i) for i in range(40)]
    assert indexes == list(range(80))
    group.start(first)  # the old leader comes back as a follower and catches up
    group.wait_leader()
    last = group.append_ok(b"last")
    wait_until(lambda: all((group.committed(m) or -1) >= last for m in group.ids), timeout=30)
    group.stop()
    assert group.log_differences(last) == []


@pytest.mark.java
@pytest.mark.parametrize("java", [("n2",), ("n1", "n2")], ids=["one-java", "two-java"])
def test_mixed_groups_with_java_dledger(tmp_path, java):
    """Groups of three with one and with two real DLedger 0.3.1.2 members: whichever side
    leads, appends made with DLedger's Java client and with ours are replicated, and go on
    after the leader is killed; the files then agree byte for byte up to the committed entry."""
    group = Group(tmp_path, java=java, **SMALL)
    try:
        group.start_all()
        group.wait_leader()
        ours = [group.append_ok(b"ours %d" % i) for i in range(20)]
        theirs = group.java_append("java", 20)
        assert len(theirs) == 20 and sorted(ours + theirs) == list(range(40))
        first = group.wait_leader()
        group.kill(first)
        survivors = [m for m in group.ids if m != first]
        group.wait_leader(survivors)
        more = [group.append_ok(b"after %d" % i) for i in range(10)] + group.java_append("after", 10)
        assert sorted(more) == list(range(40, 60))
        group.start(first)
        group.wait_leader()
        last = group.append_ok(b"last")
        wait_until(lambda: all((group.committed(m) or -1) >= last for m in group.ids), timeout=30)
    finally:
        group.stop()
    assert group.log_differences(last) == []


def test_bad_input_from_a_peer_gets_dledger_codes_and_leaves_the_group_alone(group):
    from rmqproto.codec.dledger_rpc import (
        DLedgerRequestCode as Code, DLedgerResponseCode as Status, HeartBeatRequest,
        HeartBeatResponse, VoteRequest, VoteResponse,
    )
    from support.dledgergroup import rpc
    from support.syncclient import call

    leader = group.wait_leader()
    group.append_ok(b"first")
    follower = next(m for m in group.ids if m != leader)
    addr = group.addr(follower)
    wrong_group = rpc(addr, Code.HEART_BEAT, HeartBeatRequest(
        group="other", remote_id=follower, leader_id=leader, term=99), HeartBeatResponse)
    assert wrong_group.code == Status.UNKNOWN_GROUP
    wrong_member = rpc(addr, Code.VOTE, VoteRequest(
        group=group.group, remote_id="n9", leader_id=leader, term=99), VoteResponse)
    assert wrong_member.code == Status.UNKNOWN_MEMBER
    stranger = rpc(addr, Code.HEART_BEAT, HeartBeatRequest(
        group=group.group, remote_id=follower, leader_id="n9", term=99), HeartBeatResponse)
    assert stranger.code == Status.UNKNOWN_MEMBER
    garbage = call(addr, Code.PUSH, body=b"{not json")
    assert garbage.code == 200
    assert HeartBeatResponse.from_json(garbage.body).code == Status.UNEXPECTED_ARGUMENT
    assert group.leader() == leader
    assert group.append_ok(b"second") == 1
