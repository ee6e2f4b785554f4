"""The test tree stays collectable: pytest imports test modules by basename (rootdir mode)."""

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_test_module_basenames_are_unique():
    names = Counter(p.name for p in TESTS.rglob("test_*.py") if "interop" not in p.parts)
    assert [name for name, count in names.items() if count > 1] == []


def test_running_from_the_checkout_leaves_nothing_untracked():
    """twistd writes ``twistd.pid`` (and ``twistd.log`` when daemonized) where it runs."""
    import subprocess

    checked = ["twistd.pid", "slave.pid", "twistd.log", "twistd.log.1"]
    ignored = subprocess.run(["git", "check-ignore", *checked], cwd=TESTS.parent,
                             capture_output=True, text=True, check=True).stdout.split()
    assert ignored == checked
