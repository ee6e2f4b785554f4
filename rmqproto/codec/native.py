"""The C versions of codec hot paths (``_speedups.c``), or None when they are not built.

``setup.py`` builds them where a C compiler is found (``optional``: an install without
one still works). Each C function does exactly what a Python function does and replaces
it where this module provides one; the Python function stays as the reference
(``tests/codec/test_speedups.py`` compares the two) and as the fallback.
"""

try:
    from rmqproto.codec import _speedups as speedups
except ImportError:  # not built
    speedups = None

__all__ = ["speedups"]
