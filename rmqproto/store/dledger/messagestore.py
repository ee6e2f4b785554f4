"""``DLedgerMessageStore``: the RocketMQ store on a DLedger commit log (``enableDLegerCommitLog``).

A :class:`~rmqproto.store.defaultstore.DefaultMessageStore` whose commit log is a
:class:`~rmqproto.store.dledger.commitlog.DLedgerCommitLog`: consume queues, index,
dispatch, pulls and queries are the default store's; what differs is

* the put: encoded records appended through the member's in-process append, answered once
  the append settles (a quorum has it, or the DLedger code says why not), as
  ``DLedgerCommitLog#asyncPutMessage`` does (``WAIT`` is not looked at: every put waits);
* the dispatch: committed entries only, read back from the data files whenever the
  member's committed index moves;
* recovery: the member recovers its own files; consume queues are cut at the end of the
  log; an old classic commit log is sealed and kept below ``dividedCommitlogOffset``;
* retention: old classic files go first, the DLedger files are kept meanwhile.

The member (:attr:`DLedgerMessageStore.dledger`, a
:class:`~rmqproto.dledger.server.DLedgerServer`) is made by :meth:`load` and started and
stopped with the store; serving its RPC on the peer port is the broker service's job.
See docs/broker-dledger.md, "The store".
"""

from twisted.internet import defer
from twisted.logger import Logger
from zope.interface import implementer

from rmqproto.dledger.server import DLedgerServer
from rmqproto.store.commitlog import consumable
from rmqproto.store.defaultstore import DefaultMessageStore, _human_bytes
from rmqproto.store.dledger.commitlog import KEEP_DLEDGER_HOURS, DLedgerCommitLog, dledger_config
from rmqproto.store.dledger.entries import EntryScan, put_status
from rmqproto.store.interfaces import IMessageStore
from rmqproto.store.results import (PUT_OK, AppendMessageResult, AppendMessageStatus,
                                    PutMessageResult, PutMessageStatus)
from rmqproto.store.retention import RetentionService

__all__ = ["DLedgerMessageStore", "DLedgerRetentionService"]

log = Logger()
_HOUR_MS = 3600 * 1000


class DLedgerRetentionService(RetentionService):
    """Retention of an upgraded log (``DLedgerCommitLog#deleteExpiredFile``): while old
    classic files remain they expire as usual, the last one too, and the member keeps its
    data files (reserved 10 years, no forced clean); once they are gone the member's own
    settings (``fileReservedTime`` + 1 h, ``cleanFileForciblyEnable``) apply again."""

    @defer.inlineCallbacks
    def delete_expired_segments(self, clean_at_once, space_to_delete=False):
        store = self.store
        queue = store.commit_log.queue
        member = store.dledger_config
        if not queue.files:
            member.fileReservedHours = self.config["fileReservedTime"] + 1
            member.enableDiskForceClean = self.config["cleanFileForciblyEnable"]
            return 0
        member.fileReservedHours = KEEP_DLEDGER_HOURS
        member.enableDiskForceClean = False
        count = yield super().delete_expired_segments(clean_at_once, space_to_delete)
        if count or len(queue.files) != 1 or store.is_shutdown:
            return count
        last = queue.files[0]
        reserved = self.config["fileReservedTime"] * _HOUR_MS
        if clean_at_once or store.now() >= last.last_modified_ms + reserved:
            queue.remove_files([last])
            log.info("deleted the last old commit-log segment {name}", name=last.file_name)
            return 1
        return 0


@implementer(IMessageStore)
class DLedgerMessageStore(DefaultMessageStore):
    """The store of a DLedger broker. ``dledger_settings`` override DLedger settings the
    store config does not carry (e.g. ``mappedFileSizeForEntryIndex``)."""

    commit_log_class = DLedgerCommitLog
    retention_class = DLedgerRetentionService

    def __init__(self, config, reactor, run_blocking=None, dledger_settings=None):
        super().__init__(config, reactor, run_blocking)
        self.reput.dispatch_usual = None  # records sit inside entries: no run of records
        #: the member's settings (:func:`~rmqproto.store.dledger.commitlog.dledger_config`)
        self.dledger_config = dledger_config(self.config, **(dledger_settings or {}))
        #: the DLedger member, made by :meth:`load`
        self.dledger = None

    # ------------------------------------------------------------ lifecycle

    def load(self):
        """Lock the directory, open the member (its store recovers the data and index
        files), then load and recover the rest as the default store does."""
        self.lock()
        if self.dledger is None:
            self.dledger = DLedgerServer(self.dledger_config, self.reactor)
            self.commit_log.attach(self.dledger)
            self.dledger.commit_listeners.append(self._committed)
        return super().load()

    def _recover(self, last_exit_ok):
        """``DLedgerCommitLog#recover``: on the first start after an upgrade the old log is
        recovered (as after a clean stop) and sealed; consume-queue units past the end of
        the DLedger log go (a torn tail after a crash)."""
        log_ = self.commit_log
        if log_.has_old_files and not log_.ledger.data.files:
            super()._recover(True)
        else:
            for cq in self._all_queues():
                cq.recover()
        divided = log_.divide()
        if divided >= 0:
            log.info("old commit log below {offset}; DLedger data from there on",
                     offset=divided)
        end = max(log_.wrote_offset, divided, 0)
        if any(cq.max_physic_offset > end for cq in self._all_queues()):
            log.warn("consume queues point past the DLedger log's end {end}: cut there", end=end)
            for cq in self._all_queues():
                cq.truncate_dirty_logic_files(end)
        self._recover_topic_queue_table()

    def start(self):
        """The default store's start (the consume queues dispatched up to the committed
        position), after a crash the index made whole again, then the member's start."""
        super().start()
        if not self.last_exit_ok and self.config["messageIndexEnable"]:
            self._reindex()
        self.dledger.start()

    def _reindex(self):
        """After a crash the index lost its files newer than the checkpoint: dispatch again
        from where the newest remaining file ends (the consume queues skip the units they
        have, the index the offsets it has), as the classic recovery does from its walk."""
        files = self.index_service.files
        start = max(files[-1].index.end_phy_offset if files else 0,
                    self.commit_log.min_offset, 0)
        if start < self.reput.reput_from_offset:
            log.info("dispatching again from {offset} for the index", offset=start)
            self.reput.reput_from_offset = start
            self.reput.do_reput()

    def shutdown(self):
        """The default store's clean stop, then the member's (its files flushed, its
        checkpoint written)."""
        super().shutdown()
        if self.dledger is not None:
            member, self.dledger = self.dledger, None
            member.commit_listeners.remove(self._committed)
            member.stop()

    # ------------------------------------------------------------ progress, for the role handler

    def dispatched(self):
        """Whether every committed entry is in the consume queues and the index."""
        return self.reput.behind == 0 and not self.reput.deferred

    def recover_topic_queue_table(self):
        """``recoverTopicQueueTable`` for a member becoming leader: the next queue offset of
        every queue, from the consume queues after dispatching what is committed, then
        raised past every record of the log's tail that is not committed yet (it commits
        with the leader's next append and keeps its queue offsets)."""
        self.reput.do_reput()
        self._recover_topic_queue_table()
        table = self.commit_log.topic_queue_table
        for topic, queue_id, queue_offset in self._tail_records():
            key = (topic, queue_id)
            if queue_offset + 1 > table.get(key, 0):
                table[key] = queue_offset + 1

    def _tail_records(self):
        """``(topic, queue_id, queue_offset)`` of the consumable records written after the
        dispatched ones."""
        data = self.commit_log.ledger.data
        offset = max(self.reput.reput_from_offset, data.min_offset)
        while offset < data.max_offset:
            mapped = data.find_mapped_file_by_offset(offset)
            if mapped is None:
                return
            base = mapped.file_from_offset
            scan = EntryScan(memoryview(mapped.mm)[:mapped.wrote_position], offset - base)
            while True:
                fields = scan.take(1024)
                if not fields:
                    break
                for topic, queue_id, queue_offset, _, sys_flag, *_ in fields:
                    if consumable(sys_flag):
                        yield topic, queue_id, queue_offset
            del scan
            if mapped.wrote_position < mapped.file_size:
                return
            offset = base + mapped.file_size

    def _committed(self, committed_index):
        """The member's committed index moved: dispatch at the end of this reactor turn."""
        if not self.is_shutdown:
            self._schedule_reput()

    def _dispatched_until(self, store_timestamp):
        """The default store's checkpoint times; the commit log's too, on any role: what is
        dispatched is committed and in the member's files."""
        super()._dispatched_until(store_timestamp)
        if store_timestamp is not None:
            self.checkpoint.physic_msg_timestamp = store_timestamp

    # ------------------------------------------------------------ putting

    def _append(self, append, records, properties, total, wait, then=None, token=None):
        """Append through the member and answer from the settled append (the put status of
        :func:`~rmqproto.store.dledger.entries.put_status`); OS_PAGECACHE_BUSY when the
        member wrote nothing. ``wait`` is not looked at: Java's DLedger put always waits."""
        result, settled = append(records, int(self.reactor.seconds() * 1000), properties, total)
        if result is None:
            return self._refused(PutMessageStatus.OS_PAGECACHE_BUSY,
                                 AppendMessageResult(AppendMessageStatus.UNKNOWN_ERROR))

        def answered(outcome):
            status = put_status(outcome[0].code)
            if status is PUT_OK:
                self.stats.put(result.msg_num, result.wrote_bytes)
            else:
                self.stats.put_failed()
            return PutMessageResult(status, result)

        def failed(failure):
            log.failure("waiting for a DLedger append", failure)
            self.stats.put_failed()
            return PutMessageResult(PutMessageStatus.UNKNOWN_ERROR, result)

        settled.addCallbacks(answered, failed)
        if settled.called:
            return settled.result
        if then is None:
            return settled
        settled.addCallback(then, token)
        return None

    # ------------------------------------------------------------ no classic replication

    def get_max_phy_offset(self):
        """``getMaxOffset``: the committed position."""
        return self.commit_log.max_offset

    def append_to_commit_log(self, start_offset, data):
        return False

    def appended_in_place(self, end):
        return False

    def truncate_replicated(self, offset):
        return False

    def reset_commit_log(self, start_offset):
        return []

    def runtime_info(self):
        info = super().runtime_info()
        info["remainHowManyDataToFlush"] = _human_bytes(
            self.commit_log.ledger.data.unflushed_bytes)
        return info
