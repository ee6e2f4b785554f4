"""The speedups' fuzz targets (``tests/fuzz/``), each run briefly: the C parsers built with
libFuzzer, AddressSanitizer and UBSan, fed mutations of their corpus and compared with
their Python twins. A crash, a sanitizer report or a difference fails the test with the
harness's report (the input is saved under ``build/fuzz/``). Skipped without clang and its
libFuzzer runtime, except in CI, where ``.ci/run`` installs clang; a longer run is
``python3 tests/fuzz/run.py`` (docs/speedups.md)."""

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor

import pytest

from fuzz import run
from support.speedups import require_speedups

require_speedups()

#: Seconds of fuzzing a target, on top of about two of start-up and its corpus; two
#: targets run at a time.
SECONDS = 2


@pytest.fixture(scope="module")
def runs():
    """The finished run of each target."""
    problem = run.missing()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail("CI: %s; .ci/run installs it" % problem, pytrace=False)
        pytest.skip(problem)
    harness = run.build()

    def fuzz(target):
        with tempfile.TemporaryDirectory() as found:
            return run.run(harness, target, SECONDS, [found, run.CORPUS / target])

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(run.targets(), pool.map(fuzz, run.targets())))


def test_every_target_has_a_corpus():
    assert sorted(path.name for path in run.CORPUS.iterdir()) == sorted(run.targets())
    assert all(any((run.CORPUS / target).iterdir()) for target in run.targets())


@pytest.mark.parametrize("target", run.targets())
def test_target_finds_nothing(runs, target):
    done = runs[target]
    assert done.returncode == 0, done.stderr[-6000:]
    assert "Done " in done.stderr, done.stderr[-3000:]
