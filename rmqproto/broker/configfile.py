"""The broker's JSON config files, read and written as Java's ``ConfigManager`` does.

``config/topics.json``, ``config/consumerOffset.json``, ``config/subscriptionGroup.json``,
``config/delayOffset.json`` (``ConfigManager#persist``): :func:`persist` writes ``<file>.tmp``,
copies the previous content to ``<file>.bak``, then renames the temporary file over the
file; :func:`load` falls back to the ``.bak`` copy when the file is missing, empty or
does not decode.
"""

import os

from twisted.logger import Logger

from rmqproto.errors import CodecError

__all__ = ["load", "persist"]

log = Logger()


def _read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


def _write(path, data):
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def load(path, decode):
    """``decode(bytes)`` of the file (or of its ``.bak`` copy); ``None`` when neither holds any.

    ``decode`` raises ``CodecError`` on bad content; the error is logged and the backup tried.
    """
    for candidate in (path, path + ".bak"):
        data = _read(candidate)
        if data is None or not data.strip():
            continue
        try:
            return decode(data)
        except CodecError as exc:
            log.error("load {path} failed: {error}, trying the backup", path=candidate, error=exc)
    return None


def persist(path, data):
    """Write ``data`` (bytes) to ``path`` safely: temporary file, backup of the old content,
    rename; whether it was written. A file that cannot be written (a full disk, a read-only
    directory) is logged and left as it was, as Java's ``ConfigManager.persist`` does: the
    table stays in memory and the next persist tries again."""
    temporary = path + ".tmp"
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        _write(temporary, data)
        previous = _read(path)
        if previous is not None:
            _write(path + ".bak", previous)
        os.replace(temporary, path)
    except OSError as exc:
        log.error("persist file {path} failed: {error}", path=path, error=str(exc))
        try:
            os.unlink(temporary)  # a part written to a full disk
        except OSError:
            pass
        return False
    return True
