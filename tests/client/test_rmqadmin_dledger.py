"""``rmqadmin haStatus -g GROUP -p PEERS`` on a DLedger group of two ``twistd rmq-dledger``
members and one real DLedger 0.3.1.2 member: each member's role and leader from its METADATA
answer, and from ours their term and indices; a killed member shows as unreachable."""

import pytest

from support.dledgergroup import Group
from support.interop import java_available
from support.syncclient import wait_until
from client.adminkit import rmqadmin

pytestmark = pytest.mark.java
SMALL = dict(mappedFileSizeForEntryData=64 * 1024, mappedFileSizeForEntryIndex=32 * 1024,
             heartBeatTimeIntervalMs=300, maxHeartBeatLeak=3, checkPointInterval=200)


def test_ha_status_of_a_dledger_group(tmp_path):
    if not java_available():
        pytest.skip("Java 17 and Maven are not installed")
    group = Group(tmp_path, java=("n2",), **SMALL)
    try:
        group.start_all()
        leader = group.wait_leader()
        last = [group.append_ok(b"entry %d" % i) for i in range(5)][-1]

        def status():
            return {m["memberId"]: m for m in rmqadmin("127.0.0.1:1", "haStatus", "-g", group.group,
                                                       "-p", group.peers)}

        def settled():  # every member names the leader; ours have committed the last entry
            members = status()
            return members if all(m["leaderId"] == leader for m in members.values()) and all(
                members[m]["committedIndex"] == last for m in ("n0", "n1")) else None

        members = wait_until(settled, timeout=30)
        assert {m: (v["address"], v["role"]) for m, v in members.items()} == {
            m: (group.addr(m), "LEADER" if m == leader else "FOLLOWER") for m in group.ids}
        ours = [members[m] for m in ("n0", "n1")]
        assert ours[0]["term"] == ours[1]["term"] >= 1
        assert all(m["ledgerEndIndex"] == last for m in ours)
        assert (members["n2"]["term"], members["n2"]["ledgerEndIndex"]) == (None, None)  # Java's answer

        follower = next(m for m in ("n0", "n1") if m != leader)
        group.kill(follower)
        assert status()[follower]["role"] == "UNREACHABLE"
    finally:
        group.stop()
