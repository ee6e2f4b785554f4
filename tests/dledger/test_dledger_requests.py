"""``DLedgerServer``'s other requests: METADATA, GET, PULL, and refusals of bad input."""

import pytest
from support.raftunit import PEERS3, elect, ledger_with, make_node, replies

from rmqproto.codec.dledger_rpc import (DLedgerResponseCode, GetEntriesRequest,
                                        GetEntriesResponse, MetadataRequest, MetadataResponse,
                                        PullEntriesRequest, PullEntriesResponse)
from rmqproto.dledger import TermState


def ask(node, request):
    node.receive("t", request, 0)
    (response,) = replies(node.ready(), "t")
    return response


def test_metadata_lists_peers_and_leader():
    node = make_node(ledger=ledger_with(1), term_state=TermState(1, None))
    elect(node)
    response = ask(node, MetadataRequest(group="g", remote_id="n0"))
    assert isinstance(response, MetadataResponse)
    assert response.peers == {p.split("-")[0]: p.split("-", 1)[1] for p in PEERS3.split(";")}
    assert response.leader_id == "n0"
    assert (response.term, response.ledger_end_index, response.committed_index) == (
        node.term, node.member.ledger_end_index, node.committed_index)


def test_get_reads_one_entry_from_the_leader_only():
    node = make_node(ledger=ledger_with(1, 1), term_state=TermState(1, None))
    assert ask(node, GetEntriesRequest(group="g", remote_id="n0", begin_index=1)).code == \
        DLedgerResponseCode.NOT_LEADER
    elect(node)
    response = ask(node, GetEntriesRequest(group="g", remote_id="n0", begin_index=1))
    assert isinstance(response, GetEntriesResponse)
    assert response.entries == [node.ledger.get(1)]
    assert ask(node, GetEntriesRequest(group="g", remote_id="n0", begin_index=7)).code == \
        DLedgerResponseCode.INDEX_OUT_OF_RANGE
    assert ask(node, GetEntriesRequest(group="g", remote_id="n0")).code == \
        DLedgerResponseCode.UNEXPECTED_ARGUMENT


def test_pull_is_not_served():
    response = ask(make_node(), PullEntriesRequest(group="g", remote_id="n0"))
    assert isinstance(response, PullEntriesResponse)
    assert response.code == DLedgerResponseCode.UNSUPPORTED


@pytest.mark.parametrize("request_type", [MetadataRequest, GetEntriesRequest])
def test_other_group_or_member(request_type):
    node = make_node()
    assert ask(node, request_type(group="x", remote_id="n0")).code == \
        DLedgerResponseCode.UNKNOWN_GROUP
    assert ask(node, request_type(group="g", remote_id="n7")).code == \
        DLedgerResponseCode.UNKNOWN_MEMBER
