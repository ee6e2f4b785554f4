"""The C speedups built with AddressSanitizer and UndefinedBehaviorSanitizer and run through
their own tests (``test_speedups*.py``: random and malformed inputs from Hypothesis).

A read or write outside a buffer, a use after free or undefined arithmetic in the C files
(``rmqproto/codec/speedups/``) on any of those inputs stops the inner run with the sanitizer's
report, where the normal build could go on with a wrong answer or crash a broker later. Objects are
allocated with ``malloc`` (``PYTHONMALLOC=malloc``) so that the sanitizer sees the end of
every Python object the C code reads, not only of the arenas of Python's allocator.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from support.speedups import require_speedups

require_speedups()

REPO = Path(__file__).resolve().parents[2]
#: Every ``test_speedups*.py`` module but this one.
TESTS = tuple(str(path) for path in sorted((REPO / "tests" / "codec").glob("test_speedups*.py"))
              if path.name != Path(__file__).name)
SANITIZERS = "-fsanitize=address,undefined"


def _runtime(compiler, name):
    """The path of the compiler's runtime library ``name``, or None when it has none."""
    found = subprocess.run([compiler, "-print-file-name=%s" % name], capture_output=True,
                           text=True).stdout.strip()
    return found if os.path.isabs(found) and os.path.exists(found) else None


@pytest.fixture(scope="module")
def sanitized_package(tmp_path_factory):
    """A copy of the ``rmqproto`` package whose ``_speedups`` is built by ``setup.py`` with
    the sanitizers, and the environment to run it in (the runtimes preloaded); skips
    without gcc or its sanitizer runtimes."""
    compiler = shutil.which("gcc")
    runtimes = [_runtime(compiler, name) for name in ("libasan.so", "libubsan.so")] \
        if compiler else [None]
    if None in runtimes:
        pytest.skip("gcc with its AddressSanitizer and UBSan runtimes is not installed")
    root = tmp_path_factory.mktemp("sanitized")
    shutil.copytree(REPO / "rmqproto", root / "rmqproto",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    build = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--build-lib", str(root),
         "--build-temp", str(tmp_path_factory.mktemp("build"))],
        cwd=REPO, capture_output=True, text=True,
        env=dict(os.environ, CC=compiler, LDFLAGS=SANITIZERS,
                 CFLAGS="-O1 -g -fno-omit-frame-pointer -fno-sanitize-recover=all "
                        + SANITIZERS))
    target = root / "rmqproto" / "codec" / ("_speedups" + sysconfig.get_config_var("EXT_SUFFIX"))
    assert target.exists(), build.stdout[-3000:] + build.stderr[-3000:]
    env = dict(os.environ, PYTHONPATH=str(root), LD_PRELOAD=" ".join(runtimes),
               PYTHONMALLOC="malloc", ASAN_OPTIONS="detect_leaks=0:abort_on_error=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    return target, env


#: Side-by-side runs the tests are dealt to (in turn, so each gets a like share of the
#: long ones): the outer run only waits meanwhile, and the sanitized build is slow.
RUNS = 2

#: Loads the package copy's sanitized ``_speedups`` (argv[1]) before pytest can put the
#: checkout first on ``sys.path``, so the tests below use it; then runs its share (argv[2],
#: ``index/RUNS``) of them.
_INNER = """
import sys
from rmqproto.codec.native import speedups
if speedups is None or speedups.__file__ != sys.argv[1]:
    sys.exit("loaded %r, not the sanitized build" % (speedups and speedups.__file__,))
import pytest

class Share:
    def __init__(self, index, runs):
        self.index, self.runs = index, runs

    def pytest_collection_modifyitems(self, config, items):
        config.hook.pytest_deselected(items=[item for n, item in enumerate(items)
                                             if n % self.runs != self.index])
        items[:] = items[self.index::self.runs]

share = Share(*map(int, sys.argv[2].split("/")))
# fd 2 is left alone, so that a report written just before an abort is not lost
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "--capture=sys", *sys.argv[3:]],
                     plugins=[share]))
"""


def _report(stderr):
    """The sanitizer's report in ``stderr`` (the interpreter's abort message follows it)."""
    starts = [i for i in (stderr.find("ERROR: AddressSanitizer"), stderr.find("runtime error:"))
              if i >= 0]
    return stderr[min(starts):][:6000] if starts else stderr[-6000:]


def test_speedups_tests_pass_under_the_sanitizers(sanitized_package):
    target, env = sanitized_package

    def run(index):
        return subprocess.run([sys.executable, "-c", _INNER, str(target), "%d/%d" % (index, RUNS),
                               *TESTS], cwd=target.parents[2], env=env, capture_output=True,
                              text=True, timeout=540)

    with ThreadPoolExecutor(RUNS) as pool:
        runs = list(pool.map(run, range(RUNS)))
    for done in runs:
        assert done.returncode == 0, done.stdout[-3000:] + _report(done.stderr)
        assert " passed" in done.stdout and "skipped" not in done.stdout
