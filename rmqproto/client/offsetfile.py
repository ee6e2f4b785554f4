"""A broadcasting consumer's offsets in a local file, as Java's ``LocalFileOffsetStore``
keeps them: ``<offsetStoreDir>/<clientId>/<group>/offsets.json`` written whole (through a
temporary file and a rename), in the text ``OffsetSerializeWrapper#toJson`` writes."""

import os

from rmqproto.client.route import MessageQueue
from rmqproto.codec.bodies.client import MessageQueue as WireQueue
from rmqproto.codec.bodies.offsets import ResetOffsetBody

def local_offsets_path(config, client_id, home=None):
    """``LocalFileOffsetStore``'s file: ``<offsetStoreDir>/<clientId>/<group>/offsets.json``,
    the directory ``~/.rocketmq_offsets`` unless ``offsetStoreDir`` says otherwise."""
    root = config.offsetStoreDir or os.path.join(home or os.path.expanduser("~"), ".rocketmq_offsets")
    return os.path.join(root, client_id, config.consumerGroup, "offsets.json")


def encode_local_offsets(offsets):
    """The file's text as Java's ``OffsetSerializeWrapper#toJson`` writes it (fastjson, the
    queues as object keys: the shape of ``ResetOffsetBody``)."""
    return ResetOffsetBody(offset_table={
        WireQueue(q.topic, q.broker_name, q.queue_id): o for q, o in sorted(offsets.items())
    }).to_json().decode()


def decode_offset_table(text):
    """``{MessageQueue: offset}`` of a local offset file (ours or Java's) or of a
    RESET_CONSUMER_CLIENT_OFFSET body; empty when there is none."""
    if not text:
        return {}
    table = ResetOffsetBody.from_json(text.encode() if isinstance(text, str) else text).offset_table
    return {MessageQueue(q.topic, q.broker_name, q.queue_id): o for q, o in table.items()}


def read_local_offsets(path):
    """The offsets in the file at ``path`` (none if it does not exist)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return decode_offset_table(fh.read())
    except FileNotFoundError:
        return {}


def write_local_offsets(path, text):
    """Replace the file at ``path`` with ``text`` (``persistAll``)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(temporary, path)
