"""The NameServer's namespaced key/value configuration and its ``kvConfig.json`` file.

The file has Java's ``KVConfigSerializeWrapper`` shape, ``{"configTable":{ns:{k:v}}}``,
so a file written by the Java NameServer loads here and the other way round.
"""

import os

from rmqproto.codec import fastjson
from rmqproto.errors import CodecError

__all__ = ["KVConfig", "NAMESPACE_ORDER_TOPIC_CONFIG"]

#: ``NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG``: where order-topic configs live.
NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


class KVConfig:
    """``namespace → {key → value}``; pure, with explicit JSON conversion."""

    def __init__(self, table=None):
        self.table = table or {}

    def put(self, namespace, key, value):
        self.table.setdefault(namespace, {})[key] = value

    def get(self, namespace, key):
        return self.table.get(namespace, {}).get(key)

    def delete(self, namespace, key):
        self.table.get(namespace, {}).pop(key, None)

    def namespace(self, namespace):
        """The namespace's table, or ``None`` when it was never created (Java keeps empty ones)."""
        return self.table.get(namespace)

    def to_json(self):
        return fastjson.dumps({"configTable": self.table})

    @classmethod
    def from_json(cls, data):
        """Parse ``kvConfig.json``; raises ``CodecError`` on anything but that shape."""
        document = fastjson.loads(data)
        table = document.get("configTable") if isinstance(document, dict) else None
        if table is None:
            table = {}
        if not isinstance(table, dict) or not all(
                isinstance(ns, dict) and all(isinstance(v, str) for v in ns.values())
                for ns in table.values()):
            raise CodecError("kvConfig.json must hold {\"configTable\":{ns:{key:value}}}")
        return cls(table)

    def load(self, path):
        """Replace the table with the file's content, if the file exists."""
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            return
        if data.strip():
            self.table = KVConfig.from_json(data).table

    def persist(self, path):
        """Write the table to ``path`` atomically (temporary file, then rename)."""
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        temporary = path + ".tmp"
        with open(temporary, "wb") as fh:
            fh.write(self.to_json())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temporary, path)
