"""Fixtures of the store tests (see store_support.py)."""

from store_support import stores  # noqa: F401
