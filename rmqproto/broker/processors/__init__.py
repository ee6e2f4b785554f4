"""The broker's request processors, one module per family of requests (reference §2.3)."""
