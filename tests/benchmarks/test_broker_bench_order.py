"""``benchmarks/broker_bench.py`` runs the consumes before the sends (no broker started)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import broker_bench  # noqa: E402


def test_the_consumes_run_first_and_the_sends_keep_their_order():
    ordered = broker_bench.backlog_first(broker_bench.WORKLOADS)
    modes = [w.mode for w in ordered]
    assert modes == sorted(modes, key=lambda mode: mode != "consume")
    assert modes[0] == "consume"
    sends = [w.name for w in broker_bench.WORKLOADS if w.mode != "consume"]
    assert [w.name for w in ordered if w.mode != "consume"] == sends
