"""The README's two set-up commands stay true: the run command names a plugin twistd lists,
and the test command is the one ``.ci/run`` runs."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def indented_commands():
    return [line.strip() for line in README.splitlines() if line.startswith("    ")]


def test_run_command_names_a_twistd_plugin():
    run = next(c for c in indented_commands() if "twistd" in c)
    plugin = re.search(r"twistd -n (\S+)", run).group(1)
    listing = subprocess.run([sys.executable, "-c", "from twisted.scripts.twistd import run; run()",
                              "--help"], capture_output=True, text=True, cwd=ROOT).stdout
    assert re.search(r"^\s+%s\s" % re.escape(plugin), listing, re.M), listing


def test_test_command_is_what_ci_runs():
    assert "./run-tests" in indented_commands()
    assert "./run-tests" in (ROOT / ".ci" / "run").read_text()


def test_ci_runs_the_unit_tests_again_on_the_newest_python():
    assert ".ci/newest-python" in (ROOT / ".ci" / "run").read_text()
    assert '-m "not java"' in (ROOT / ".ci" / "newest-python").read_text()
    newest = subprocess.run([sys.executable, str(ROOT / ".ci" / "newest_python.py")],
                            capture_output=True, text=True, check=True).stdout.strip()
    version = subprocess.run([newest, "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.split()
    assert tuple(map(int, version)) >= sys.version_info[:2]
