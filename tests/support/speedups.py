"""The C speedups, for the tests that compare them with their Python twins."""

import shutil
import sysconfig

import pytest

from rmqproto.codec.native import speedups

__all__ = ["require_speedups"]


def require_speedups():
    """``rmqproto.codec._speedups``. Without it the calling test module is skipped only where
    no C compiler could have built it; with a compiler installed the module fails, since
    the build then failed (``setup.py`` makes it optional) and a skip would hide that."""
    if speedups is not None:
        return speedups
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip("rmqproto.codec._speedups is not built: no C compiler (%s) at install time"
                    % compiler, allow_module_level=True)
    pytest.fail("rmqproto.codec._speedups is not built although the C compiler %s is "
                "installed: reinstall (pip install -e .) and read the build's errors"
                % compiler, pytrace=False)
