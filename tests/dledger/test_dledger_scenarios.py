"""Groups of 3 and 5 nodes on a simulated network (fake clock): election, replication,
crashes, partitions, and the DLedger failures the core is built to avoid.

The :class:`~support.raftsim.SafetyChecker` of each network checks every step: at most
one leader per term, committed entries never change, committed never above the end.
"""

import pytest
from support.raftsim import Network
from support.raftunit import ledger_with

from rmqproto.codec.dledger_rpc import DLedgerResponseCode, ParseResult, PushEntryRequest
from rmqproto.dledger import Role, TermState

GROUP3 = ("n0", "n1", "n2")
GROUP5 = ("n0", "n1", "n2", "n3", "n4")
SUCCESS = DLedgerResponseCode.SUCCESS


def elected(net, limit=20000):
    assert net.run_until(lambda: net.leader() is not None, limit), {
        m: (n.role, n.term) for m, n in net.nodes.items()}
    return net.leader()


def append_all(net, bodies, limit=5000):
    """Append ``bodies`` on the current leader and wait for every answer."""
    leader = elected(net)
    tokens = [net.propose(leader, body) for body in bodies]
    assert net.run_until(lambda: all(t in net.results for t in tokens), limit)
    return [net.results[t] for t in tokens]


def converged(net):
    """Every live node holds the leader's log and has committed all of it."""
    leader = net.leader()
    if leader is None:
        return False
    end = net.nodes[leader].ledger.end_index
    return all(n.ledger.end_index == end and n.committed_index == end
               for n in net.nodes.values())


def leader_elections(net):
    return [(term, member) for _, member, term, role in net.role_log if role is Role.LEADER]


@pytest.mark.parametrize("ids", [GROUP3, GROUP5])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_group_elects_one_leader_and_replicates(ids, seed):
    net = Network(ids, seed=seed)
    leader = elected(net)
    terms = {n.term for n in net.nodes.values()}
    assert len(terms) == 1
    results = append_all(net, [b"m%d" % k for k in range(50)])
    assert [r.code for r in results] == [SUCCESS] * 50
    assert [r.index for r in results] == list(range(50))
    assert net.run_until(lambda: converged(net), 3000)
    assert net.leader() == leader
    assert net.logs_agree()
    net.checker.check_acked()


@pytest.mark.parametrize("ids", [GROUP3, GROUP5])
def test_leader_crash_re_election_and_rejoin(ids):
    net = Network(ids, seed=7)
    append_all(net, [b"a%d" % k for k in range(20)])
    old = net.leader()
    old_term = net.nodes[old].term
    net.crash(old)
    new = elected(net, limit=30000)
    assert new != old and net.nodes[new].term > old_term
    assert net.now < 30000                        # 6 s leak + a few rounds
    results = append_all(net, [b"b%d" % k for k in range(20)])
    assert all(r.code == SUCCESS for r in results)
    net.restart(old)
    assert net.run_until(lambda: converged(net), 10000)
    assert net.leader() == new
    assert net.logs_agree()
    net.checker.check_acked()


def test_a_restarted_follower_learns_the_committed_index_from_an_idle_leader():
    net = Network(GROUP3, seed=13)
    append_all(net, [b"i%d" % k for k in range(5)])
    assert net.run_until(lambda: converged(net), 5000)
    follower = next(m for m in GROUP3 if m != net.leader())
    net.crash(follower)
    net.ledgers[follower].committed_index = 1      # its last checkpoint
    net.restart(follower)
    assert net.run_until(lambda: net.nodes[follower].committed_index == 4, 5000)


def test_batch_push_group():
    net = Network(GROUP3, seed=4, isEnableBatchPush=True, maxBatchPushSize=300)
    results = append_all(net, [b"x" * 40 for _ in range(100)])
    assert all(r.code == SUCCESS for r in results)
    assert net.run_until(lambda: converged(net), 3000)


def test_isolated_leader_steps_down_and_its_unacked_entries_are_truncated():
    net = Network(GROUP3, seed=11)
    append_all(net, [b"c%d" % k for k in range(5)])
    old = net.leader()
    net.isolate(old)
    stale = [net.propose(old, b"lost%d" % k) for k in range(3)]
    rest = [m for m in GROUP3 if m != old]
    assert net.run_until(lambda: any(net.nodes[m].role is Role.LEADER for m in rest), 30000)
    new = next(m for m in rest if net.nodes[m].role is Role.LEADER)
    kept = [net.propose(new, b"kept%d" % k) for k in range(3)]
    assert net.run_until(lambda: all(t in net.results for t in kept + stale), 10000)
    assert all(net.results[t].code == SUCCESS for t in kept)
    assert all(net.results[t].code != SUCCESS for t in stale)
    assert net.nodes[old].role is Role.CANDIDATE     # no quorum for > 6 s
    net.heal()
    assert net.run_until(lambda: converged(net), 15000)
    assert net.leader() == new
    bodies = [e.body for e in net.nodes[old].ledger.entries]
    assert not any(b.startswith(b"lost") for b in bodies)
    assert bodies[-3:] == [b"kept0", b"kept1", b"kept2"]
    net.checker.check_acked()


def test_minority_side_of_a_five_node_partition_cannot_commit_then_heals():
    net = Network(GROUP5, seed=5)
    append_all(net, [b"p%d" % k for k in range(5)])
    leader = net.leader()
    others = [m for m in GROUP5 if m != leader]
    minority, majority = [leader, others[0]], others[1:]
    net.partition(minority, majority)
    token = net.propose(leader, b"minority")
    assert net.run_until(lambda: any(net.nodes[m].role is Role.LEADER for m in majority), 30000)
    assert net.run_until(lambda: token in net.results, 5000)
    assert net.results[token].code != SUCCESS
    new = next(m for m in majority if net.nodes[m].role is Role.LEADER)
    ok = net.propose(new, b"majority")
    assert net.run_until(lambda: ok in net.results, 5000)
    assert net.results[ok].code == SUCCESS
    net.heal()
    assert net.run_until(lambda: converged(net), 20000)
    assert net.logs_agree()
    net.checker.check_acked()


def test_reordered_and_lossy_network_still_converges():
    net = Network(GROUP3, seed=9, delay=(1, 60), drop=0.02)
    tokens = []
    leader = elected(net, 60000)
    for k in range(40):
        tokens.append(net.propose(net.leader() or leader, b"r%d" % k))
        net.run(20)
    assert net.run_until(lambda: all(t in net.results for t in tokens), 20000)
    assert sum(net.results[t].code == SUCCESS for t in tokens) >= 30
    assert net.run_until(lambda: converged(net), 30000)
    net.checker.check_acked()


# ---------------------------------------------------------------- DLedger's known failures

def lose_a_round_then_isolate(net, member):
    """Put ``member`` where DLedger leaves a candidate whose round a quorum of leaderless
    members has just lost (``WAIT_TO_VOTE_NEXT``), and cut it off before its next round.

    This is the state a member reaches when a leader disappears for a moment (everyone
    votes in the leader's term, nobody wins) and the member is cut off during the 300 to
    1000 ms it then waits, while the others find their leader again in the same term.
    """
    node = net.nodes[member]
    net.isolate(member)
    node.elector.change_role_to_candidate(node.term)
    node.elector.last_parse_result = ParseResult.WAIT_TO_VOTE_NEXT
    node.elector.next_time_to_request_vote = net.now + 300
    net._pump(member)


@pytest.mark.parametrize("pre_vote", [False, True])
def test_a_member_cut_off_alone_does_not_disrupt_the_group_when_it_returns(pre_vote):
    """DLedger PR #25 and the re-election after a healed partition that Jepsen found: with
    DLedger's timing the lone member raises its term once cut off and, back again, its
    answers depose a healthy leader. With pre-vote it never raises its term alone."""
    net = Network(GROUP3, seed=3, enablePreVote=pre_vote)
    append_all(net, [b"s%d" % k for k in range(5)])
    leader = net.leader()
    term = net.nodes[leader].term
    lonely = next(m for m in GROUP3 if m != leader)
    lose_a_round_then_isolate(net, lonely)
    net.run(20000)
    assert net.nodes[lonely].term == (term if pre_vote else term + 1)
    net.heal()
    net.run(20000)
    elections = [e for e in leader_elections(net) if e[0] > term]
    if pre_vote:
        assert elections == [] and net.leader() == leader
        assert net.nodes[leader].term == term
    else:
        assert elections, "DLedger's behaviour: the returning member forces an election"
        assert net.nodes[net.leader()].term > term
    assert net.run_until(lambda: converged(net), 20000)


def test_committed_index_never_above_the_end_after_truncate():
    """DLedger #316: a follower that had counted entries a new leader then truncated was
    left with committedIndex above ledgerEndIndex. Here a restarted member whose
    checkpoint is ahead of its log, and one whose uncommitted tail is truncated, both
    keep committed ≤ end (the network's checker asserts it at every step)."""
    logs = {m: ledger_with(1, 1, 1) for m in GROUP3}
    for ledger in logs.values():
        ledger.committed_index = 2
    logs["n2"].committed_index = 5                # checkpoint written before a torn tail
    net = Network(GROUP3, seed=2, ledgers=logs,
                  term_states={m: TermState(1, None) for m in GROUP3})
    assert net.nodes["n2"].committed_index == 2
    append_all(net, [b"t%d" % k for k in range(3)])
    leader = net.leader()
    net.isolate(leader)
    for k in range(4):
        net.propose(leader, b"doomed%d" % k)
    net.run(15000)
    net.heal()
    assert net.run_until(lambda: converged(net), 20000)
    old = net.nodes[leader].ledger
    assert old.committed_index <= old.end_index
    assert not any(e.body.startswith(b"doomed") for e in old.entries)


def test_vote_compares_the_term_of_the_last_entry_not_the_current_term():
    """DLedger #52: ``ledgerEndTerm`` was the member's current term, so a member with a
    short log but a high term (from elections it lost) could win votes over complete logs
    and truncate committed entries. n2 holds two term-1 entries and term 9; n0 and n1 hold
    the committed term-2 entries. When n0 dies, n2 must not win."""
    full = {m: ledger_with(1, 1, 2, 2) for m in ("n0", "n1")}
    for ledger in full.values():
        ledger.committed_index = 3
    net = Network(GROUP3, seed=6, ledgers={**full, "n2": ledger_with(1, 1)},
                  term_states={"n0": TermState(5, None), "n1": TermState(5, None),
                               "n2": TermState(9, None)})
    net.isolate("n2")
    assert net.run_until(lambda: "n0" in [m for m, n in net.nodes.items()
                                            if n.role is Role.LEADER], 20000)
    lagging = net.nodes["n2"].member
    assert (lagging.curr_term, lagging.ledger_end_term, lagging.ledger_end_index) == (9, 1, 1)
    net.crash("n0")
    net.heal()
    assert net.run_until(lambda: net.nodes["n1"].role is Role.LEADER
                         and net.nodes["n2"].role is Role.FOLLOWER, 60000)
    assert all(role is not Role.LEADER for _, m, _, role in net.role_log if m == "n2")
    assert net.run_until(lambda: converged(net), 10000)
    assert [e.term for e in net.nodes["n2"].ledger.entries[:4]] == [1, 1, 2, 2]
    assert net.nodes["n1"].ledger.get(3).body == b"e3"


def test_a_lagging_preferred_leader_does_not_livelock_the_group():
    """DLedger #85: a preferred leader behind the others was handed leadership, lost its
    vote at term + 1 and sat as a candidate with a term nobody else had, over and over.
    Here it gets leadership only once it has caught up, in one election, and the group
    keeps taking appends meanwhile."""
    net = Network(GROUP3, seed=8, preferredLeaderIds="n0", maxLeadershipTransferWaitIndex=20)
    net.crash("n0")
    leader = elected(net, 30000)
    results = append_all(net, [b"l%d" % k for k in range(60)])
    assert all(r.code == SUCCESS for r in results)
    net.restart("n0")
    transferring, tokens = 0, []
    for k in range(100):
        current = net.leader()
        if current is not None:
            tokens.append(net.propose(current, b"during%d" % k))
        net.run(100)
    assert net.run_until(lambda: net.leader() == "n0" and converged(net), 20000)
    transferring = sum(net.results[t].code == DLedgerResponseCode.LEADER_TRANSFERRING
                       for t in tokens if t in net.results)
    assert transferring <= 3
    elections = leader_elections(net)
    assert elections[-1][1] == "n0"
    assert len([e for e in elections if e[0] > net.nodes[leader].term - 1]) <= 2
    assert all(net.nodes["n0"].term <= net.nodes[m].term for m in GROUP3)


@pytest.mark.parametrize("retry_ms", [0, 6000])
def test_failed_take_overs_are_not_retried_every_second(retry_ms):
    """The preferred leader hears heartbeats but none of the pushes (a link that loses
    large frames, say), so it never catches up within the 1000 ms a transferee waits.
    DLedger tries again every second and every try blocks appends with
    LEADER_TRANSFERRING; we wait ``preferredLeaderRetryIntervalMs`` between tries."""
    net = Network(GROUP3, seed=12, preferredLeaderIds="n0",
                  preferredLeaderRetryIntervalMs=retry_ms)
    net.crash("n0")
    leader = elected(net, 30000)
    append_all(net, [b"f%d" % k for k in range(10)])
    net.blocked = lambda src, dst, request: dst == "n0" and isinstance(request, PushEntryRequest)
    net.restart("n0")
    tries, tokens = 0, []
    for k in range(300):
        before = net.nodes[leader].member.transferee
        tokens.append(net.propose(leader, b"g%d" % k))
        net.run(100)
        if before is None and net.nodes[leader].member.transferee is not None:
            tries += 1
    assert net.leader() == leader
    refused = sum(net.results[t].code == DLedgerResponseCode.LEADER_TRANSFERRING
                  for t in tokens if t in net.results)
    if retry_ms == 0:
        assert tries >= 12 and refused >= 100      # DLedger: blocked most of the time
    else:
        assert tries <= 6 and refused <= 70


def test_an_older_term_entry_on_a_quorum_is_not_committed_by_counting():
    """Raft's Figure 8, which DLedger's counting commit allows: x (term a) sits on a quorum
    under a leader of a later term and is counted as committed, then a member holding y
    (term b, a < b) at the same index wins and overwrites it. The network's checker would
    raise on the overwrite of a committed entry."""
    net = Network(GROUP3, seed=21)
    append_all(net, [b"base"])
    s1 = net.leader()
    s2, s3 = [m for m in GROUP3 if m != s1]
    net.isolate(s1)
    net.propose(s1, b"x")                               # only s1 holds x (term a)
    assert net.run_until(lambda: net.nodes[s3].role is Role.LEADER
                         or net.nodes[s2].role is Role.LEADER, 60000)
    if net.nodes[s2].role is Role.LEADER:
        s2, s3 = s3, s2
    net.partition([s1], [s2], [s3])
    net.propose(s3, b"y")                               # only s3 holds y (term b > a)
    net.crash(s3)
    net.partition([s1, s2], [s3])
    assert net.run_until(lambda: net.nodes[s1].role is Role.LEADER
                         and net.nodes[s2].ledger.end_index == 1, 60000)
    net.run(500)
    assert net.nodes[s2].ledger.get(1).body == b"x"     # x now on a quorum, term a < now
    assert net.nodes[s1].committed_index == 0           # but not committed by counting
    net.crash(s1)
    net.restart(s3)
    net.heal()
    assert net.run_until(lambda: net.nodes[s3].role is Role.LEADER
                         and net.nodes[s2].ledger.end_index >= 1
                         and net.nodes[s2].ledger.get(1).body == b"y", 60000)
    net.restart(s1)
    assert net.run_until(lambda: converged(net), 20000)


def test_a_group_of_one_leads_and_commits_alone():
    net = Network(("n0",), seed=1)
    results = append_all(net, [b"solo%d" % k for k in range(3)])
    assert [r.code for r in results] == [SUCCESS] * 3
    assert net.nodes["n0"].committed_index == 2
