"""The test tree stays collectable: pytest imports test modules by basename (rootdir mode)."""

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_test_module_basenames_are_unique():
    names = Counter(p.name for p in TESTS.rglob("test_*.py") if "interop" not in p.parts)
    assert [name for name, count in names.items() if count > 1] == []
