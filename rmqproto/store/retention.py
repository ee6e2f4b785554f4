"""Retention and disk-space protection, as Java's ``DefaultMessageStore`` does it (``CleanCommitLogService``).

Java's ``CleanCommitLogService``, ``CleanConsumeQueueService`` and the periodic
``isSpaceFull`` check. The decisions are pure functions: the time, the disk usage and
the file facts are passed in. :class:`RetentionService` applies them on the reactor clock:

* every ``cleanResourceInterval`` ms (the first pass 60 s after start), expired commit-log
  segments are deleted (never the last one). A segment is expired ``fileReservedTime``
  hours after it was last written. Deletion happens in a ``deleteWhen`` hour, when the
  disk is over ``diskMaxUsedSpaceRatio``, or in the next 20 passes after a manual
  trigger. Over ``diskSpaceCleanForciblyRatio`` (with ``cleanFileForciblyEnable``),
  segments are deleted even before they expire;
* then, once the commit log's min offset has moved, consume-queue files wholly below it
  are deleted and each queue's min offset is corrected; then index files wholly below it;
* every 10 s (the first check 1 s after start), a commit-log disk over
  ``diskSpaceWarningLevelRatio`` sets the store's disk-full flag: puts answer
  SERVICE_NOT_AVAILABLE while reads go on. The flag is cleared when usage drops.
"""

import math
import os
import re
import time
from collections import namedtuple

from twisted.internet import defer, task
from twisted.logger import Logger

from rmqproto.codec.consumequeue import CQ_STORE_UNIT_SIZE
from rmqproto.store.recovery import first_record_timestamp

__all__ = ["RetentionService", "SpaceCheck", "delete_hours", "is_time_to_delete",
           "disk_max_used_ratio", "space_check", "is_space_full", "expired_by_time",
           "expired_by_offset", "segment_write_times", "disk_partition_used_ratio",
           "delete_expired_consume_queue_files",
           "DELETE_FILES_BATCH_MAX", "MAX_MANUAL_DELETE_FILE_TIMES"]

log = Logger()

#: ``MappedFileQueue.DELETE_FILES_BATCH_MAX``: most commit-log segments deleted in one pass.
DELETE_FILES_BATCH_MAX = 10
#: ``CleanCommitLogService.MAX_MANUAL_DELETE_FILE_TIMES``: passes a manual trigger lasts.
MAX_MANUAL_DELETE_FILE_TIMES = 20
#: Seconds from start to the first cleaning pass, and to the first disk check, then between checks.
CLEAN_INITIAL_DELAY = 60.0
DISK_CHECK_INITIAL_DELAY = 1.0
DISK_CHECK_INTERVAL = 10.0

_HOUR_MS = 60 * 60 * 1000
_JAVA_INT = re.compile(r"[+-]?\d+\Z")

#: The outcome of ``isSpaceToDelete``: whether to delete now, whether to delete before
#: expiry, and the disk-full flag to set (True), clear (False) or leave (None).
SpaceCheck = namedtuple("SpaceCheck", "space_to_delete clean_immediately disk_full")


# ------------------------------------------------------------------ decisions

def _java_split(text, separator):
    """``String.split``: trailing empty parts are dropped, unless nothing matched."""
    parts = text.split(separator)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def delete_hours(delete_when):
    """The hours of ``deleteWhen`` (``"04"``, ``"04;16"``). A part that is not an integer raises
    ValueError, as ``Integer.parseInt`` throws in Java, which stops the commit-log pass."""
    hours = []
    for part in _java_split(delete_when, ";"):
        if not _JAVA_INT.match(part):
            raise ValueError("deleteWhen: %r is not an hour" % part)
        hours.append(int(part))
    return hours


def is_time_to_delete(delete_when, now_ms, localtime=time.localtime):
    """``UtilAll.isItTimeToDo``: whether the local hour of ``now_ms`` is one of ``deleteWhen``."""
    return localtime(now_ms / 1000.0).tm_hour in delete_hours(delete_when)


def disk_max_used_ratio(percent):
    """``getDiskMaxUsedSpaceRatio``: ``diskMaxUsedSpaceRatio`` clamped to 10..95, as a fraction."""
    return min(max(percent, 10), 95) / 100.0


def _disk_level(ratio, warning, forcibly):
    """One path of ``isSpaceToDelete``: ``(disk_full action, clean immediately)``."""
    if ratio > warning:
        return True, True
    if ratio > forcibly:
        return None, True
    return False, False


def space_check(physic_ratio, logics_ratio, warning, forcibly, max_used):
    """``isSpaceToDelete`` over the used ratios of the commit-log and consume-queue disks.

    Each disk over ``warning`` sets the disk-full flag and forces deletion. Over
    ``forcibly``, it only forces deletion. Otherwise it clears the flag; the consume-queue
    disk, checked second, has the last word. Deletion is due when a ratio is over
    ``max_used`` or unknown (< 0). The consume-queue disk is not looked at when the
    commit-log disk already made deletion due.
    """
    full, clean = _disk_level(physic_ratio, warning, forcibly)
    if physic_ratio < 0 or physic_ratio > max_used:
        return SpaceCheck(True, clean, full)
    logics_full, logics_clean = _disk_level(logics_ratio, warning, forcibly)
    if logics_full is not None:
        full = logics_full
    return SpaceCheck(logics_ratio < 0 or logics_ratio > max_used, clean or logics_clean, full)


def is_space_full(physic_ratio, warning):
    """``isSpaceFull`` (every 10 s): the commit-log disk is over the warning level."""
    return physic_ratio > warning


def expired_by_time(write_times, now_ms, reserved_ms, clean_immediately,
                    batch_max=DELETE_FILES_BATCH_MAX):
    """``deleteExpiredFileByTime``: how many leading segments to delete. ``write_times`` has
    one entry per segment, oldest first. The last segment is never deleted, nor any segment
    after the first one that is kept. At most ``batch_max`` are deleted."""
    count = 0
    for written in write_times[:-1]:
        if not (clean_immediately or now_ms >= written + reserved_ms):
            break
        count += 1
        if count >= batch_max:
            break
    return count


def expired_by_offset(last_unit_offsets, min_physic_offset):
    """``deleteExpiredFileByOffset``: how many leading consume-queue files to delete.

    ``last_unit_offsets`` gives the commit-log offset of each file's last unit (None when
    that unit is not written). A file goes when that offset is below the commit log's min
    offset. The last file is never deleted."""
    count = 0
    for offset in last_unit_offsets[:-1]:
        if offset is None or offset >= min_physic_offset:
            break
        count += 1
    return count


def segment_write_times(files):
    """When each commit-log segment was last written, in ms.

    Java uses the file's modification time. A segment is finished when the record that
    did not fit it is written, so we take the store time of the next segment's first
    record: it holds for copied directories and the store clock. The file's
    modification time is the fallback, and is always used for the last segment."""
    times = []
    for i, mapped in enumerate(files):
        nxt = files[i + 1] if i + 1 < len(files) else None
        written = first_record_timestamp(nxt.mm) if nxt is not None and nxt.wrote_position else None
        times.append(written if written is not None else mapped.last_modified_ms)
    return times


def disk_partition_used_ratio(path):
    """``UtilAll.getDiskPartitionSpaceUsedPercent``: the used fraction of the filesystem
    holding ``path``, rounded up to a whole percent. It is -1 when unknown. Space reserved
    for root counts as neither used nor usable."""
    try:
        st = os.statvfs(path)
    except (OSError, ValueError):
        return -1.0
    if st.f_blocks <= 0:
        return -1.0
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    entire = used + st.f_bavail * st.f_frsize
    if entire <= 0:
        return -1.0
    return math.ceil(used * 100 / entire) / 100.0


# ------------------------------------------------------------------ the service

class RetentionService:
    """Applies the rules above to one store (a ``DefaultMessageStore``) on its reactor.

    ``disk_used_ratio(path)`` gives the used fraction of the filesystem holding ``path``
    (default :func:`disk_partition_used_ratio`); tests replace it to simulate a full
    disk. ``localtime`` turns seconds into a ``struct_time`` for the ``deleteWhen`` hours.
    """

    def __init__(self, store, disk_used_ratio=disk_partition_used_ratio, localtime=time.localtime):
        self.store = store
        self.disk_used_ratio = disk_used_ratio
        self.localtime = localtime
        #: Passes left of a manual trigger (``manualDeleteFileSeveralTimes``).
        self.manual_delete_times = 0
        self.clean_immediately = False
        self.last_physical_min_offset = 0
        self._clean_loop = None
        self._disk_loop = None
        self._delayed = []

    @property
    def config(self):
        return self.store.config

    # -- lifecycle

    def start(self):
        reactor = self.store.reactor
        self._clean_loop = task.LoopingCall(self.run)
        self._clean_loop.clock = reactor
        self._disk_loop = task.LoopingCall(self.check_space_full)
        self._disk_loop.clock = reactor
        interval = self.config["cleanResourceInterval"] / 1000.0
        self._delayed = [
            reactor.callLater(CLEAN_INITIAL_DELAY, self._clean_loop.start, interval, True),
            reactor.callLater(DISK_CHECK_INITIAL_DELAY, self._disk_loop.start,
                              DISK_CHECK_INTERVAL, True),
        ]

    def stop(self):
        for call in self._delayed:
            if call.active():
                call.cancel()
        self._delayed = []
        for loop in (self._clean_loop, self._disk_loop):
            if loop is not None and loop.running:
                loop.stop()

    def execute_delete_files_manually(self):
        """``executeDeleteFilesManually``: the next 20 passes delete expired segments whatever
        the hour."""
        self.manual_delete_times = MAX_MANUAL_DELETE_FILE_TIMES
        log.info("executeDeleteFilesManually was invoked")

    # -- disk usage

    def _set_disk_full(self, full, ratio):
        flags = self.store.running_flags
        if full:
            if flags.get_and_make_disk_full():
                log.error("disk maybe full soon, used {ratio}, so mark disk full", ratio=ratio)
        elif not flags.get_and_make_disk_ok():
            log.info("disk space OK, used {ratio}, so mark disk ok", ratio=ratio)

    def check_space_full(self):
        """``isSpaceFull``: set or clear the disk-full flag from the commit-log disk (not
        after the store is shut down)."""
        if self.store.is_shutdown:
            return None
        ratio = self.disk_used_ratio(self.store.paths["commitlog"])
        full = is_space_full(ratio, self.config["diskSpaceWarningLevelRatio"])
        self._set_disk_full(full, ratio)
        return full

    def check_space_to_delete(self):
        """``isSpaceToDelete``: update the flag and ``clean_immediately``; True when over the
        ``diskMaxUsedSpaceRatio``."""
        config, paths = self.config, self.store.paths
        physic = self.disk_used_ratio(paths["commitlog"])
        logics = self.disk_used_ratio(paths["consumequeue"])
        check = space_check(physic, logics, config["diskSpaceWarningLevelRatio"],
                            config["diskSpaceCleanForciblyRatio"],
                            disk_max_used_ratio(config["diskMaxUsedSpaceRatio"]))
        self.clean_immediately = check.clean_immediately
        if check.disk_full is not None:
            self._set_disk_full(check.disk_full, max(physic, logics))
        return check.space_to_delete

    # -- one pass

    @defer.inlineCallbacks
    def run(self):
        """``cleanFilesPeriodically``: the commit-log pass, then the consume-queue pass. A
        failure of either is logged and does not stop the other or the next pass. Nothing
        happens once the store is shut down."""
        if self.store.is_shutdown:
            return
        try:
            yield self.clean_commit_log()
        except Exception:
            log.failure("CleanCommitLogService failed")
        try:
            yield self.clean_consume_queues()
        except Exception:
            log.failure("CleanConsumeQueueService failed")

    def _pause(self, interval_ms):
        return task.deferLater(self.store.reactor, interval_ms / 1000.0, lambda: None)

    def clean_commit_log(self):
        """``CleanCommitLogService.deleteExpiredFiles``; fires with the number of segments deleted."""
        config = self.config
        time_up = is_time_to_delete(config["deleteWhen"], self.store.now(), self.localtime)
        space_to_delete = self.check_space_to_delete()
        manual = self.manual_delete_times > 0
        if not (time_up or space_to_delete or manual):
            return defer.succeed(0)
        if manual:
            self.manual_delete_times -= 1
        clean_at_once = config["cleanFileForciblyEnable"] and self.clean_immediately
        log.info("deleting files older than {hours} hours: time up {t}, space full {s}, manual "
                 "passes left {m}, clean at once {c}", hours=config["fileReservedTime"],
                 t=time_up, s=space_to_delete, m=self.manual_delete_times, c=clean_at_once)
        return self.delete_expired_segments(clean_at_once, space_to_delete)

    @defer.inlineCallbacks
    def delete_expired_segments(self, clean_at_once, space_to_delete=False):
        """``CommitLog#deleteExpiredFile``: delete the expired commit-log segments (never
        the last), pausing ``deleteCommitLogFilesInterval`` between two; fires with the
        number deleted."""
        config = self.config
        queue = self.store.commit_log.queue
        count = expired_by_time(segment_write_times(queue.files), self.store.now(),
                                config["fileReservedTime"] * _HOUR_MS, clean_at_once)
        doomed = queue.files[:count]
        interval = config["deleteCommitLogFilesInterval"]
        deleted = 0
        for mapped in doomed:
            if self.store.is_shutdown:
                break
            if deleted and interval > 0:
                yield self._pause(interval)
                if self.store.is_shutdown:
                    break
            if mapped in queue.files and mapped is not queue.last_file:
                queue.remove_files([mapped])
                deleted += 1
                log.info("deleted commit-log segment {name}", name=mapped.file_name)
        if not deleted and space_to_delete:
            log.warn("disk space will be full soon, but delete file failed.")
        return deleted

    @defer.inlineCallbacks
    def clean_consume_queues(self):
        """``CleanConsumeQueueService.deleteExpiredFiles``: once the commit log's min offset has
        moved, drop consume-queue files and index files wholly below it. Fires with the
        number of consume-queue files deleted."""
        store = self.store
        min_offset = store.commit_log.min_offset
        if min_offset <= self.last_physical_min_offset:
            return 0
        self.last_physical_min_offset = min_offset
        interval = self.config["deleteConsumeQueueFilesInterval"]
        total = 0
        for queues in list(store.consume_queue_table.values()):
            for cq in list(queues.values()):
                if store.is_shutdown:
                    return total
                count = delete_expired_consume_queue_files(cq, min_offset)
                total += count
                if count and interval > 0:
                    yield self._pause(interval)
        if not store.is_shutdown:
            store.index_service.delete_expired_files(min_offset)
        return total


def delete_expired_consume_queue_files(cq, min_physic_offset):
    """``ConsumeQueue.deleteExpiredFile``: delete the leading files whose last unit is below
    ``min_physic_offset``, then correct the queue's min offset; returns the count."""
    files = cq.queue.files
    last_unit = cq.file_size - CQ_STORE_UNIT_SIZE
    offsets = []
    for mapped in files:
        unit = mapped.read(last_unit, 8)
        offsets.append(None if unit is None else int.from_bytes(unit, "big", signed=True))
    count = expired_by_offset(offsets, min_physic_offset)
    if count:
        cq.queue.remove_files(files[:count])
    cq.correct_min_offset(min_physic_offset)
    return count
