"""Helpers to drive one :class:`~rmqproto.dledger.node.DLedgerNode` by hand in unit tests."""

import random

from rmqproto.codec.dledger_rpc import (HeartBeatRequest, PushEntryRequest, PushEntryType,
                                        VoteRequest, VoteResponse, VoteResult)
from rmqproto.dledger import DLedgerConfig, DLedgerNode, MemoryLedger, Role

PEERS3 = "n0-127.0.0.1:20911;n1-127.0.0.1:20912;n2-127.0.0.1:20913"
PEERS5 = PEERS3 + ";n3-127.0.0.1:20914;n4-127.0.0.1:20915"


def make_node(self_id="n0", peers=PEERS3, ledger=None, term_state=None, seed=0, now=0,
              **settings):
    config = DLedgerConfig(group="g", selfId=self_id, peers=peers, **settings)
    return DLedgerNode(config, ledger if ledger is not None else MemoryLedger(), term_state,
                       random.Random(seed), now=now)


def ledger_with(*terms, tag=b"e"):
    """A memory ledger holding one entry per term given (bodies ``<tag><index>``)."""
    ledger = MemoryLedger()
    for k, term in enumerate(terms):
        ledger.append_as_leader(tag + b"%d" % k, term)
    return ledger


def vote(candidate="n1", term=1, end_index=-1, end_term=-1, to="n0"):
    return VoteRequest(group="g", leader_id=candidate, local_id=candidate, remote_id=to,
                       term=term, ledger_end_index=end_index, ledger_end_term=end_term)


def heartbeat(leader="n1", term=1, to="n0"):
    return HeartBeatRequest(group="g", leader_id=leader, local_id=leader, remote_id=to, term=term)


def push(kind, term=1, leader="n1", entry=None, batch=None, commit_index=-1, to="n0"):
    return PushEntryRequest(group="g", leader_id=leader, local_id=leader, remote_id=to,
                            term=term, type=kind, entry=entry, batch_entry=batch or [],
                            commit_index=commit_index)


def answer_votes(node, ready, result=VoteResult.ACCEPT, now=0, only=None):
    """Answer every VoteRequest in ``ready`` with ``result`` (from ``only`` peers if given)."""
    for send in ready.messages:
        request = send.request
        if isinstance(request, VoteRequest) and (only is None or send.to in only):
            node.deliver(request, VoteResponse(group="g", term=request.term, vote_result=result,
                                               local_id=send.to, remote_id=node.self_id),
                         now)


def elect(node, now=0):
    """Make ``node`` (a fresh CANDIDATE) leader of its current term; returns the Ready."""
    node.tick(now)
    ready = node.ready()
    answer_votes(node, ready, now=now)
    assert node.role is Role.LEADER, node.role
    return node.ready()


def follow(node, leader="n1", term=None, now=0):
    """Make ``node`` FOLLOWER of ``leader`` in ``term`` (default: its current term)."""
    term = node.term if term is None else term
    node.receive("hb", heartbeat(leader, term, node.self_id), now)
    assert node.role is Role.FOLLOWER, node.role
    return node.ready()


def pushes(ready, kind=None):
    return [s for s in ready.messages if isinstance(s.request, PushEntryRequest)
            and (kind is None or s.request.type is kind)]


def replies(ready, token=None):
    return [r.response for r in ready.replies if token is None or r.token == token]


__all__ = ["PEERS3", "PEERS5", "make_node", "ledger_with", "vote", "heartbeat", "push",
           "answer_votes", "elect", "follow", "pushes", "replies", "PushEntryType"]
