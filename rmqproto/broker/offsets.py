"""Consumer offsets: Java's ``ConsumerOffsetManager`` and ``config/consumerOffset.json``.

The table is ``{"<topic>@<group>": {queueId: offset}}``; QUERY/UPDATE_CONSUMER_OFFSET and
pulls with the COMMIT_OFFSET flag read and write it, GET_ALL_CONSUMER_OFFSET serves it,
and it is persisted every ``flushConsumerOffsetInterval`` ms and at shutdown.
"""

import os

from rmqproto.broker import configfile
from rmqproto.codec.bodies.offsets import ConsumerOffsetSerializeWrapper

__all__ = ["TOPIC_GROUP_SEPARATOR", "consumer_offset_path", "ConsumerOffsetManager"]

TOPIC_GROUP_SEPARATOR = "@"


def consumer_offset_path(store_root):
    """``BrokerPathConfigHelper.getConsumerOffsetPath``."""
    return os.path.join(store_root, "config", "consumerOffset.json")


def _split_key(key):
    """``(topic, group)`` of a ``topic@group`` key, or ``None`` when it has not exactly two parts."""
    parts = key.split(TOPIC_GROUP_SEPARATOR)
    return (parts[0], parts[1]) if len(parts) == 2 else None


class ConsumerOffsetManager:
    """The committed offset of every (group, topic, queue); ``path`` is its JSON file (or ``None``)."""

    def __init__(self, path=None):
        self.path = path
        self.offset_table = {}
        #: RocketMQ 5's ``pullOffsetTable``: where each queue's last pull ended (memory only)
        self.pull_offset_table = {}

    # ------------------------------------------------------------ offsets

    def commit_offset(self, group, topic, queue_id, offset):
        """Store ``offset``; returns the offset it replaced (``None`` if there was none).

        Java accepts an offset smaller than the stored one (and logs it): so do we.
        """
        queues = self.offset_table.setdefault(topic + TOPIC_GROUP_SEPARATOR + group, {})
        previous = queues.get(queue_id)
        queues[queue_id] = offset
        return previous

    def query_offset(self, group, topic, queue_id):
        """The committed offset, or -1 when none is stored."""
        return self.offset_table.get(topic + TOPIC_GROUP_SEPARATOR + group, {}).get(queue_id, -1)

    def commit_pull_offset(self, group, topic, queue_id, offset):
        """A pull of ``group`` ended at ``offset`` (its next begin offset)."""
        self.pull_offset_table[(group, topic, queue_id)] = offset

    def query_pull_offset(self, group, topic, queue_id):
        """Where the last pull ended, else the committed offset (-1 when neither is known)."""
        offset = self.pull_offset_table.get((group, topic, queue_id))
        return self.query_offset(group, topic, queue_id) if offset is None else offset

    def query_offsets(self, group, topic):
        """``{queueId: offset}`` of one group on one topic, or ``None``."""
        return self.offset_table.get(topic + TOPIC_GROUP_SEPARATOR + group)

    def which_topic_by_consumer(self, group):
        """Every topic ``group`` has offsets for."""
        return {pair[0] for pair in map(_split_key, self.offset_table) if pair and pair[1] == group}

    def which_group_by_topic(self, topic):
        """Every group that has offsets for ``topic``."""
        return {pair[1] for pair in map(_split_key, self.offset_table) if pair and pair[0] == topic}

    def clone_offset(self, src_group, dest_group, topic):
        offsets = self.query_offsets(src_group, topic)
        if offsets is not None:
            self.offset_table[topic + TOPIC_GROUP_SEPARATOR + dest_group] = dict(offsets)

    def remove_offset(self, group):
        """Forget every offset of ``group``."""
        for key in [k for k in self.offset_table if (_split_key(k) or (None, None))[1] == group]:
            del self.offset_table[key]

    # ------------------------------------------------------------ JSON and the file

    def encode(self):
        """``consumerOffset.json`` and GET_ALL_CONSUMER_OFFSET's body."""
        return ConsumerOffsetSerializeWrapper(offset_table=self.offset_table).to_json()

    def decode(self, data):
        """Replace the table with the one in ``data`` (raises ``CodecError``)."""
        self.offset_table = ConsumerOffsetSerializeWrapper.from_json(data).offset_table

    def load(self):
        """Read the file (or its ``.bak``); whether one was read."""
        if self.path is None:
            return False
        wrapper = configfile.load(self.path, ConsumerOffsetSerializeWrapper.from_json)
        if wrapper is None:
            return False
        self.offset_table = wrapper.offset_table
        return True

    def persist(self):
        if self.path is not None:
            configfile.persist(self.path, self.encode())
