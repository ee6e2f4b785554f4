"""The broker's request processors, one module per family of requests, as in Java."""
