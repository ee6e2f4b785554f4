"""The role rules of a broker on a DLedger commit log (``DLedgerRoleChangeHandler``), pure."""

import pytest

from rmqproto.broker.dledgerrole import (
    POLL_INTERVAL_MS, ChangeToMaster, ChangeToSlave, LeaderProgress, RecoverTopicQueueTable,
    RoleChangeHandler,
)
from rmqproto.config import ConfigError
from rmqproto.dledger.actions import Role

BECOME_MASTER = [RecoverTopicQueueTable(), ChangeToMaster("SYNC_MASTER")]


def progress(term=3, role=Role.LEADER, end=9, end_term=3, committed=9, behind=False):
    return LeaderProgress(role, term, end, end_term, committed, not behind)


@pytest.mark.parametrize("self_id, broker_id", [("n0", 1), ("n2", 3), ("x10", 11)])
def test_a_follower_is_a_slave_with_the_number_of_its_id_plus_one(self_id, broker_id):
    handler = RoleChangeHandler(self_id, "ASYNC_MASTER")
    assert handler.role_changed(1, Role.FOLLOWER, 0) == [ChangeToSlave(broker_id)]
    # every FOLLOWER change is carried out, even as a slave already (a new master)
    assert handler.role_changed(2, Role.FOLLOWER, 0) == [ChangeToSlave(broker_id)]


@pytest.mark.parametrize("self_id", ["node1", "n", "nX"])
def test_an_id_without_a_number_is_refused(self_id):
    with pytest.raises(ConfigError, match="dLegerSelfId"):
        RoleChangeHandler(self_id, "ASYNC_MASTER")


def test_a_candidate_becomes_slave_only_when_it_is_not_one():
    handler = RoleChangeHandler("n1", "ASYNC_MASTER")   # the configured role at start
    assert handler.role_changed(0, Role.CANDIDATE, 0) == [ChangeToSlave(2)]
    assert handler.role_changed(1, Role.CANDIDATE, 0) == []
    assert RoleChangeHandler("n1", "SLAVE").role_changed(0, Role.CANDIDATE, 0) == []


def test_a_leader_with_its_log_committed_and_dispatched_becomes_sync_master():
    handler = RoleChangeHandler("n0", "SLAVE")
    assert handler.role_changed(3, Role.LEADER, 1000) == []
    assert handler.next_deadline() == 1000
    assert handler.progress(progress(), 1000) == BECOME_MASTER
    assert handler.next_deadline() is None and handler.broker_role == "SYNC_MASTER"
    # a CANDIDATE change then makes it a slave again
    assert handler.role_changed(4, Role.CANDIDATE, 1100) == [ChangeToSlave(1)]


def test_an_empty_log_is_ready_at_once():
    handler = RoleChangeHandler("n0", "SLAVE")
    handler.role_changed(1, Role.LEADER, 0)
    assert handler.progress(progress(term=1, end=-1, end_term=-1, committed=-1), 0) == \
        BECOME_MASTER


@pytest.mark.parametrize("waiting", [
    dict(committed=7),              # entries of its own term not yet on a quorum
    dict(behind=True),               # committed, not yet in the consume queues
    dict(end_term=2, committed=7, behind=True),
])
def test_a_leader_polls_every_100_ms_until_ready(waiting):
    handler = RoleChangeHandler("n0", "SLAVE")
    handler.role_changed(3, Role.LEADER, 1000)
    assert handler.progress(progress(**waiting), 1000) == []
    assert handler.next_deadline() == 1000 + POLL_INTERVAL_MS
    assert handler.progress(progress(**waiting), 1100) == []
    assert handler.next_deadline() == 1200
    assert handler.progress(progress(), 1200) == BECOME_MASTER


def test_an_inherited_tail_does_not_hold_the_new_leader_back():
    """Entries of an older term commit only with the first own append (docs/dledger.md), which
    the broker makes only as master: it does not wait for them, as Java would for ever."""
    handler = RoleChangeHandler("n1", "SLAVE")
    handler.role_changed(5, Role.LEADER, 0)
    assert handler.progress(progress(term=5, end=20, end_term=4, committed=17), 0) == \
        BECOME_MASTER


@pytest.mark.parametrize("lost", [dict(role=Role.CANDIDATE), dict(role=Role.FOLLOWER),
                                  dict(term=4)])
def test_a_leader_that_stops_leading_while_waiting_gives_up(lost):
    handler = RoleChangeHandler("n0", "SLAVE")
    handler.role_changed(3, Role.LEADER, 0)
    assert handler.progress(progress(committed=5), 0) == []
    assert handler.progress(progress(**lost), 100) == []
    assert handler.next_deadline() is None and handler.broker_role == "SLAVE"
    assert handler.progress(progress(), 200) == []      # nothing waits any more


def test_a_role_change_ends_the_wait_and_a_new_leadership_waits_afresh():
    handler = RoleChangeHandler("n2", "SLAVE")
    handler.role_changed(3, Role.LEADER, 0)
    assert handler.role_changed(4, Role.FOLLOWER, 50) == [ChangeToSlave(3)]
    assert handler.next_deadline() is None
    handler.role_changed(6, Role.LEADER, 70)
    assert handler.next_deadline() == 70
    assert handler.progress(progress(term=6, end_term=6), 70) == BECOME_MASTER
