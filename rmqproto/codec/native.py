"""The C versions of codec hot paths (``rmqproto/codec/speedups/``), or None when not built.

``setup.py`` builds them where a C compiler is found (``optional``: an install without
one still works). A build that is there but cannot be loaded (a damaged file, a build for
another interpreter) is an error, not taken for a missing one, so the speedups tests
never skip over it. Each C function does exactly what a Python function does and replaces
it where this module provides one; the Python function stays as the reference
(``tests/codec/test_speedups.py`` compares the two) and as the fallback.
"""

try:
    import rmqproto.codec._speedups as speedups
except ModuleNotFoundError as exc:
    if exc.name != "rmqproto.codec._speedups":
        raise
    speedups = None  # not built; a build that is there but does not load raises

__all__ = ["speedups"]
