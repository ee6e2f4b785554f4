"""``rmqproto.codec.native``: a missing build is None, a build that does not load is an error."""

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "rmqproto"
SPEEDUPS = "_speedups" + sysconfig.get_config_var("EXT_SUFFIX")


def _import_native(tmp_path, damaged):
    """Import ``rmqproto.codec.native`` from a copy of the package without a build, or with
    a damaged one; the completed process."""
    shutil.copytree(PACKAGE, tmp_path / "rmqproto",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    if damaged:
        (tmp_path / "rmqproto" / "codec" / SPEEDUPS).write_bytes(b"not a shared object")
    return subprocess.run(
        [sys.executable, "-c", "import rmqproto.codec.native as n; print(n.speedups)"],
        cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(tmp_path)),
        capture_output=True, text=True)


def test_a_missing_build_is_none(tmp_path):
    run = _import_native(tmp_path, damaged=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "None"


def test_a_build_that_does_not_load_is_an_error(tmp_path):
    run = _import_native(tmp_path, damaged=True)
    assert run.returncode != 0
    assert "ImportError" in run.stderr and SPEEDUPS in run.stderr


def test_a_missing_build_skips_the_speedups_tests_only_without_a_compiler(monkeypatch):
    from support import speedups as guard
    monkeypatch.setattr(guard, "speedups", None)
    monkeypatch.setattr(guard.shutil, "which", lambda name: None)
    with pytest.raises(pytest.skip.Exception, match="no C compiler"):
        guard.require_speedups()
    monkeypatch.setattr(guard.shutil, "which", lambda name: "/usr/bin/" + name)
    with pytest.raises(pytest.fail.Exception, match="build's errors"):
        guard.require_speedups()
