"""Short rounds of the DLedger fault harness (``support.dledgerfaults``): groups of 3 and 5 of
our members under kill -9, SIGSTOP and partitions, checked for lost or reordered entries, a
non-linearizable log and two leaders in a term. The long round is a command of its own."""

import pytest

from support.dledgerfaults import run_round


@pytest.mark.parametrize("nodes, seed", [(3, 11), (5, 12)])
def test_a_short_round_of_faults(tmp_path, nodes, seed):
    problems, workload, nemesis = run_round(tmp_path, nodes=nodes, seconds=25, seed=seed)
    assert not problems, problems[:10]
    assert len(workload.acknowledged) > 50
    assert len(nemesis.done) >= 4


def test_the_checks_find_what_they_look_for():
    from support.dledgerfaults import (
        leader_problems, linearizability_problems, order_problems, set_problems)

    log = [(0, 1, b"a"), (1, 1, b"b"), (2, 2, b"c")]
    assert not order_problems({"n0": (log, 2), "n1": (log + [(3, 2, b"d")], 3)})
    assert order_problems({"n0": (log, 2), "n1": ([(0, 1, b"a"), (1, 1, b"x")], 1)})
    assert order_problems({"n0": (log + [(3, 2, b"a")], 3)}) == ["a value was appended twice"]
    acked = [(b"a", 0.0, 1.0, 0), (b"c", 2.0, 3.0, 2)]
    assert not set_problems({"n0": (log, 2), "n1": (log, 2)}, acked)
    assert set_problems({"n0": (log, 2), "n1": (log[:2], 1)}, acked)
    assert not linearizability_problems(acked)
    assert linearizability_problems([(b"a", 0.0, 1.0, 5), (b"b", 2.0, 3.0, 4)])
    assert not linearizability_problems([(b"a", 0.0, 3.0, 5), (b"b", 1.0, 2.0, 4)])  # overlapping
    assert leader_problems({3: {"n0"}, 4: {"n0", "n1"}}) == ["term 4 had leaders ['n0', 'n1']"]
