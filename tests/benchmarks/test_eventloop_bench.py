"""``benchmarks/eventloop.py`` runs: each reactor serves its client to the end, and the calls
are counted (no timing is asserted)."""

import collections
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import eventloop as eventloop_bench  # noqa: E402


@pytest.mark.parametrize("name", list(eventloop_bench.REACTORS))
def test_each_reactor_serves_the_client_to_the_end(name):
    calls = collections.Counter()
    user, kernel = eventloop_bench.serve(eventloop_bench.REACTORS[name], 50, calls)
    assert calls["call"] >= 50 and user >= 0 and kernel >= 0
