"""``benchmarks/broker_bench.py``'s ``best_runs``: brokers take turns, each turn starting
with the next one; disturbed runs are run again; the best run counts, with the median of
the runs that count beside it; and the table gives both ratios (no timing is asserted)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import broker_bench  # noqa: E402


def _figures(tps, other_cores=0.0):
    return {"tps": tps, "other_cores": other_cores, "mean_us": 1000.0, "max_us": 2000.0,
            "server_cpu_s": 1.5, "generator_cpu_s": 1.5, "window_s": 3.0, "errors": 0}


def _measure(sequences, order):
    def measure(pid, address):
        order.append(pid)
        return sequences[pid].pop(0)
    return measure


def test_the_best_run_counts_and_the_median_beside_it():
    sequences = {"o": [_figures(10), _figures(30), _figures(20)],
                 "j": [_figures(100), _figures(40), _figures(50)]}
    order = []
    best = broker_bench.best_runs({"ours": ("o", 1), "java": ("j", 2)},
                                  _measure(sequences, order), "label", 3, 0)
    assert best["ours"]["tps"] == 30 and best["ours"]["median_tps"] == 20
    assert best["java"]["tps"] == 100 and best["java"]["median_tps"] == 50
    assert order == ["o", "j", "j", "o", "o", "j"]  # each turn starts with the next broker


def test_disturbed_runs_are_run_again_and_left_out_of_both_figures():
    sequences = {"o": [_figures(99, other_cores=1.0), _figures(10), _figures(12)]}
    best = broker_bench.best_runs({"ours": ("o", 1)}, _measure(sequences, []), "label", 2, 1)
    assert best["ours"]["tps"] == 12 and best["ours"]["median_tps"] == 11


def test_the_table_gives_the_ratio_of_the_best_runs_and_of_the_medians():
    results = {"send": {"java": {"ours": dict(_figures(90), median_tps=60),
                                 "java": dict(_figures(100), median_tps=50)}}}
    table = broker_bench.table(results, markdown=True)
    header, _, row = table.splitlines()[:3]
    cells = dict(zip([c.strip() for c in header.split("|")], [c.strip() for c in row.split("|")]))
    assert cells["ours/Java"] == "0.90" and cells["medians ours/Java"] == "1.20"
