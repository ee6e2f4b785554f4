"""A broadcasting consumer's offsets in a local file, as Java's ``LocalFileOffsetStore``
keeps them: ``<offsetStoreDir>/<clientId>/<group>/offsets.json`` written whole (through a
temporary file and a rename), in the text ``OffsetSerializeWrapper#toJson`` writes."""

import os
import re

from rmqproto.client.route import MessageQueue

#: A fastjson object key of ``OffsetSerializeWrapper``'s table: ``{"brokerName":..,"queueId":..,"topic":..}:offset``.
_LOCAL_ENTRY = re.compile(r'\{"brokerName":"([^"]*)","queueId":(\d+),"topic":"([^"]*)"\}:(-?\d+)')


def local_offsets_path(config, client_id, home=None):
    """``LocalFileOffsetStore``'s file: ``<offsetStoreDir>/<clientId>/<group>/offsets.json``,
    the directory ``~/.rocketmq_offsets`` unless ``offsetStoreDir`` says otherwise."""
    root = config.offsetStoreDir or os.path.join(home or os.path.expanduser("~"), ".rocketmq_offsets")
    return os.path.join(root, client_id, config.consumerGroup, "offsets.json")


def encode_local_offsets(offsets):
    """The file's text as Java's ``OffsetSerializeWrapper#toJson`` writes it (fastjson, the
    queues as object keys)."""
    return '{"offsetTable":{%s}}' % ",".join(
        '{"brokerName":"%s","queueId":%d,"topic":"%s"}:%d' % (q.broker_name, q.queue_id, q.topic, o)
        for q, o in sorted(offsets.items()))


def decode_local_offsets(text):
    """The offsets of a file :func:`encode_local_offsets` (or Java) wrote."""
    return {MessageQueue(topic, broker, int(qid)): int(offset)
            for broker, qid, topic, offset in _LOCAL_ENTRY.findall(text or "")}


def read_local_offsets(path):
    """The offsets in the file at ``path`` (none if it does not exist)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return decode_local_offsets(fh.read())
    except FileNotFoundError:
        return {}


def write_local_offsets(path, text):
    """Replace the file at ``path`` with ``text`` (``persistAll``)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(temporary, path)
