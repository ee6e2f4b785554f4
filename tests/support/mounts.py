"""Small file systems for fault tests: a tmpfs of a given size, a directory made read-only
under a running process (a read-only bind mount over it: files already open stay
writable, nothing new can be created, as on a file system the kernel turned read-only).

Both need root (``mount``). Without it the test cannot run: it fails in CI (``CI`` set)
and is skipped elsewhere, saying why.
"""

import os
import subprocess
from contextlib import contextmanager

import pytest

__all__ = ["tmpfs", "read_only", "fill"]


def _mount(*args):
    result = subprocess.run(["mount", *map(str, args)], capture_output=True, text=True)
    if result.returncode:
        why = "mount %s failed (these fault tests need root): %s" % (
            " ".join(map(str, args)), result.stderr.strip())
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)


def _umount(path):
    if subprocess.run(["umount", str(path)], capture_output=True).returncode:
        subprocess.run(["umount", "-l", str(path)], check=True)  # still busy: detach it


@contextmanager
def tmpfs(path, size):
    """A tmpfs of ``size`` bytes mounted on ``path`` (created), unmounted at the end."""
    path.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", "size=%d" % size, "tmpfs", path)
    try:
        yield path
    finally:
        _umount(path)


@contextmanager
def read_only(path):
    """``path`` (an existing directory) read-only until the end of the block."""
    _mount("--bind", path, path)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], check=True)
        yield path
    finally:
        _umount(path)


def fill(path, leave=0):
    """A file ``path`` that takes the free space of its file system but ``leave`` bytes."""
    stat = os.statvfs(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.posix_fallocate(fd, 0, max(stat.f_bavail * stat.f_frsize - leave, 1))
    finally:
        os.close(fd)
