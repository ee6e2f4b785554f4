"""Whatever a peer sends, a member answers with a DLedger code and keeps its state sound."""

from hypothesis import given, settings
from hypothesis import strategies as st
from support.raftunit import elect, follow, ledger_with, make_node

from rmqproto.codec.dledger import DLedgerEntry
from rmqproto.codec.dledger_rpc import (AppendEntryRequest, GetEntriesRequest, HeartBeatRequest,
                                        LeadershipTransferRequest, PushEntryRequest,
                                        PushEntryType, VoteRequest)
from rmqproto.dledger import TermState

IDS = st.sampled_from([None, "n0", "n1", "n2", "n9"])
SMALL = st.integers(-2, 6)
ENTRIES = st.builds(DLedgerEntry, index=SMALL, term=SMALL, body=st.binary(max_size=4),
                    pos=st.integers(-1, 400), size=st.integers(0, 60))
BASE = {"group": st.sampled_from(["g", "g", "other"]), "remote_id": IDS, "local_id": IDS,
        "leader_id": IDS, "term": SMALL}
REQUESTS = st.one_of(
    st.builds(VoteRequest, ledger_end_index=SMALL, ledger_end_term=SMALL, **BASE),
    st.builds(HeartBeatRequest, **BASE),
    st.builds(PushEntryRequest, type=st.sampled_from(PushEntryType), commit_index=SMALL,
              entry=st.none() | ENTRIES, batch_entry=st.lists(ENTRIES, max_size=3), **BASE),
    st.builds(AppendEntryRequest, body=st.binary(max_size=8), **BASE),
    st.builds(GetEntriesRequest, begin_index=st.none() | SMALL, **BASE),
    st.builds(LeadershipTransferRequest, transfer_id=IDS, transferee_id=IDS,
              take_leadership_ledger_index=SMALL, **BASE),
)


def member(role):
    node = make_node(ledger=ledger_with(1, 1, 2), term_state=TermState(2, None))
    if role == "leader":
        elect(node)
    elif role == "follower":
        follow(node, leader="n1")
    return node


@settings(max_examples=150)
@given(role=st.sampled_from(["candidate", "follower", "leader"]),
       requests=st.lists(REQUESTS, min_size=1, max_size=12))
def test_random_requests_are_answered_and_never_break_the_member(role, requests):
    node = member(role)
    now = 0
    for k, request in enumerate(requests):
        now += 7
        node.receive(k, request, now)
        for reply in node.ready().replies:
            assert isinstance(reply.response.code, int)
            reply.response.to_json()                  # every answer encodes
    for _ in range(300):
        now += 10
        node.tick(now)
        node.ready()
    ledger = node.ledger
    assert ledger.committed_index <= ledger.end_index
    assert [e.index for e in ledger.entries] == list(range(ledger.begin_index,
                                                           ledger.end_index + 1))
