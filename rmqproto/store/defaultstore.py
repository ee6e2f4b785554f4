"""``DefaultMessageStore``: the RocketMQ 4.x store in its own on-disk format (``docs/store.md``).

Runs on the reactor thread: appends are ``memcpy`` into mapped segments and dispatching
to consume queues and the index happens at the end of the reactor turn of the puts, or
before a read of them, whichever comes first (on a slave, replicated bytes are dispatched
in slices in the reactor turns after the append); fsyncs run in a thread
(:mod:`rmqproto.store.flush`). Time comes from the reactor given to the constructor.

Files: ``commitlog/``, ``consumequeue/<topic>/<queueId>/``, ``index/``, ``checkpoint``,
``abort`` (exists while running), ``lock`` (held while running).
"""

import fcntl
import functools
import os
import time

from twisted.internet import defer, task
from twisted.logger import Logger
from zope.interface import implementer

from rmqproto.codec import message as msg
from rmqproto.codec.consumequeue import CQ_STORE_UNIT_SIZE
from rmqproto.codec.fastjson import java_double_str
from rmqproto.codec.indexfile import PackedEntries
from rmqproto.codec.native import speedups
from rmqproto.errors import CodecError
from rmqproto.store import recovery
from rmqproto.store.commitlog import (CommitLog, check_batch, check_message, check_packed_batch,
                                      check_usual_message, consumable, delay_level,
                                      topic_illegal)
from rmqproto.store.config import STORE_SETTINGS, store_paths
from rmqproto.store.consumequeue import ConsumeQueue, names_a_directory
from rmqproto.store.dispatch import (DISPATCH_BATCH, SCHEDULE_TOPIC, ReputService,
                                     consume_queue_runs, delay_level_to_queue_id,
                                     parse_delay_levels, requests_of_fields)
from rmqproto.store.faults import FILE_ERRORS, ReportThrottle, is_disk_full
from rmqproto.store.flush import CommitLogFlusher, ConsumeQueueFlusher, blocking_runner
from rmqproto.store.indexservice import IndexService
from rmqproto.store.interfaces import IMessageStore
from rmqproto.store.mappedfile import StoreError
from rmqproto.store.retention import RetentionService
from rmqproto.store.results import (APPENDED, PUT_OK, GetMessageResult, GetMessageStatus,
                                    PutMessageResult, PutMessageStatus, QueryMessageResult)
from rmqproto.store.storecheckpoint import StoreCheckpoint
from rmqproto.store.storestats import StoreStats
from rmqproto.store.transfer import FOUND, NO_MATCH, REMOVING, transfer_caps, transfer_units

__all__ = ["DefaultMessageStore", "RunningFlags", "REPUT_SLICE_BYTES", "QUEUE_REPAIR_INTERVAL",
           "next_offset_correction", "to_schedule_topic", "total_physical_memory"]

log = Logger()
_UNIT = CQ_STORE_UNIT_SIZE
_TRANSFER_STATUS = {NO_MATCH: GetMessageStatus.NO_MATCHED_MESSAGE,
                    REMOVING: GetMessageStatus.MESSAGE_WAS_REMOVING,
                    FOUND: GetMessageStatus.FOUND}
_HOST_FLAGS = msg.BORNHOST_V6_FLAG | msg.STOREHOSTADDRESS_V6_FLAG
_ROLLBACK = msg.TRANSACTION_ROLLBACK_TYPE
_SCHEDULE_TOPIC_UTF8 = SCHEDULE_TOPIC.encode()
#: Replicated commit-log bytes a slave dispatches in one reactor turn (about 8 ms of CPU).
REPUT_SLICE_BYTES = 1 << 20
#: Seconds between two tries to write the units a consume queue's dispatch could not.
QUEUE_REPAIR_INTERVAL = 1.0


def _deferred(result):
    """``result`` (a put's :class:`PutMessageResult` or a Deferred of it) as a Deferred."""
    return result if isinstance(result, defer.Deferred) else defer.succeed(result)


def _fire(value, deferred):
    """A ``then`` that fires ``deferred`` with ``value``."""
    deferred.callback(value)


def _replicated(status, waiting):
    """The replica wait's ``then``: ``waiting`` is ``(append result, then, token)`` of the put."""
    result, then, token = waiting
    then(PutMessageResult(status, result), token)


def _wait_failed(failure, result, then, token):
    """A flush wait that failed: logged, and the put answered UNKNOWN_ERROR."""
    log.failure("waiting for a put's flush", failure)
    then(PutMessageResult(PutMessageStatus.UNKNOWN_ERROR, result), token)


def total_physical_memory():
    """``StoreUtil.TOTAL_PHYSICAL_MEMORY_SIZE``."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 24 * 1024 ** 3


class RunningFlags:
    """``RunningFlags``: a store that cannot write refuses puts with SERVICE_NOT_AVAILABLE;
    reads go on while it is readable. Writing stops while the not-writeable bit or the
    disk-full bit (set by :mod:`rmqproto.store.retention`) is set."""

    NOT_READABLE_BIT = 1
    NOT_WRITEABLE_BIT = 1 << 1
    DISK_FULL_BIT = 1 << 4
    #: the bits that stop writing
    NOT_WRITING_BITS = NOT_WRITEABLE_BIT | DISK_FULL_BIT

    def __init__(self):
        self.flag_bits = 0

    def _set(self, bit, on):
        self.flag_bits = self.flag_bits | bit if on else self.flag_bits & ~bit

    @property
    def readable(self):
        return not self.flag_bits & self.NOT_READABLE_BIT

    @readable.setter
    def readable(self, value):
        self._set(self.NOT_READABLE_BIT, not value)

    @property
    def writeable(self):
        """False while the not-writeable or the disk-full bit is set; setting it changes
        only the not-writeable bit."""
        return not self.flag_bits & self.NOT_WRITING_BITS

    @writeable.setter
    def writeable(self, value):
        self._set(self.NOT_WRITEABLE_BIT, not value)

    @property
    def disk_full(self):
        return bool(self.flag_bits & self.DISK_FULL_BIT)

    def get_and_make_disk_full(self):
        """Set the disk-full bit; True when it was clear."""
        was_ok = not self.disk_full
        self._set(self.DISK_FULL_BIT, True)
        return was_ok

    def get_and_make_disk_ok(self):
        """Clear the disk-full bit; True when it was clear already."""
        was_ok = not self.disk_full
        self._set(self.DISK_FULL_BIT, False)
        return was_ok


def to_schedule_topic(record, max_level):
    """A non-transactional (or committed) message with ``DELAY`` > 0 moves to
    ``SCHEDULE_TOPIC_XXXX`` queue level − 1, its topic and queue saved in ``REAL_TOPIC`` /
    ``REAL_QID``; a level above ``max_level`` is clamped (``CommitLog#asyncPutMessage``)."""
    if not consumable(record.sys_flag):
        return
    level = delay_level(record)
    if level <= 0:
        return
    props = dict(record.properties)
    if level > max_level:
        level = max_level
        props[msg.PROPERTY_DELAY_TIME_LEVEL] = str(level)
    props[msg.PROPERTY_REAL_TOPIC] = record.topic
    props[msg.PROPERTY_REAL_QUEUE_ID] = str(record.queue_id)
    record.properties = props
    record.topic = SCHEDULE_TOPIC
    record.queue_id = delay_level_to_queue_id(level)
    record.store_size = None


def next_offset_correction(old_offset, new_offset, broker_role, offset_check_in_slave):
    """``nextOffsetCorrection``: a slave keeps the requested offset unless ``offsetCheckInSlave``."""
    if broker_role != "SLAVE" or offset_check_in_slave:
        return new_offset
    return old_offset


def _scan_bytes(max_msg_nums):
    """How many bytes of consume-queue units one ``getMessage`` scans at most (Java's
    ``maxFilterMessageCount``): they are all that is copied out of the mapped file."""
    return max(16000, max_msg_nums * _UNIT)


def _dispatched_first(read):
    """A read of consume queues or the index: the records put in this reactor turn and not
    dispatched yet are dispatched before it, so that it sees every stored message."""
    @functools.wraps(read)
    def after_dispatch(self, *args, **kwargs):
        if self.reput.deferred:
            self.reput.dispatch_deferred()
        return read(self, *args, **kwargs)
    return after_dispatch


@implementer(IMessageStore)
class DefaultMessageStore:
    """The default :class:`~rmqproto.store.interfaces.IMessageStore`.

    ``config`` maps MessageStoreConfig property names to typed values (missing ones take
    their defaults; a value its setting refuses raises ConfigError); ``reactor`` gives the
    clock, timers and (if it has one) the thread pool for fsyncs.
    """

    #: The commit log and the retention service a store is made with (the DLedger store's differ).
    commit_log_class = CommitLog
    retention_class = RetentionService

    def __init__(self, config, reactor, run_blocking=None):
        values, _ = STORE_SETTINGS.resolve()
        values.update(config)
        STORE_SETTINGS.validate(values)
        self.config = values
        self.reactor = reactor
        self.paths = store_paths(values)
        self.run_blocking = run_blocking or blocking_runner(reactor)
        self.commit_log = self.commit_log_class(self.paths["commitlog"],
                                                values["mappedFileSizeCommitLog"])
        #: ``{topic: {queue_id: ConsumeQueue}}``
        self.consume_queue_table = {}
        self.delay_table = parse_delay_levels(values["messageDelayLevel"])
        self.max_delay_level = max(self.delay_table, default=0)
        self.index_service = IndexService(self.paths["index"], values["maxHashSlotNum"],
                                          values["maxIndexNum"], self.now,
                                          values["maxMsgsNumBatch"])
        self.checkpoint = None
        self.reput = ReputService(self.commit_log, self.delay_table, self._dispatch,
                                  None if speedups is None else self._dispatch_usual)
        self.running_flags = RunningFlags()
        #: Deletes expired files and watches the disk (``disk_used_ratio`` is replaceable).
        self.retention = self.retention_class(self)
        self.stats = StoreStats(self.now())
        self.total_physical_memory = total_physical_memory()
        #: ``listener(requests)`` once per dispatched batch on a master, with its requests
        #: (tuples in ``DispatchRequest`` order; :func:`~rmqproto.store.dispatch.arrivals`
        #: gives what Java's ``MessageArrivingListener`` is told): long polling.
        self.dispatch_listeners = []
        #: ``listener()`` once at the end of a reactor turn whose puts appended, before
        #: their dispatch: HA transfers.
        self.append_listeners = []
        #: SYNC_MASTER: ``waiter(next_offset) -> Deferred of PutMessageStatus`` (the HA service).
        self.replica_waiter = None
        #: Callables adding entries to :meth:`runtime_info` (e.g. the schedule service).
        self.runtime_info_providers = []
        self._reput_call = None
        #: puts appended in this reactor turn: the append listeners run at its end
        self._appended = False
        #: a put asked the flusher to look at the commit log (done once, at the turn's end)
        self._flush_wanted = False
        #: the last reput slice ran the append listeners and left its dispatch to the next
        self._dispatch_yielded = False
        self.flusher = CommitLogFlusher(self.commit_log.queue, values, reactor, self.run_blocking,
                                        self._on_commit_log_flushed)
        self.cq_flusher = None
        #: ``{(topic, queue_id): commit-log offset}``: the consume queues whose units could
        #: not be written (a full disk, a read-only directory), and where their repair
        #: (:meth:`_repair_queues`) reads the commit log next; the dispatch skips them
        self.broken_queues = {}
        self._repair_call = None
        self._reports = ReportThrottle()
        self.is_shutdown = True
        self.last_exit_ok = True
        self._lock_fd = None
        self._start_begun = False
        self._sampler = None

    # ------------------------------------------------------------ lifecycle

    def now(self):
        """The store clock, in ms (the reactor's)."""
        return int(self.reactor.seconds() * 1000)

    def load(self):
        """Lock the directory, open the files and recover; True when done (``StoreError`` if
        another process holds the lock or a file is unusable).

        The lock comes first, unlike Java's ``DefaultMessageStore`` (``load`` recovers, then
        ``start`` locks): a second process pointed at a live store must not recover its files.
        """
        for key in ("root", "consumequeue"):
            os.makedirs(self.paths[key], exist_ok=True)
        self.lock()
        os.makedirs(self.paths["commitlog"], exist_ok=True)
        self.last_exit_ok = not os.path.exists(self.paths["abort"])
        log.info("last shutdown {how}", how="normally" if self.last_exit_ok else "abnormally")
        self.commit_log.load()
        self._load_consume_queues()
        self.checkpoint = StoreCheckpoint(self.paths["checkpoint"])
        self.cq_flusher = ConsumeQueueFlusher(self._all_queues, self.checkpoint, self.config,
                                              self.reactor, self.run_blocking)
        self.index_service.load(self.last_exit_ok, self.checkpoint.index_msg_timestamp)
        self._recover(self.last_exit_ok)
        return True

    def _load_consume_queues(self):
        root = self.paths["consumequeue"]
        for topic in sorted(os.listdir(root)):
            topic_dir = os.path.join(root, topic)
            if not os.path.isdir(topic_dir):
                continue
            for name in sorted(os.listdir(topic_dir)):
                try:
                    queue_id = int(name)
                except ValueError:
                    continue
                cq = ConsumeQueue(topic, queue_id, root, self.config["mappedFileSizeConsumeQueue"])
                cq.load()
                self.consume_queue_table.setdefault(topic, {})[queue_id] = cq

    def _all_queues(self):
        return [cq for queues in self.consume_queue_table.values() for cq in queues.values()]

    def _recover(self, last_exit_ok):
        max_cq_physic = -1
        for cq in self._all_queues():
            cq.recover()
            max_cq_physic = max(max_cq_physic, cq.max_physic_offset)
        files = self.commit_log.queue.files
        if files:
            segments = [(f.file_from_offset, f.mm) for f in files]
            check_crc = self.config["checkCRCOnRecover"]
            if last_exit_ok:
                start = recovery.normal_start_index(len(files))
                on_record = None
            else:
                if self.config["messageIndexEnable"] and self.config["messageIndexSafe"]:
                    min_ts = self.checkpoint.min_timestamp_index()
                else:
                    min_ts = self.checkpoint.min_timestamp()
                start = recovery.abnormal_start_index(
                    [recovery.first_record_timestamp(f.mm) for f in files], min_ts)

                def on_record(fields):
                    self._dispatch(requests_of_fields((fields,), self.delay_table))
            end = recovery.walk_commit_log(segments, start, check_crc, on_record)
            del segments
            log.info("{how} recovery of the commit log from file {index} of {count}: valid "
                     "up to offset {end}", how="normal" if last_exit_ok else "abnormal",
                     index=start, count=len(files), end=end)
            self.commit_log.queue.flushed_where = end
            self.commit_log.queue.truncate_dirty_files(
                end, 2 * (self.config["maxMessageSize"] + 65536))
            if max_cq_physic >= end:
                for cq in self._all_queues():
                    cq.truncate_dirty_logic_files(end)
        else:
            self.commit_log.queue.flushed_where = 0
            for cq in self._all_queues():
                cq.destroy()
        self._recover_topic_queue_table()

    def _recover_topic_queue_table(self):
        min_physic = self.commit_log.min_offset
        table = {}
        for cq in self._all_queues():
            table[(cq.topic, cq.queue_id)] = cq.max_offset_in_queue
            cq.correct_min_offset(min_physic)
        self.commit_log.topic_queue_table = table

    def lock(self):
        """Hold the ``lock`` file (``flock``, released when the process ends however it ends);
        a broker takes it before its reactor runs, and :meth:`load` before it opens a file.
        Raises :class:`StoreError` when another process holds it."""
        if self._lock_fd is not None:
            return
        os.makedirs(self.paths["root"], exist_ok=True)
        fd = os.open(self.paths["lock"], os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StoreError("the store in %s is locked by another process (is another broker "
                             "running on it?)" % self.paths["root"]) from None
        self._lock_fd = fd

    def start(self):
        """Dispatch what the consume queues miss, start the flush services and create the
        ``abort`` file (the directory is locked since :meth:`load`)."""
        self._start_begun = True
        self.lock()
        self.reput.reput_from_offset = recovery.reput_start_offset(
            [cq.max_physic_offset for cq in self._all_queues()], max(self.commit_log.min_offset, 0))
        self.reput.do_reput()
        self._recover_topic_queue_table()
        self.flusher.start()
        self.cq_flusher.start()
        self._sampler = task.LoopingCall(lambda: self.stats.sample(self.now()))
        self._sampler.clock = self.reactor
        self._sampler.start(1.0, now=True)
        self.retention.start()
        with open(self.paths["abort"], "wb"):
            pass
        self.is_shutdown = False
        if self.broken_queues:  # the recovery's or the first reput's dispatch left them
            self._schedule_repair(0)

    def shutdown(self):
        """A clean stop: flush everything, close the files, remove ``abort`` (kept when the
        store is not writable, dispatching is behind or a consume queue misses units, so
        the next start recovers)."""
        if self.is_shutdown and (not self._start_begun or self._lock_fd is None):
            # never started, or locked (lock()) but never loaded: nothing to flush
            self._close_files()
            self._unlock()
            return
        if self._reput_call is not None and self._reput_call.active():
            self._reput_call.cancel()
        self._reput_call = None
        if self._repair_call is not None and self._repair_call.active():
            self._repair_call.cancel()
        self._repair_call = None
        if not self.is_shutdown:
            # what replication appended and no slice dispatched yet, and the last puts
            self.reput.do_reput()
        self.is_shutdown = True
        self.retention.stop()
        self.flusher.stop()
        if self.cq_flusher is not None:
            self.cq_flusher.stop()
        if self._sampler is not None and self._sampler.running:
            self._sampler.stop()
        self.flusher.flush_all_blocking()
        self.cq_flusher.flush_all_blocking()
        for f in self.index_service.files:
            f.fsync()
        self.checkpoint.flush()
        if self.running_flags.writeable and self.reput.behind == 0 and not self.broken_queues:
            try:
                os.unlink(self.paths["abort"])
            except FileNotFoundError:
                pass
            except OSError as exc:  # a read-only store: the next start recovers
                log.error("cannot remove {path}: {error}", path=self.paths["abort"],
                          error=str(exc))
        self._close_files()
        self._unlock()

    def _unlock(self):
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def delete_files_manually(self):
        """``executeDeleteFilesManually``: the next 20 retention passes delete expired
        commit-log segments whatever the hour."""
        self.retention.execute_delete_files_manually()

    def _close_files(self):
        self.commit_log.close()
        for cq in self._all_queues():
            cq.close()
        self.index_service.close()
        if self.checkpoint is not None:
            self.checkpoint.close()

    def _on_commit_log_flushed(self, store_timestamp):
        if self.checkpoint is not None:
            self.checkpoint.physic_msg_timestamp = store_timestamp

    # ------------------------------------------------------------ consume queues

    @_dispatched_first
    def find_consume_queue(self, topic, queue_id, create=True):
        """The queue object (created empty on demand, as Java's ``findConsumeQueue``); None
        for a topic that cannot name a directory (only a log written elsewhere holds one:
        puts refuse it), whose records then stay in the commit log only."""
        return self._consume_queue(topic, queue_id, create)

    def _consume_queue(self, topic, queue_id, create=True):
        """:meth:`find_consume_queue` for the dispatch and the reads that dispatched first."""
        queues = self.consume_queue_table.get(topic)
        cq = queues.get(queue_id) if queues else None
        if cq is None and create:
            if not names_a_directory(topic):
                log.error("no consume queue for topic {topic!r}: it cannot name a directory",
                          topic=topic)
                return None
            cq = ConsumeQueue(topic, queue_id, self.paths["consumequeue"],
                              self.config["mappedFileSizeConsumeQueue"])
            self.consume_queue_table.setdefault(topic, {})[queue_id] = cq
        return cq

    def _dispatch(self, requests):
        """``doDispatch`` of each request (a tuple in ``DispatchRequest`` order), in order: the
        consume queues (a queue's units of the batch in one append where they continue it),
        the index, the dispatch listeners."""
        runs, store_timestamp = consume_queue_runs(requests)
        broken = self.broken_queues
        for key, units in runs.items():
            if broken and key in broken:
                continue
            cq = self._consume_queue(*key)
            if cq is not None:
                try:
                    cq.put_positions(units)
                except FILE_ERRORS as exc:
                    self._queue_failed(key, units[0][0], exc)
        self._dispatched_until(store_timestamp)
        if self.config["messageIndexEnable"]:
            self.index_service.build_indexes(requests)
            self._flush_full_index_files()
        if self.config["brokerRole"] != "SLAVE":
            for listener in self.dispatch_listeners:
                listener(requests)

    def _dispatch_usual(self, buffer, position, stop_at):
        """The reput's ``dispatch_usual``: :meth:`_dispatch` of a batch of usual records from
        ``position`` of a segment's ``buffer``, done in C straight from the bytes (no request
        a record: ``dispatch_usual_records``); None while dispatch listeners want the
        requests (a master's long polling)."""
        if self.dispatch_listeners and self.config["brokerRole"] != "SLAVE":
            return None
        batch = self.index_service.batch() if self.config["messageIndexEnable"] else None
        end, runs, entries, rolls, store_timestamp = speedups.dispatch_usual_records(
            buffer, position, stop_at, DISPATCH_BATCH, _SCHEDULE_TOPIC_UTF8,
            None if batch is None else batch.newest_end_phy_offset, _ROLLBACK)
        broken = self.broken_queues
        for topic, queue_id, cq_offset, units in runs:
            if broken and (topic, queue_id) in broken:
                continue
            cq = self._consume_queue(topic, queue_id)
            if cq is not None:
                try:
                    cq.put_packed_units(cq_offset, units)
                except FILE_ERRORS as exc:
                    first_offset = int.from_bytes(units[:8], "big")
                    self._queue_failed((topic, queue_id), first_offset, exc)
        self._dispatched_until(store_timestamp)
        if batch is not None:
            batch.put(PackedEntries(entries), rolls)
            self._flush_full_index_files()
        return end

    def _dispatched_until(self, store_timestamp):
        """The checkpoint's times after a dispatched batch whose last consumable record was
        stored at ``store_timestamp`` (None: it had none). The consume queues' time stays
        while a queue misses units, so that a recovery after a crash rebuilds them."""
        if store_timestamp is not None:
            if self.config["brokerRole"] == "SLAVE":
                self.checkpoint.physic_msg_timestamp = store_timestamp
            if not self.broken_queues:
                self.checkpoint.logics_msg_timestamp = store_timestamp

    # ------------------------------------------------------------ unwritable queues

    def _queue_failed(self, key, offset, error):
        """The units of ``key``'s queue from the record at commit-log ``offset`` on could not
        be written: the queue is left to :meth:`_repair_queues`; other queues go on."""
        self.broken_queues[key] = offset
        log.error("consume queue {topic}/{queue_id} cannot be written ({error}): its units "
                  "from commit-log offset {offset} on are written when it can be; the other "
                  "queues go on", topic=key[0], queue_id=key[1], error=str(error),
                  offset=offset)
        self._schedule_repair(QUEUE_REPAIR_INTERVAL)

    def _schedule_repair(self, delay):
        if self._repair_call is None and not self.is_shutdown:
            self._repair_call = self.reactor.callLater(delay, self._repair_queues)

    def _repair_queues(self):
        """Write the units the broken queues miss, read back from the commit log, about
        :data:`REPUT_SLICE_BYTES` of it for each queue in a turn; a queue that reaches the
        commit log's end is dispatched as usual again. A queue that still fails is tried
        again after :data:`QUEUE_REPAIR_INTERVAL` (one log line per
        :data:`~rmqproto.store.faults.REPORT_INTERVAL`)."""
        self._repair_call = None
        if self.is_shutdown:
            return
        failed = False
        for key, offset in list(self.broken_queues.items()):
            cq = self._consume_queue(*key)

            def put(requests, key=key, cq=cq):
                units = consume_queue_runs(requests)[0].get(key)
                if units:
                    cq.put_positions(units)

            walk = ReputService(self.commit_log, self.delay_table, put)
            walk.reput_from_offset = offset
            try:
                done = walk.do_reput(REPUT_SLICE_BYTES)
            except FILE_ERRORS as exc:
                done, failed = False, True
                if self._reports.due(key, self.reactor.seconds()):
                    log.error("consume queue {topic}/{queue_id} still cannot be written: "
                              "{error}", topic=key[0], queue_id=key[1], error=str(exc))
            if done:
                del self.broken_queues[key]
                log.info("consume queue {topic}/{queue_id} written again up to the commit "
                         "log's end", topic=key[0], queue_id=key[1])
            else:
                self.broken_queues[key] = walk.reput_from_offset
        if self.broken_queues:
            self._schedule_repair(QUEUE_REPAIR_INTERVAL if failed else 0)

    def _flush_full_index_files(self):
        index = self.index_service
        if index.full_files:  # seldom: a file filled up
            for full in index.take_full_files():
                self._flush_full_index_file(full)

    def _flush_full_index_file(self, full):
        """Fsync a full index file in a thread (its descriptor stays open until then, even if
        retention deletes it meanwhile); then the checkpoint's index time moves to its end."""
        end_timestamp = full.index.end_timestamp

        def done(_):
            full.end_flush()
            if not self.is_shutdown:
                self.checkpoint.index_msg_timestamp = end_timestamp
                self.checkpoint.flush()

        def failed(failure):
            full.end_flush()
            log.failure("index flush failed", failure)

        full.begin_flush()
        self.run_blocking(full.fsync).addCallbacks(done, failed)

    # ------------------------------------------------------------ putting

    def _store_status(self):
        """``checkStoreStatus``."""
        # not running_flags.writeable, without the property: every put asks
        if (self.is_shutdown or self.config["brokerRole"] == "SLAVE"
                or self.running_flags.flag_bits & RunningFlags.NOT_WRITING_BITS):
            return PutMessageStatus.SERVICE_NOT_AVAILABLE
        return PUT_OK

    def _segment_failed(self, error):
        """A put found no room for a new commit-log segment (``error``): the status it is
        answered. A full disk marks the store disk-full (SERVICE_NOT_AVAILABLE, as Java's
        disk check does, until :mod:`rmqproto.store.retention`'s next check finds room);
        other errors (a read-only or forbidden directory) are CREATE_MAPEDFILE_FAILED."""
        if is_disk_full(error):
            if self.running_flags.get_and_make_disk_full():
                log.error("no room for a new commit-log segment ({error}): disk marked full, "
                          "puts are refused until there is room again", error=str(error))
            return PutMessageStatus.SERVICE_NOT_AVAILABLE
        if self._reports.due("commitlog", self.reactor.seconds()):
            log.error("cannot create a commit-log segment: {error}", error=str(error))
        return PutMessageStatus.CREATE_MAPEDFILE_FAILED

    def _refused(self, status, append_result=None):
        self.stats.put_failed()
        return PutMessageResult(status, append_result)

    @staticmethod
    def _fix_host_flags(record):
        record.sys_flag = (record.sys_flag & ~_HOST_FLAGS) | msg.host_flags(record.born_host,
                                                                             record.store_host)

    @classmethod
    def _fix_batch_host_flags(cls, records):
        """:meth:`_fix_host_flags` of each record; the bits computed once for the records
        with the first record's hosts (all of a batch the broker decoded)."""
        if not records:
            return
        born, store = records[0].born_host, records[0].store_host
        flags = msg.host_flags(born, store)
        if speedups is not None and speedups.fix_batch_host_flags(records, born, store, flags):
            return  # all had those very hosts
        keep = ~_HOST_FLAGS
        for record in records:
            if record.born_host == born and record.store_host == store:
                record.sys_flag = (record.sys_flag & keep) | flags
            else:
                cls._fix_host_flags(record)

    def put_message(self, record, wait_store_msg_ok=True):
        return _deferred(self.put_message_at_once(record, wait_store_msg_ok))

    def put_message_at_once(self, record, wait_store_msg_ok=True, then=None, token=None):
        """:meth:`put_message`, whose :class:`PutMessageResult` comes as it is when it is final
        at once (refused, or stored with no flush or replica wait), else in the Deferred:
        the send path answers the usual send without a Deferred's cost. With ``then``, a
        result that comes later comes as ``then(result, token)``, once, and this returns
        None: a SYNC_MASTER send waits without any Deferred."""
        status = self._store_status()
        if status is PUT_OK:
            checked = check_usual_message(record, self.config["maxMessageSize"])
            if checked is not None:  # the usual message: nothing to move, fix or refuse
                return self._append(self.commit_log.append_message, record, *checked,
                                    wait_store_msg_ok, then, token)
            topic = record.topic
            if msg.PROPERTY_DELAY_TIME_LEVEL in record.properties:  # the usual message has none
                to_schedule_topic(record, self.max_delay_level)
            born, store = record.born_host, record.store_host
            if ":" in born[0] or ":" in store[0] or record.sys_flag & _HOST_FLAGS:
                self._fix_host_flags(record)  # the usual flags (IPv4 hosts, none) are right
            status, properties, total = check_message(record, self.config["maxMessageSize"])
            if record.topic != topic and topic_illegal(topic):
                # moved by a delay level: the topic asked for is checked too (Java's checkMessage)
                status = PutMessageStatus.MESSAGE_ILLEGAL
        if status is not PUT_OK:
            return self._refused(status)
        return self._append(self.commit_log.append_message, record, properties, total,
                            wait_store_msg_ok, then, token)

    def put_messages(self, records, wait_store_msg_ok=True):
        """See :class:`IMessageStore`; a failed Deferred (CodecError) where Java's batch encoder
        throws (:func:`check_batch`)."""
        try:
            return _deferred(self.put_messages_at_once(records, wait_store_msg_ok))
        except CodecError:
            return defer.fail()

    def put_messages_at_once(self, records, wait_store_msg_ok=True, then=None, token=None):
        """:meth:`put_messages` as :meth:`put_message_at_once` is :meth:`put_message` (the
        result as it is when final at once, with ``then`` a later one to ``then``); raises
        CodecError where :meth:`put_messages`' Deferred fails."""
        packed = isinstance(records, msg.PackedBatch)  # written from its body, no records
        if not packed and not isinstance(records, list):
            records = list(records)
        status = self._store_status()
        if status is PUT_OK:
            if not packed:
                self._fix_batch_host_flags(records)  # a packed batch's hosts are IPv4
            status, properties, total = (check_packed_batch if packed else check_batch)(
                records, self.config["maxMessageSize"])
        if status is not PUT_OK:
            return self._refused(status)
        return self._append(self.commit_log.append, records, properties, total,
                            wait_store_msg_ok, then, token)

    def _append(self, append, records, properties, total, wait, then=None, token=None):
        """Append ``records`` that passed the checks (``properties`` and ``total``: the
        strings and the size they measured) to the commit log with ``append`` (its
        ``append``, or ``append_message`` for one record and its string), dispatch what it
        wrote and start the waits: the :class:`PutMessageResult`, or while a wait runs a
        Deferred of it, or with ``then`` None and ``then(result, token)`` when the waits
        end."""
        try:
            # the store clock (now()), without the call
            result = append(records, int(self.reactor.seconds() * 1000), properties, total)
        except FILE_ERRORS as exc:  # no new segment for them: nothing was stored
            return self._refused(self._segment_failed(exc))
        if result.status is not APPENDED:
            return self._refused(PutMessageStatus.MESSAGE_ILLEGAL, result)
        if self.reput.reput_from_offset == result.wrote_offset:
            # the reput is at the records: they are dispatched with the turn's other puts, as
            # one batch, by the reput at the end of the turn (or first thing in a read:
            # _dispatched_first), as Java's reput thread dispatches apart from the puts
            self.reput.defer_records(result.dispatch_fields,
                                     result.wrote_offset + result.wrote_bytes)
        else:
            # behind them (replicated bytes, a dispatch that failed) or before the blank
            # of the segment they rolled from: read back and dispatched now
            try:
                self.reput.do_reput()
            except Exception:  # they are stored: the put is answered as such all the same
                log.failure("dispatching after a put")
        # the turn's end: the append listeners, the deferred dispatch, and the flusher's
        # wake-up if asked below
        self._appended = True
        if self._reput_call is None:
            self._schedule_reput()
        self.stats.put(result.msg_num, result.wrote_bytes)
        # the waits: the flush's and the replica's (a non-OK replica status wins)
        next_offset = result.wrote_offset + result.wrote_bytes
        if self.config["flushDiskType"] == "SYNC_FLUSH" and wait:
            flushed = self.flusher.wait_for(next_offset)
        else:
            # Java's put only wakes its flush thread (which a timed ASYNC_FLUSH service
            # ignores): the turn's puts wake ours once, at its end (scheduled above)
            if self.flusher.woken_by_puts:
                self._flush_wanted = True
            flushed = None
        replica = (self.config["brokerRole"] == "SYNC_MASTER" and wait
                   and self.replica_waiter is not None)
        if flushed is None and not replica:
            return PutMessageResult(PUT_OK, result)
        deferred = None
        if then is None:
            deferred = defer.Deferred()
            then, token = _fire, deferred
        if flushed is None:  # the usual SYNC_MASTER send: the replica's status is the answer
            status = self.replica_waiter(next_offset, _replicated, (result, then, token))
            return deferred if status is None else PutMessageResult(status, result)
        if replica:
            replicated = defer.Deferred()
            status = self.replica_waiter(next_offset, _fire, replicated)
            if status is not None:
                replicated.callback(status)

            def combine(statuses):  # a non-OK replica status wins
                flush_status, replica_status = statuses
                if replica_status is not PUT_OK:
                    return PutMessageResult(replica_status, result)
                return PutMessageResult(flush_status, result)

            waited = defer.gatherResults([flushed, replicated]).addCallback(combine)
        else:
            waited = flushed.addCallback(PutMessageResult, result)
        waited.addCallbacks(then, _wait_failed, callbackArgs=(token,),
                            errbackArgs=(result, then, token))
        return deferred

    # ------------------------------------------------------------ HA

    def get_commit_log_data(self, offset, max_size):
        if self.is_shutdown:
            return b""
        return self.commit_log.get_data(offset, max_size) or b""

    def commit_log_view(self, offset, max_size):
        """The written commit-log bytes from ``offset`` to the end of its segment (at most
        ``max_size``) as a memoryview of the mapping, not a copy (an HA slave checks what it
        appended there); release it at once (``with``). None when there are none."""
        return None if self.is_shutdown else self.commit_log.view(offset, max_size)

    def append_to_commit_log(self, start_offset, data):
        """Append replicated bytes; they are dispatched in later reactor turns (as Java's
        reput thread does), so the HA client reports the new offset first. As Java's
        ``appendToCommitLog``, this wakes only the reput, not the flusher: replicated bytes
        are flushed by the ``flushIntervalCommitLog`` rounds (``CommitLog.FlushRealTimeService``)."""
        if self.is_shutdown:
            return False
        try:
            appended = self.commit_log.append_data(start_offset, data)
        except FILE_ERRORS as exc:  # no room for the next segment: what fitted stays
            if self._reports.due("replica", self.reactor.seconds()):
                log.error("cannot create a commit-log segment for replicated bytes at "
                          "{offset}: {error}", offset=start_offset, error=str(exc))
            self._schedule_reput()
            return False
        if not appended:
            log.error("append to commit log failed at {offset} ({size} bytes)",
                      offset=start_offset, size=len(data))
            return False
        self._schedule_reput()
        return True

    def replication_segment(self):
        """The commit-log segment the next replicated bytes go into when it is open and not
        full (an HA receive thread may write into its mapping, then call
        :meth:`appended_in_place`); else None."""
        segment = None if self.is_shutdown else self.commit_log.last_segment()
        return None if segment is None or segment.is_full else segment

    def appended_in_place(self, end):
        """Replicated bytes up to ``end`` were written into :meth:`replication_segment`'s
        mapping: take them as :meth:`append_to_commit_log` takes its bytes."""
        if self.is_shutdown or not self.commit_log.extend_to(end):
            log.error("replicated bytes written in place up to {end} do not extend the commit "
                      "log (max offset {offset})", end=end, offset=self.get_max_phy_offset())
            return False
        self._schedule_reput()
        return True

    def _schedule_reput(self):
        if self._reput_call is None:
            self._reput_call = self.reactor.callLater(0, self._reput_slice)

    def _reput_slice(self):
        """Dispatch the puts deferred in this turn, then about :data:`REPUT_SLICE_BYTES` of
        replicated bytes; the rest in the next turn, so that a long catch-up never keeps the
        reactor from heartbeats, reports and requests. Before that, the append listeners when
        puts appended, and the flusher's wake-up if a put asked.

        When append listeners ran (a master's transfers to its slaves), the dispatch waits
        for one more poll of the reactor: the slaves' acks and the requests that came in the
        meantime go first, and reads that need the records dispatch them before they look
        (:func:`_dispatched_first`). It waits once; the slice after always dispatches."""
        self._reput_call = None
        if self.is_shutdown:
            return
        yield_dispatch = False
        if self._appended:  # first: the slaves' transfers wait for no dispatch
            self._appended = False
            for listener in self.append_listeners:
                listener()
            yield_dispatch = bool(self.append_listeners) and not self._dispatch_yielded
        if self._flush_wanted:
            self._flush_wanted = False
            self.flusher.wakeup()
        self._dispatch_yielded = yield_dispatch
        if yield_dispatch:
            self._schedule_reput()
            return
        if not self.reput.do_reput(REPUT_SLICE_BYTES):
            self._schedule_reput()

    def dispatch_behind_bytes(self):
        return self.reput.behind

    def truncate_replicated(self, offset):
        """HA slave: drop the replicated bytes from ``offset`` (the end of the last record
        the HA client checked, at most the max offset) to the end, zeroed: they were never
        acknowledged nor dispatched (the reput dispatches whole records only, and the
        client checks them first). False when ``offset`` is not in the commit log."""
        end = self.get_max_phy_offset()
        if self.is_shutdown or not self.commit_log.min_offset <= offset <= end:
            return False
        self.commit_log.queue.truncate_dirty_files(offset, zero_limit=end - offset)
        return True

    def reset_commit_log(self, start_offset):
        """HA slave re-seed: move the commit log and the consume queues aside, never deleting
        them (each directory is renamed to ``<dir>.ha-reseed-<UTC time>`` beside it), and
        continue with an empty segment at ``start_offset`` (a segment start). Returns the
        directories the files went to; an empty list when nothing was changed (a bad
        offset, or a rename that failed). Index entries of the moved offsets stay and find
        nothing, as after retention."""
        if self.is_shutdown or start_offset < 0 or start_offset % self.commit_log.file_size:
            return []
        self.reput.dispatch_deferred()  # before the files it would write to move
        moved = self._move_aside(("commitlog", "consumequeue"))
        if not moved:
            return []
        self.commit_log.queue.close()  # the open files now live in the moved directories
        self.commit_log.queue.files = []
        for cq in self._all_queues():
            cq.close()
        self.consume_queue_table.clear()
        self.commit_log.topic_queue_table = {}
        self.commit_log.queue.last_mapped_file(start_offset)
        self.commit_log.queue.flushed_where = start_offset
        self.reput.reput_from_offset = start_offset
        return moved

    def _move_aside(self, keys):
        """Rename the store directories ``keys`` to ``<dir>.ha-reseed-<time>`` and make them
        anew: the new names, or [] (everything renamed back) when a rename fails."""
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(self.reactor.seconds()))
        moved = []
        try:
            for key in keys:
                path = self.paths[key].rstrip(os.sep)
                aside = "%s.ha-reseed-%s" % (path, stamp)
                suffix = 1
                while os.path.exists(aside):
                    aside = "%s.ha-reseed-%s-%d" % (path, stamp, suffix)
                    suffix += 1
                os.rename(path, aside)
                moved.append((path, aside))
                os.makedirs(path)
        except OSError as exc:
            log.error("cannot move the store's {what} aside: {error}", what=key, error=exc)
            for path, aside in reversed(moved):
                if os.path.isdir(path) and not os.listdir(path):
                    os.rmdir(path)
                os.rename(aside, path)
            return []
        return [aside for _, aside in moved]

    # ------------------------------------------------------------ reading

    @_dispatched_first
    def get_message(self, group, topic, queue_id, offset, max_msg_nums, message_filter=None):
        """``getMessage``; None when the store is shut down or not readable (the pull
        processor answers SYSTEM_ERROR then). An unknown queue is an empty one
        (NO_MESSAGE_IN_QUEUE), as Java creates it on lookup."""
        if self.is_shutdown or not self.running_flags.readable:
            return None
        role, check_in_slave = self.config["brokerRole"], self.config["offsetCheckInSlave"]

        def correction(new):
            return next_offset_correction(offset, new, role, check_in_slave)

        cq = self._consume_queue(topic, queue_id, create=False)
        if cq is None:
            result = GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, next_begin_offset=correction(0))
            self.stats.get(False, 0)
            return result
        min_offset, max_offset = cq.min_offset_in_queue, cq.max_offset_in_queue
        suggest = False
        messages, queue_offsets = [], []
        if max_offset == 0:
            status, next_begin = GetMessageStatus.NO_MESSAGE_IN_QUEUE, correction(0)
        elif offset < min_offset:
            status, next_begin = GetMessageStatus.OFFSET_TOO_SMALL, correction(min_offset)
        elif offset == max_offset:
            status, next_begin = GetMessageStatus.OFFSET_OVERFLOW_ONE, correction(offset)
        elif offset > max_offset:
            status, next_begin = GetMessageStatus.OFFSET_OVERFLOW_BADLY, correction(max_offset)
        else:
            units = cq.get_index_buffer(offset, _scan_bytes(max_msg_nums))
            if units is None:
                status = GetMessageStatus.OFFSET_FOUND_NULL
                next_begin = correction(cq.roll_next_file(offset))
            else:
                status, scanned, suggest = self._transfer(
                    units, offset, max_msg_nums, message_filter, messages, queue_offsets)
                next_begin = offset + scanned
        self.stats.get(status is GetMessageStatus.FOUND, len(messages))
        return GetMessageResult(status, messages, next_begin, min_offset, max_offset, suggest,
                                queue_offsets)

    def _transfer(self, units, offset, max_msg_nums, message_filter, messages, queue_offsets):
        """The unit loop of ``getMessage`` (:func:`transfer_units`): ``(status, units
        scanned, suggest slave)``."""
        config = self.config
        log_ = self.commit_log
        max_offset_py = log_.max_offset
        memory = int(self.total_physical_memory * (config["accessMessageInMemoryMaxRatio"] / 100.0))
        outcome, scanned, max_phy_pulling = transfer_units(
            log_.files, log_.file_size, units, offset, max_msg_nums, message_filter,
            max_offset_py, memory, transfer_caps(config), messages, queue_offsets)
        return _TRANSFER_STATUS[outcome], scanned, max_offset_py - max_phy_pulling > memory

    @_dispatched_first
    def get_max_offset_in_queue(self, topic, queue_id):
        cq = self._consume_queue(topic, queue_id, create=False)
        return cq.max_offset_in_queue if cq is not None else 0

    @_dispatched_first
    def get_min_offset_in_queue(self, topic, queue_id):
        cq = self._consume_queue(topic, queue_id, create=False)
        return cq.min_offset_in_queue if cq is not None else 0

    @_dispatched_first
    def get_commit_log_offset_in_queue(self, topic, queue_id, consume_queue_offset):
        cq = self._consume_queue(topic, queue_id, create=False)
        unit = cq.unit(consume_queue_offset) if cq is not None else None
        return unit[0] if unit else 0

    @_dispatched_first
    def get_offset_in_queue_by_time(self, topic, queue_id, timestamp):
        cq = self._consume_queue(topic, queue_id, create=False)
        if cq is None:
            return 0
        return cq.offset_by_time(timestamp, self.commit_log.pickup_store_timestamp,
                                 self.commit_log.min_offset)

    def _unit_store_time(self, cq, index):
        unit = cq.unit(index) if cq is not None else None
        if unit is None:
            return -1
        return self.commit_log.pickup_store_timestamp(unit[0], unit[1])

    @_dispatched_first
    def get_earliest_message_time(self, topic, queue_id):
        cq = self._consume_queue(topic, queue_id, create=False)
        return self._unit_store_time(cq, cq.min_offset_in_queue) if cq is not None else -1

    @_dispatched_first
    def get_message_store_timestamp(self, topic, queue_id, consume_queue_offset):
        cq = self._consume_queue(topic, queue_id, create=False)
        return self._unit_store_time(cq, consume_queue_offset)

    @_dispatched_first
    def get_message_total_in_queue(self, topic, queue_id):
        cq = self._consume_queue(topic, queue_id, create=False)
        return cq.max_offset_in_queue - cq.min_offset_in_queue if cq is not None else -1

    def select_one_message_by_offset(self, commit_log_offset):
        return self.commit_log.select_one_message(commit_log_offset)

    def look_message_by_offset(self, commit_log_offset):
        data = self.select_one_message_by_offset(commit_log_offset)
        if data is None:
            return None
        try:
            return msg.decode_record(data)
        except CodecError:
            return None

    @_dispatched_first
    def query_message(self, topic, key, max_num, begin_timestamp, end_timestamp):
        """``queryMessage``: records indexed under ``key`` (a ``KEYS`` word or ``UNIQ_KEY``)."""
        result = QueryMessageResult()
        last_query_time = end_timestamp
        for _ in range(3):
            offsets, last_ts, last_phy = self.index_service.query_offset(
                topic, key, max_num, begin_timestamp, last_query_time)
            if not offsets:
                break
            offsets.sort()
            result.index_last_update_timestamp = last_ts
            result.index_last_update_phyoffset = last_phy
            for m, offset in enumerate(offsets):
                data = self.select_one_message_by_offset(offset)
                if data is None:
                    continue
                if m == 0:
                    last_query_time = self.commit_log.pickup_store_timestamp(offset, len(data))
                result.messages.append(data)
            if result.messages or last_query_time < begin_timestamp:
                break
        return result

    def get_max_phy_offset(self):
        # the commit log's max_offset without its forwarding property: HA asks on every ack
        return self.commit_log.queue.max_offset

    def get_min_phy_offset(self):
        return self.commit_log.min_offset

    def get_earliest_message_time_overall(self):
        """``getEarliestMessageTime()``: store time of the first record in the commit log."""
        offset = self.commit_log.min_offset
        size = self.commit_log.record_size_at(offset) if offset >= 0 else None
        return self.commit_log.pickup_store_timestamp(offset, size) if size else -1

    @_dispatched_first
    def get_topics(self):
        return sorted(self.consume_queue_table)

    @_dispatched_first
    def clean_unused_topic(self, topics):
        """``cleanUnusedTopic``: delete the consume queues of every topic not in ``topics``
        (but the schedule and transaction-op topics) and forget their queue offsets; the
        records stay in the commit log until retention. The number of topics cleaned."""
        doomed = [topic for topic in self.consume_queue_table
                  if topic not in topics and topic not in _KEPT_TOPICS]
        for topic in doomed:
            for queue_id, cq in self.consume_queue_table.pop(topic).items():
                cq.destroy()
                self.commit_log.topic_queue_table.pop((topic, queue_id), None)
                _remove_empty_dir(os.path.join(self.paths["consumequeue"], topic, str(queue_id)))
            _remove_empty_dir(os.path.join(self.paths["consumequeue"], topic))
            log.info("cleanUnusedTopic: the consume queues of {topic} are deleted", topic=topic)
        return len(doomed)

    def runtime_info(self):
        now = self.now()
        info = self.stats.runtime_info(now)
        path = self.paths["commitlog"]
        ratio = self.retention.disk_used_ratio(path)
        info["commitLogDiskRatio_" + path] = java_double_str(ratio)
        info["commitLogDiskRatio"] = java_double_str(ratio)
        info["consumeQueueDiskRatio"] = java_double_str(
            self.retention.disk_used_ratio(self.paths["consumequeue"]))
        info["commitLogMinOffset"] = str(self.get_min_phy_offset())
        info["commitLogMaxOffset"] = str(self.get_max_phy_offset())
        info["dispatchBehindBytes"] = str(self.dispatch_behind_bytes())
        info["remainHowManyDataToFlush"] = _human_bytes(self.commit_log.queue.unflushed_bytes)
        info["pageCacheLockTimeMills"] = "0"
        info["earliestMessageTimeStamp"] = str(self.get_earliest_message_time_overall())
        for provider in self.runtime_info_providers:
            info.update(provider())
        return info


#: Topics ``cleanUnusedTopic`` keeps whatever the topic config says.
_KEPT_TOPICS = frozenset((SCHEDULE_TOPIC, "RMQ_SYS_TRANS_OP_HALF_TOPIC"))


def _remove_empty_dir(path):
    try:
        os.rmdir(path)
    except OSError:  # gone already, or still holds something
        pass


def _human_bytes(count):
    """``MixAll.humanReadableByteCount(bytes, false)`` (binary units)."""
    if count < 1024:
        return "%d B" % count
    exp = min((count.bit_length() - 1) // 10, 6)
    return "%.1f %siB" % (count / 1024 ** exp, "KMGTPE"[exp - 1])
