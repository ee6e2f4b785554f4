"""The commit log in a DLedger group's data files (Java ``DLedgerCommitLog``).

:class:`DLedgerCommitLog` is a :class:`~rmqproto.store.commitlog.CommitLog` whose
segments of its own (``queue``) are only the old classic files of a log upgraded in place;
the messages go to the DLedger member's data files, one entry per message:

* :meth:`DLedgerCommitLog.append` encodes the records (queue offsets assigned) and appends
  them through :meth:`~rmqproto.dledger.server.DLedgerServer.append`, a batch as one batch
  append; the append hook sets each record's PHYSICALOFFSET to ``entry.pos + 48``;
* reads see the committed bytes only: :attr:`~DLedgerCommitLog.max_offset` is the committed
  position, and below ``divided_commitlog_offset`` they go to the old files;
* :meth:`~DLedgerCommitLog.divide` makes the upgrade: the last old file sealed with a blank,
  the DLedger data starting at the next file boundary (``DLedgerCommitLog#recover``).

:func:`dledger_config` is the member's configuration from the store's settings, as
``DLedgerCommitLog``'s constructor passes them.
"""

import os

from rmqproto.codec import message as msg
from rmqproto.config import ConfigError
from rmqproto.dledger.config import DLedgerConfig, DLedgerConfigError
from rmqproto.store.commitlog import CommitLog, consumable
from rmqproto.store.dledger.entries import EntryScan, set_physical_offset, split_records
from rmqproto.store.mappedfile import message_at
from rmqproto.store.results import APPENDED, AppendMessageResult

__all__ = ["DLedgerCommitLog", "dledger_config", "KEEP_DLEDGER_HOURS"]

#: ``disableDeleteDledger``: the DLedger files' reserved time while old files remain (10 years).
KEEP_DLEDGER_HOURS = 24 * 365 * 10


def dledger_config(config, **overrides):
    """The :class:`~rmqproto.dledger.config.DLedgerConfig` of the store settings ``config``
    (``DLedgerCommitLog``'s constructor): group, peers and self id; ``storePathRootDir`` as
    the base directory and ``storePathDLedgerCommitLog`` (if set) as the data directory; the
    commit log's segment size for the data segments; ``deleteWhen``,
    ``fileReservedTime`` + 1 hours, ``cleanFileForciblyEnable``, ``diskMaxUsedSpaceRatio``,
    ``preferredLeaderId`` and ``enableBatchPush`` (or ``isEnableBatchPush``). ``overrides``
    set other DLedger settings (tests: small index segments). ConfigError when the peers or
    the self id cannot work."""
    values = dict(
        group=config["dLegerGroup"], selfId=config["dLegerSelfId"], peers=config["dLegerPeers"],
        storeBaseDir=config["storePathRootDir"],
        dataStorePath=config["storePathDLedgerCommitLog"] or None,
        mappedFileSizeForEntryData=config["mappedFileSizeCommitLog"],
        deleteWhen=config["deleteWhen"], fileReservedHours=config["fileReservedTime"] + 1,
        enableDiskForceClean=config["cleanFileForciblyEnable"],
        diskSpaceRatioToCheckExpired=config["diskMaxUsedSpaceRatio"] / 100.0,
        preferredLeaderIds=config["preferredLeaderId"] or None,
        isEnableBatchPush=bool(config["enableBatchPush"] or config["isEnableBatchPush"]))
    values.update(overrides)
    try:
        return DLedgerConfig(**values)
    except DLedgerConfigError as exc:
        raise ConfigError("dLegerPeers / dLegerSelfId: %s" % exc) from None


class DLedgerCommitLog(CommitLog):
    """The commit log of a DLedger broker; :meth:`attach` gives it the member (a
    :class:`~rmqproto.dledger.server.DLedgerServer`) before it is used."""

    def __init__(self, directory, file_size):
        super().__init__(directory, file_size)
        self.server = None
        self.ledger = None
        #: where the DLedger data begins after an upgrade (-1: no old files ever)
        self.divided_commitlog_offset = -1
        self._positions = None

    def attach(self, server):
        """Use ``server``'s store for the messages; its appends as leader get the hook."""
        self.server = server
        self.ledger = server.store
        self.ledger.append_hooks.append(self._append_hook)

    def _append_hook(self, body_pos, body):
        if self._positions is not None:
            self._positions.append(body_pos)
        return bytes(set_physical_offset(body_pos, bytearray(body)))

    # -- the upgrade

    def divide(self):
        """``DLedgerCommitLog#recover``: where the DLedger data begins. With DLedger data
        files, at the first of them; else, when old files remain (the first start after an
        upgrade, the old log recovered), the last old file is sealed with a blank record
        (unless it ends with one) and the first data file is made at the next file
        boundary. Returns ``divided_commitlog_offset`` (-1: no old files)."""
        data = self.ledger.data
        if data.files:
            self.divided_commitlog_offset = data.files[0].file_from_offset
            return self.divided_commitlog_offset
        last = self.queue.last_file
        if last is None:
            return -1
        position = last.wrote_position
        remaining = last.file_size - position
        if remaining >= msg.END_FILE_MIN_BLANK_LENGTH and int.from_bytes(
                last.mm[position + 4:position + 8], "big", signed=True) != msg.BLANK_MAGIC_CODE:
            last.mm[position:position + 8] = msg.encode_blank(remaining)
            last.mm.flush()
            os.fsync(last.fd)
        last.set_positions(last.file_size)
        self.divided_commitlog_offset = last.file_from_offset + last.file_size
        data.last_mapped_file(self.divided_commitlog_offset)
        return self.divided_commitlog_offset

    @property
    def has_old_files(self):
        return bool(self.queue.files)

    # -- appending

    def append(self, records, store_timestamp, properties, total, single=False):
        """Encode records of one queue that passed the put checks (as
        :meth:`CommitLog.append` takes them) with their queue offsets and append them to
        the DLedger leader, ``single`` as one entry, else as one batch append. Returns
        ``(AppendMessageResult, Deferred)``: the result (offset message ids from the entries'
        positions) and the append's Deferred of ``(AppendEntryResponse, positions)``; the
        result is None when the member wrote nothing (Java's ``pos == -1``: not the leader,
        pending requests full, disk full ...). The queue offsets counted on are those of
        the entries written."""
        packed = isinstance(records, msg.PackedBatch)
        first = records.prototype if packed else records[0]
        key = (first.topic, first.queue_id)
        is_consumable = consumable(first.sys_flag)
        queue_offset = self.topic_queue_table.get(key, 0) if is_consumable else 0
        data = bytearray(total)
        if packed:
            _, fields = msg.write_packed_batch(data, 0, total, records, store_timestamp, 0,
                                               queue_offset)
        else:
            _, fields = msg.write_stored_batch(data, 0, total, records, properties,
                                               store_timestamp, 0, queue_offset)
        bodies = split_records(data, fields)
        self._positions = positions = []
        try:
            settled = self.server.append(bytes(bodies[0]) if single else bodies)
        finally:
            self._positions = None
        if not positions:
            return None, settled
        if is_consumable:
            self.topic_queue_table[key] = queue_offset + len(positions)
        host = first.store_host
        ids = ",".join(msg.create_message_id(host, pos) for pos in positions)
        return AppendMessageResult(APPENDED, positions[0], total, ids, store_timestamp,
                                   queue_offset, len(positions)), settled

    def append_message(self, record, store_timestamp, properties, total):
        """:meth:`append` of one record, as one entry."""
        return self.append([record], store_timestamp, [properties], total, single=True)

    def append_data(self, start_offset, data):
        """Classic replication does not write here (``DLedgerCommitLog#appendData``)."""
        return False

    def extend_to(self, end):
        return False

    def last_segment(self):
        return None

    # -- offsets

    @property
    def max_offset(self):
        """``getMaxOffset``: the committed position (else the start of the data files,
        else 0): consumers never read past it."""
        committed = self.ledger.committed_pos
        if committed > 0:
            return committed
        return max(self.ledger.data.min_offset, 0)

    @property
    def wrote_offset(self):
        """The position after the last entry written, committed or not."""
        return self.ledger.end_pos

    @property
    def min_offset(self):
        """``getMinOffset``: the first old file's start while old files remain, else the
        first data file's (-1 without any)."""
        if self.queue.files:
            return self.queue.min_offset
        return self.ledger.data.min_offset

    # -- reading

    @property
    def files(self):
        """The old files, then the data files: one run of segments of the same size."""
        old = self.queue.files
        data = self.ledger.data.files
        return old + data if old else data

    def find_mapped_file_by_offset(self, offset):
        if offset < self.divided_commitlog_offset:
            return self.queue.find_mapped_file_by_offset(offset)
        return self.ledger.data.find_mapped_file_by_offset(offset)

    def dispatch_scan(self, mapped, position):
        """An :class:`~rmqproto.store.dledger.entries.EntryScan` of the segment's committed
        bytes (the old files' written bytes)."""
        end = mapped.wrote_position
        if mapped.file_from_offset >= self.divided_commitlog_offset:
            end = max(min(end, self.max_offset - mapped.file_from_offset), 0)
        return EntryScan(memoryview(mapped.mm)[:end], position)

    def get_message(self, offset, size):
        """The committed bytes at ``offset`` (None when any of them is not committed)."""
        if offset + size > self.max_offset:
            return None
        return message_at(self.files, self.file_size, offset, size)

    def get_data(self, offset, max_size=None, return_first_on_not_found=None):
        """``getData``: committed bytes from ``offset`` to the end of its segment (capped)."""
        end = self.max_offset
        if offset >= end:
            return None
        mapped = self.find_mapped_file_by_offset(offset)
        if mapped is None:
            return None
        size = end - offset if max_size is None else min(max_size, end - offset)
        return mapped.read_from(offset - mapped.file_from_offset, size)

    def view(self, offset, max_size):
        data = self.get_data(offset, max_size)
        return None if data is None else memoryview(data)

    def close(self):
        super().close()
        if self.ledger is not None and self._append_hook in self.ledger.append_hooks:
            self.ledger.append_hooks.remove(self._append_hook)
