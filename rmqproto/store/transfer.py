"""The unit loop of ``DefaultMessageStore#getMessage``: a pull's consume-queue units turned into
the stored records they point at, within the transfer caps of one pull.

:func:`transfer_units` is the reference; the C speedups' ``transfer_units`` does the same
in one call a pull and replaces it where it is built (``tests/codec/test_speedups_store.py``
compares the two).
"""

from rmqproto.codec.consumequeue import CQ_STORE_UNIT_SIZE
from rmqproto.codec.native import speedups
from rmqproto.store.mappedfile import message_at

__all__ = ["NO_MATCH", "REMOVING", "FOUND", "transfer_caps", "is_the_batch_full",
           "transfer_units", "python_transfer_units"]

#: What the loop found: nothing that matched, a unit whose record is gone (and nothing
#: before it), at least one record. (``GetMessageStatus`` NO_MATCHED_MESSAGE,
#: MESSAGE_WAS_REMOVING, FOUND.)
NO_MATCH, REMOVING, FOUND = 0, 1, 2

_UNIT = CQ_STORE_UNIT_SIZE


def transfer_caps(config):
    """``(bytes, count)`` caps of one pull for records on disk, then for records in memory."""
    return (config["maxTransferBytesOnMessageInDisk"], config["maxTransferCountOnMessageInDisk"],
            config["maxTransferBytesOnMessageInMemory"],
            config["maxTransferCountOnMessageInMemory"])


def is_the_batch_full(size_py, max_msg_nums, buffer_total, message_total, in_disk, caps):
    """``isTheBatchFull``: the transfer caps of one pull (never before the first message)."""
    if buffer_total == 0 or message_total == 0:
        return False
    if max_msg_nums <= message_total:
        return True
    max_bytes, max_count = caps[:2] if in_disk else caps[2:]
    return buffer_total + size_py > max_bytes or message_total > max_count - 1


def python_transfer_units(files, file_size, units, offset, max_msg_nums, message_filter,
                          max_offset_py, memory, caps, messages, queue_offsets):
    """Walk the consume-queue ``units`` (bytes) of logical offset ``offset`` on: each matching
    record (``message_filter(tags_code)``, or all when None) is read from the commit log's
    segments ``files`` and appended to ``messages``, its logical offset to ``queue_offsets``,
    until ``max_msg_nums`` or the caps (:func:`transfer_caps`; a record more than
    ``memory`` bytes behind ``max_offset_py`` counts as on disk). A record that is gone skips
    the rest of its segment. Returns ``(NO_MATCH | REMOVING | FOUND, units scanned, the
    commit-log offset of the last unit looked at)``."""
    outcome = NO_MATCH
    next_phy_file_start = None
    max_phy_pulling = 0
    limit = len(units)
    total = 0
    i = 0
    while i + _UNIT <= limit:
        offset_py = int.from_bytes(units[i:i + 8], "big", signed=True)
        size_py = int.from_bytes(units[i + 8:i + 12], "big", signed=True)
        tags_code = int.from_bytes(units[i + 12:i + 20], "big", signed=True)
        max_phy_pulling = offset_py
        if next_phy_file_start is not None and offset_py < next_phy_file_start:
            i += _UNIT
            continue
        in_disk = max_offset_py - offset_py > memory
        if is_the_batch_full(size_py, max_msg_nums, total, len(messages), in_disk, caps):
            break
        if message_filter is not None and not message_filter(tags_code):
            i += _UNIT
            continue
        data = message_at(files, file_size, offset_py, size_py)
        if data is None:
            if total == 0:
                outcome = REMOVING
            next_phy_file_start = offset_py + file_size - offset_py % file_size
            i += _UNIT
            continue
        messages.append(data)
        queue_offsets.append(offset + i // _UNIT)
        total += len(data)
        outcome = FOUND
        next_phy_file_start = None
        i += _UNIT
    return outcome, i // _UNIT, max_phy_pulling


def _c_transfer_units(*args):
    """The C loop; the Python one where it declines (numbers beyond a Java long)."""
    result = speedups.transfer_units(*args)
    return python_transfer_units(*args) if result is None else result


transfer_units = python_transfer_units if speedups is None else _c_transfer_units
