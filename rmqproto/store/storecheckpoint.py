"""The ``checkpoint`` file: when commit log, consume queues and index were last flushed (Java ``StoreCheckpoint``).

Java's ``StoreCheckpoint``: one memory-mapped page; the values live in memory and are
written to the page by :meth:`StoreCheckpoint.write` (reactor thread) and made durable
by :meth:`StoreCheckpoint.fsync` (blocking, run it in a thread).
"""

import mmap
import os

from rmqproto.codec.checkpoint import CHECKPOINT_FILE_SIZE, Checkpoint, decode_checkpoint, encode_checkpoint
from rmqproto.store.mappedfile import reserve_blocks

__all__ = ["StoreCheckpoint"]


class StoreCheckpoint:
    def __init__(self, path):
        self.path = path
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        existed = os.fstat(self.fd).st_size > 0
        try:
            reserve_blocks(self.fd, CHECKPOINT_FILE_SIZE)  # a write to the page never faults
        except BaseException:
            os.close(self.fd)
            raise
        self.mm = mmap.mmap(self.fd, CHECKPOINT_FILE_SIZE)
        values = decode_checkpoint(self.mm[:]) if existed else Checkpoint(0, 0, 0)
        self.physic_msg_timestamp = values.physic_msg_timestamp
        self.logics_msg_timestamp = values.logics_msg_timestamp
        self.index_msg_timestamp = values.index_msg_timestamp
        self.closed = False

    @property
    def values(self):
        return Checkpoint(self.physic_msg_timestamp, self.logics_msg_timestamp,
                          self.index_msg_timestamp)

    def min_timestamp(self):
        """``getMinTimestamp``: where an abnormal recovery may start."""
        return self.values.min_timestamp()

    def min_timestamp_index(self):
        """``getMinTimestampIndex`` (with ``messageIndexSafe``)."""
        return self.values.min_timestamp_index()

    def write(self):
        """Copy the values into the page (durable after :meth:`fsync`)."""
        if not self.closed:
            self.mm[:CHECKPOINT_FILE_SIZE] = encode_checkpoint(self.values)

    def fsync(self):
        os.fsync(self.fd)

    def flush(self):
        """Blocking ``flush``: write and fsync."""
        self.write()
        if not self.closed:
            self.fsync()

    def close(self):
        if not self.closed:
            self.closed = True
            self.mm.close()
            os.close(self.fd)
