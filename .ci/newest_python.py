"""Print the path of the newest CPython 3 on this machine: the ``python3.N`` commands on
PATH and in pyenv's versions, each one that runs and has ``venv`` and ``ensurepip`` (else
the interpreter running this)."""

import glob
import os
import re
import subprocess
import sys

PROBE = "import ensurepip, sys, venv; print(*sys.version_info[:2])"


def candidates():
    folders = os.environ.get("PATH", "").split(os.pathsep)
    folders += glob.glob(os.path.join(os.environ.get("PYENV_ROOT", os.path.expanduser(
        "~/.pyenv")), "versions", "*", "bin"))
    for folder in folders:
        for path in glob.glob(os.path.join(folder, "python3.*")):
            if re.fullmatch(r"python3\.\d+", os.path.basename(path)):
                yield path


def version(path):
    """``(major, minor)`` of the interpreter at ``path``, or None when it cannot serve."""
    try:
        run = subprocess.run([path, "-c", PROBE], capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    return tuple(map(int, run.stdout.split())) if run.returncode == 0 else None


found = {path: version(path) for path in candidates()}
print(max(((v, path) for path, v in found.items() if v is not None),
          default=(None, sys.executable))[1])
