"""Offline checks for replication tests.

* :func:`compare_commit_logs`: two commit-log directories hold the same bytes, file for
  file; a trailing segment that is all zeros on one side only is allowed (Java and our
  store allocate the next segment ahead).
* :class:`Ack` / :func:`storm_acks`: the messages ``SendStorm`` saw acknowledged SEND_OK.
* :func:`missing_acks`: which of them a store's commit log does not hold, decoded with
  :mod:`rmqproto.codec.message` at the offset of each offset message id.
"""

import os
import re
from pathlib import Path

from rmqproto.codec import message as msg
from rmqproto.codec.storefile import offset_to_file_name
from rmqproto.errors import CodecError

__all__ = ["Ack", "CommitLogReader", "compare_commit_logs", "missing_acks", "storm_acks"]

#: ``SendStorm``'s line for a SEND_OK: msgId, offsetMsgId, queueId, queueOffset, key.
_ACK_LINE = re.compile(r"^OK (\S+) ([0-9A-F]{32}) (\d+) (\d+) (storm-\d+-(\d+))$")


def _segment_names(directory):
    return sorted(name for name in os.listdir(directory) if name.isdigit())


def compare_commit_logs(first, second):
    """Differences between the commit logs in directories ``first`` and ``second``, as
    text (empty when identical); a trailing all-zero segment on one side is allowed."""
    first, second = Path(first), Path(second)
    names_a, names_b = _segment_names(first), _segment_names(second)
    shared = min(len(names_a), len(names_b))
    if names_a[:shared] != names_b[:shared]:
        return ["segments differ: %s vs %s" % (names_a, names_b)]
    common = names_a[:shared]
    problems = []
    for name in common:
        data_a, data_b = (first / name).read_bytes(), (second / name).read_bytes()
        if data_a != data_b:
            at = next((i for i, (a, b) in enumerate(zip(data_a, data_b)) if a != b),
                      min(len(data_a), len(data_b)))
            problems.append("%s differs from byte %d (sizes %d, %d)"
                            % (name, at, len(data_a), len(data_b)))
    for directory, names in ((first, names_a), (second, names_b)):
        for name in names[len(common):]:
            if any((directory / name).read_bytes()):
                problems.append("%s/%s holds data the other side lacks" % (directory, name))
    return problems


class Ack:
    """One message ``SendStorm`` saw acknowledged SEND_OK (its ``OK`` output line)."""

    def __init__(self, match):
        self.msg_id, self.offset_msg_id, queue_id, queue_offset, self.key, index = match.groups()
        self.offset = msg.decode_message_id(self.offset_msg_id)[1]
        self.queue_id, self.queue_offset = int(queue_id), int(queue_offset)
        #: ``SendStorm.stormBody``
        self.body = ((self.key + " ") * (1 + int(index) % 40)).encode()

    def problem(self, record, topic):
        """Why ``record`` (found at this ack's offset) is not this message, or None."""
        found = (record.commit_log_offset, record.uniq_key, record.topic, record.queue_id,
                 record.queue_offset, record.keys, record.body)
        wanted = (self.offset, self.msg_id, topic, self.queue_id, self.queue_offset, [self.key],
                  self.body)
        return None if found == wanted else "%s: found %r" % (self.key, found[:6])

    def __repr__(self):
        return "Ack(%s at %d)" % (self.key, self.offset)


def storm_acks(output):
    """The :class:`Ack` of every ``OK`` line of ``SendStorm``'s ``output``."""
    return [Ack(m) for m in map(_ACK_LINE.match, output.splitlines()) if m]


class CommitLogReader:
    """Records of the commit log under ``directory`` (segments of ``file_size`` bytes), each
    segment read once, when first needed."""

    def __init__(self, directory, file_size):
        self.directory = Path(directory)
        self.file_size = file_size
        self._segments = {}

    def record(self, offset):
        """The record at ``offset`` with its body CRC checked; raises ``CodecError``."""
        start = offset - offset % self.file_size
        if start not in self._segments:
            path = self.directory / offset_to_file_name(start)
            self._segments[start] = path.read_bytes() if path.exists() else b""
        return msg.decode_record(self._segments[start], offset - start, check_crc=True)


def missing_acks(commit_log_dir, acks, file_size, topic):
    """Problems (text) for each of ``acks`` the commit log under ``commit_log_dir`` (segments
    of ``file_size`` bytes) does not hold intact at its offset; empty when all are there."""
    reader = CommitLogReader(commit_log_dir, file_size)
    problems = []
    for ack in acks:
        try:
            record = reader.record(ack.offset)
        except CodecError as exc:
            problems.append("%s: no record at %d (%s)" % (ack.key, ack.offset, exc))
            continue
        problems.extend(filter(None, [ack.problem(record, topic)]))
    return problems
