"""Commit-log bytes as a master sends them: whole records, and a segment's end-of-file blank
followed by the rest of its file (for the slave's record checks, rmqproto/ha/framing.py)."""

from rmqproto.codec.message import MessageRecord, encode_blank, encode_record

__all__ = ["record", "records", "segment"]


def record(body=b"body", topic="TopicTest", **fields):
    """One record's bytes."""
    return encode_record(MessageRecord(topic, body, **fields))


def records(count, body_size=100, seed=0, offset=0, queue_offset=0):
    """``count`` records with bodies of ``body_size`` bytes (different bytes each), the
    first stored at commit-log ``offset`` with ``queue_offset`` (queue 0)."""
    out = []
    for i in range(count):
        out.append(record(bytes((seed + i + j) % 251 for j in range(body_size)),
                          queue_offset=queue_offset + i, commit_log_offset=offset))
        offset += len(out[-1])
    return b"".join(out)


def segment(file_size, body_size=100, seed=0, offset=0):
    """A whole segment starting at commit-log ``offset``: records while one more leaves
    room for a blank, then the blank and zeros to the file's end."""
    one = len(record(b"\0" * body_size))
    count = (file_size - 8) // one
    data = records(count, body_size, seed, offset)
    return data + encode_blank(file_size - len(data)) + bytes(file_size - len(data) - 8)
