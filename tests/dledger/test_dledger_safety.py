"""Raft's safety properties under random faults (hypothesis drives the schedule).

Each example runs a group of 3 or 5 on the simulated network with random delays, loss,
crashes, restarts, partitions and one-way cuts while clients append. The network's
:class:`~support.raftsim.SafetyChecker` checks at every step that there is at most one
leader per term, that a committed entry never changes or goes away (so committed entries
are never lost or reordered) and that no committed index passes its log's end; at the end,
once everything is healed, every acknowledged append is committed where it was
acknowledged and every log matches up to its committed index.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.raftsim import Network

OPERATIONS = st.one_of(
    st.tuples(st.just("append"), st.integers(0, 4)),
    st.tuples(st.just("crash"), st.integers(0, 4)),
    st.tuples(st.just("restart"), st.integers(0, 4)),
    st.tuples(st.just("partition"), st.lists(st.booleans(), min_size=5, max_size=5)),
    st.tuples(st.just("cut"), st.tuples(st.integers(0, 4), st.integers(0, 4))),
    st.tuples(st.just("heal"), st.none()),
)

SCHEDULE = st.lists(st.tuples(OPERATIONS, st.sampled_from([5, 50, 300, 1000, 3000, 8000])),
                    min_size=5, max_size=40)


def apply(net, ids, down, op, arg, step):
    if op == "append":
        member = ids[arg % len(ids)]
        if member not in down:
            net.propose(member, b"v%d" % step)
    elif op == "crash":
        member = ids[arg % len(ids)]
        if member not in down:
            net.crash(member)
            down.add(member)
    elif op == "restart":
        member = ids[arg % len(ids)]
        if member in down:
            net.restart(member)
            down.discard(member)
    elif op == "partition":
        side = [m for m, flag in zip(ids, arg) if flag]
        net.partition(side, [m for m in ids if m not in side])
    elif op == "cut":
        a, b = ids[arg[0] % len(ids)], ids[arg[1] % len(ids)]
        if a != b:
            net.cut_link(a, b)
    else:
        net.heal()


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(size=st.sampled_from([3, 5]), seed=st.integers(0, 2 ** 16), schedule=SCHEDULE,
       delay=st.sampled_from([(1, 3), (1, 80), (50, 600)]), drop=st.sampled_from([0, 0.05]),
       batch=st.booleans(), pre_vote=st.booleans())
def test_safety_under_random_faults(size, seed, schedule, delay, drop, batch, pre_vote):
    ids = ["n%d" % k for k in range(size)]
    net = Network(ids, seed=seed, delay=delay, drop=drop, isEnableBatchPush=batch,
                  maxBatchPushSize=200, enablePreVote=pre_vote)
    down = set()
    for step, ((op, arg), wait) in enumerate(schedule):
        apply(net, ids, down, op, arg, step)
        net.run(wait)
    net.heal()
    net.drop = 0
    for member in sorted(down):
        net.restart(member)
    assert net.run_until(lambda: net.leader() is not None, 120000)
    token = net.propose(net.leader(), b"last")
    assert net.run_until(lambda: token in net.results, 30000)

    def converged():
        leader = net.leader()
        return leader is not None and all(
            n.committed_index == net.nodes[leader].ledger.end_index for n in net.nodes.values())

    assert net.run_until(converged, 60000)
    net.checker.check_acked()
    assert net.logs_agree()
