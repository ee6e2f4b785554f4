"""The follower's ``EntryHandler``: APPEND in index order, COMPARE, TRUNCATE, COMMIT."""

from support.raftunit import PushEntryType, follow, ledger_with, make_node, push, replies

from rmqproto.codec.dledger_rpc import DLedgerResponseCode, PushEntryResponse
from rmqproto.dledger import TermState

APPEND, COMMIT = PushEntryType.APPEND, PushEntryType.COMMIT
COMPARE, TRUNCATE = PushEntryType.COMPARE, PushEntryType.TRUNCATE
SUCCESS = DLedgerResponseCode.SUCCESS
INCONSISTENT = DLedgerResponseCode.INCONSISTENT_STATE


def follower(ledger=None, term=1):
    node = make_node(ledger=ledger, term_state=TermState(term, None))
    follow(node, leader="n1", term=term)
    return node


def leader_entries(*terms):
    return ledger_with(*terms, tag=b"L").entries


def send(node, token, request, now=0):
    node.receive(token, request, now)
    return {r.token: r.response for r in node.ready().replies}


def test_appends_are_written_in_index_order():
    node = follower()
    e = leader_entries(1, 1, 1)
    assert send(node, "b", push(APPEND, entry=e[1])) == {}
    assert send(node, "c", push(APPEND, entry=e[2])) == {}
    answers = send(node, "a", push(APPEND, entry=e[0]))
    assert list(answers) == ["a", "b", "c"]
    assert all(r.code == SUCCESS for r in answers.values())
    assert [answers[t].index for t in "abc"] == [0, 1, 2]
    assert (answers["c"].begin_index, answers["c"].end_index) == (0, 2)
    assert node.ledger.entries == e


def test_a_second_push_of_a_waiting_index_is_repeated():
    node = follower()
    e = leader_entries(1, 1)
    send(node, "b", push(APPEND, entry=e[1]))
    answers = send(node, "b2", push(APPEND, entry=e[1]))
    assert answers["b2"].code == DLedgerResponseCode.REPEATED_PUSH
    assert answers["b2"].index == 1


def test_a_full_queue_refuses_pushes_that_arrive_together():
    node = follower()
    commit = [("c%d" % k, push(COMMIT, commit_index=-1)) for k in range(1025)]
    node.receive_all(commit, 0)
    answers = {r.token: r.response for r in node.ready().replies}
    assert answers["c1024"].code == DLedgerResponseCode.PUSH_REQUEST_IS_FULL
    assert answers["c1024"].index is None            # a COMMIT answer has no index
    assert sum(r.code == SUCCESS for r in answers.values()) == 1024


def test_compare_answers_with_the_range():
    node = follower(ledger_with(1, 1, tag=b"L"))
    e = leader_entries(1, 1, 2)
    answers = send(node, "same", push(COMPARE, entry=e[1]))
    assert answers["same"].code == SUCCESS
    assert (answers["same"].begin_index, answers["same"].end_index) == (0, 1)
    assert send(node, "beyond", push(COMPARE, entry=e[2]))["beyond"].code == INCONSISTENT
    other = leader_entries(1, 3)[1]
    assert send(node, "differs", push(COMPARE, entry=other))["differs"].code == INCONSISTENT


def test_compare_or_truncate_drops_the_waiting_appends():
    node = follower()
    e = leader_entries(1, 1)
    send(node, "b", push(APPEND, entry=e[1]))
    answers = send(node, "cmp", push(COMPARE, entry=e[0]))
    assert answers["b"].code == INCONSISTENT
    assert answers["cmp"].code == INCONSISTENT        # the follower is empty
    assert node.handler.waiting == {}


def test_truncate_replaces_a_stale_tail():
    node = follower(ledger_with(1, 1, 1, tag=b"old"))
    e = leader_entries(1, 2)
    answers = send(node, "t", push(TRUNCATE, entry=e[1]))
    assert answers["t"].code == SUCCESS and answers["t"].end_index == 1
    assert node.ledger.end_index == 1 and node.ledger.get(1) == e[1]


def test_truncate_from_a_member_that_is_not_my_leader_is_refused():
    node = follower(ledger_with(1, 1, tag=b"old"))
    e = leader_entries(1, 2)
    answers = send(node, "t", push(TRUNCATE, entry=e[1], leader="n2"))
    assert answers["t"].code == INCONSISTENT
    assert node.ledger.get(1).body == b"old1"


def test_an_append_of_another_term_is_inconsistent():
    node = follower(term=2)
    e = leader_entries(1)
    assert send(node, "a", push(APPEND, entry=e[0], term=1))["a"].code == INCONSISTENT


def test_an_append_without_entries_is_an_unexpected_argument():
    node = follower()
    response = send(node, "a", push(APPEND))["a"]
    assert response.code == DLedgerResponseCode.UNEXPECTED_ARGUMENT
    assert isinstance(response, PushEntryResponse) and response.leader_id == "n1"


def test_batch_append():
    node = follower()
    e = leader_entries(1, 1, 1)
    response = send(node, "b", push(APPEND, batch=e))["b"]
    assert (response.code, response.index, response.count) == (SUCCESS, 0, 3)
    assert node.ledger.end_index == 2


def test_commit_index_follows_only_what_is_known_to_match():
    """A follower with a stale tail must not count it as committed (DLedger #316)."""
    node = follower(ledger_with(1, 1, 1, tag=b"stale"), term=2)
    send(node, "c", push(COMMIT, term=2, commit_index=5))
    assert node.committed_index == -1                 # nothing matched in this term yet
    e = leader_entries(1, 2, 2)
    send(node, "cmp", push(COMPARE, term=2, entry=e[0]))  # entry 0 differs too (body)
    send(node, "t", push(TRUNCATE, term=2, entry=e[0], commit_index=5))
    assert node.committed_index == 0
    send(node, "a", push(APPEND, term=2, entry=e[1], commit_index=0))
    assert node.committed_index == 0
    send(node, "c2", push(COMMIT, term=2, commit_index=5))
    assert node.committed_index == 1 == node.ledger.end_index


def test_truncate_keeps_committed_entries():
    ledger = ledger_with(1, 1, 1, tag=b"L")
    ledger.committed_index = 1
    node = follower(ledger)
    e = leader_entries(1, 1, 1)
    answers = send(node, "t", push(TRUNCATE, entry=e[0]))
    assert answers["t"].code == SUCCESS and answers["t"].end_index == 1
    assert node.ledger.end_index == 1 and node.committed_index == 1
    other = leader_entries(3)[0]
    assert send(node, "bad", push(TRUNCATE, entry=other))["bad"].code == INCONSISTENT
    assert node.ledger.end_index == 1


def test_a_checkpoint_ahead_of_the_log_is_cut_back_at_start():
    ledger = ledger_with(1, 1, 1)
    ledger.committed_index = 7                        # the tail was lost after it was written
    assert follower(ledger).committed_index == 2


def test_not_a_follower_answers_not_follower():
    node = make_node(term_state=TermState(1, None))   # a candidate
    e = leader_entries(1)
    answers = send(node, "cmp", push(COMPARE, entry=e[0]))
    assert answers["cmp"].code == DLedgerResponseCode.NOT_FOLLOWER
    answers = send(node, "a", push(APPEND, entry=e[0]))
    assert answers["a"].code == DLedgerResponseCode.NOT_FOLLOWER


def test_an_append_stuck_on_a_gap_is_sent_back_to_compare():
    node = follower()
    e = leader_entries(1, 1, 1)
    send(node, "c", push(APPEND, entry=e[2]), now=0)
    node.tick(999)
    assert not replies(node.ready())
    node.tick(1000)
    assert replies(node.ready(), "c")[0].code == INCONSISTENT


def test_a_push_of_an_entry_already_held_is_confirmed_at_the_check():
    node = follower()
    e = leader_entries(1, 1)
    send(node, "a", push(APPEND, entry=e[0]))
    send(node, "b", push(APPEND, entry=e[1]))
    assert send(node, "a2", push(APPEND, entry=e[0]), now=10) == {}
    node.tick(1000)
    assert replies(node.ready(), "a2")[0].code == SUCCESS
