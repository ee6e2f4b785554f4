"""Broker statistics as Java's ``BrokerStatsManager`` keeps them, without a clock.

Counters (``value``, ``times``) per stats name and key, e.g. ``TOPIC_PUT_NUMS`` of a topic
or ``GROUP_GET_NUMS`` of ``topic@group``. A sampler (the broker's timers) calls
:meth:`BrokerStatsManager.sample` every 10 s (``MINUTE``), 10 min (``HOUR``) and 1 h
(``DAY``) with ``now`` in ms; each call snapshots every counter into that window's list
(``StatsItem#samplingInSeconds`` / ``InMinutes`` / ``InHour``): 7 snapshots for the
minute and hour windows, 25 for the day, the first of a counter preceded by a zero one a
period earlier. A window's :class:`StatsSnapshot` compares its oldest and newest snapshot
(``StatsItem#computeStatsData``): ``sum`` = value difference, ``tps`` = sum per second,
``times`` = times difference, ``avgpt`` = sum / times.

:class:`BrokerStats` is Java's ``BrokerStats``: the store's put and get totals recorded
each local midnight, for the ``msgPutTotal*`` / ``msgGetTotal*`` runtime keys.
"""

import collections
import datetime
import time

from rmqproto.broker.topicconfig import SCHEDULE_TOPIC

__all__ = [
    "BrokerStats", "BrokerStatsManager", "StatsItem", "StatsItemSet", "StatsSnapshot",
    "MINUTE", "HOUR", "DAY", "SAMPLE_PERIODS", "message_totals", "next_morning",
    "TOPIC_PUT_NUMS", "TOPIC_PUT_SIZE", "GROUP_GET_NUMS", "GROUP_GET_SIZE", "GROUP_GET_LATENCY",
    "SNDBCK_PUT_NUMS", "BROKER_PUT_NUMS", "BROKER_GET_NUMS", "QUEUE_PUT_NUMS", "QUEUE_PUT_SIZE",
    "QUEUE_GET_NUMS", "QUEUE_GET_SIZE",
]

# the stats names (Java's ``Stats``) this broker counts
QUEUE_PUT_NUMS = "QUEUE_PUT_NUMS"
QUEUE_PUT_SIZE = "QUEUE_PUT_SIZE"
QUEUE_GET_NUMS = "QUEUE_GET_NUMS"
QUEUE_GET_SIZE = "QUEUE_GET_SIZE"
TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
GROUP_GET_LATENCY = "GROUP_GET_LATENCY"
SNDBCK_PUT_NUMS = "SNDBCK_PUT_NUMS"
BROKER_PUT_NUMS = "BROKER_PUT_NUMS"
BROKER_GET_NUMS = "BROKER_GET_NUMS"
#: names Java keeps that nothing here counts (disk reads, commercial figures): they exist
#: and stay empty
_NEVER_COUNTED = ("GROUP_GET_FROM_DISK_NUMS", "GROUP_GET_FROM_DISK_SIZE",
                  "BROKER_GET_FROM_DISK_NUMS", "BROKER_GET_FROM_DISK_SIZE",
                  "COMMERCIAL_SEND_TIMES", "COMMERCIAL_RCV_TIMES", "COMMERCIAL_SEND_SIZE",
                  "COMMERCIAL_RCV_SIZE", "COMMERCIAL_RCV_EPOLLS", "COMMERCIAL_SNDBCK_TIMES",
                  "COMMERCIAL_PERM_FAILURES")
_QUEUE_NAMES = (QUEUE_PUT_NUMS, QUEUE_PUT_SIZE, QUEUE_GET_NUMS, QUEUE_GET_SIZE)

#: the windows, by index into :attr:`StatsItem.windows`
MINUTE, HOUR, DAY = 0, 1, 2
#: ms between samples of each window (10 s, 10 min, 1 h)
SAMPLE_PERIODS = (10 * 1000, 10 * 60 * 1000, 60 * 60 * 1000)
_WINDOW_SIZES = (7, 7, 25)

#: ``MixAll.SCHEDULE_CONSUMER_GROUP``: the group delayed delivery "gets" as
SCHEDULE_CONSUMER_GROUP = "SCHEDULE_CONSUMER"

StatsSnapshot = collections.namedtuple("StatsSnapshot", "sum tps avgpt times")
StatsSnapshot.__doc__ = "One window's figures (``StatsSnapshot``)."
_EMPTY = StatsSnapshot(0, 0.0, 0.0, 0)


class StatsItem:
    """One counter and its three windows of ``(timestamp, times, value)`` snapshots."""

    __slots__ = ("value", "times", "windows")

    def __init__(self):
        self.value = 0
        self.times = 0
        self.windows = tuple(collections.deque(maxlen=n) for n in _WINDOW_SIZES)

    def sample(self, window, now):
        """Snapshot the counter into ``window`` at ``now`` (ms)."""
        snapshots = self.windows[window]
        if not snapshots:
            snapshots.append((now - SAMPLE_PERIODS[window], 0, 0))
        snapshots.append((now, self.times, self.value))

    def snapshot(self, window):
        """``computeStatsData`` of ``window``: its oldest snapshot against its newest."""
        snapshots = self.windows[window]
        if not snapshots:
            return _EMPTY
        (first_ts, first_times, first_value), (last_ts, last_times, last_value) = (
            snapshots[0], snapshots[-1])
        total = last_value - first_value
        elapsed = last_ts - first_ts
        tps = total * 1000.0 / elapsed if elapsed > 0 else 0.0
        times = last_times - first_times
        return StatsSnapshot(total, tps, total / times if times > 0 else 0.0, times)


class StatsItemSet:
    """The counters of one stats name, by key (``StatsItemSet``)."""

    def __init__(self, name):
        self.name = name
        self.items = {}

    def item(self, key):
        """The counter of ``key``, made on first use (``getAndCreateStatsItem``)."""
        item = self.items.get(key)
        if item is None:
            item = self.items[key] = StatsItem()
        return item

    def add(self, key, value, times):
        item = self.items.get(key) or self.item(key)
        item.value += value
        item.times += times

    def sample(self, window, now):
        for item in self.items.values():
            item.sample(window, now)

    def snapshot(self, key, window):
        item = self.items.get(key)
        return _EMPTY if item is None else item.snapshot(window)

    def delete_where(self, matches):
        """Drop the counters whose key ``matches`` (``delValueByPrefixKey`` and its kin)."""
        for key in [k for k in self.items if matches(k)]:
            del self.items[key]


class BrokerStatsManager:
    """Every stats name of one broker and the events that count into them.

    ``cluster_name`` keys the broker-wide counters; ``detail`` is ``enableDetailStat``
    (per-queue counters, and per-queue keys for ``GROUP_GET_LATENCY``). Of the per-queue
    counters only delayed delivery's ``QUEUE_GET_*`` are counted; Java also counts
    ``QUEUE_PUT_*`` of sends to ``SCHEDULE_TOPIC_XXXX``, which this broker does not.
    """

    def __init__(self, cluster_name, detail=True):
        self.cluster_name = cluster_name
        self.detail = detail
        names = [TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, GROUP_GET_NUMS, GROUP_GET_SIZE,
                 GROUP_GET_LATENCY, SNDBCK_PUT_NUMS, BROKER_PUT_NUMS, BROKER_GET_NUMS]
        names += _NEVER_COUNTED
        if detail:
            names += _QUEUE_NAMES
        self.sets = {name: StatsItemSet(name) for name in names}
        # what the send path touches: a topic's two put counters in one look-up
        self._topic_puts = {}  # topic -> (TOPIC_PUT_NUMS item, TOPIC_PUT_SIZE item)
        self._broker_put = None  # made with the first put, as Java makes it

    def stats_item(self, name, key):
        """The counter ``name``/``key``, or None (``getStatsItem``)."""
        stats = self.sets.get(name)
        return None if stats is None else stats.items.get(key)

    def sample(self, window, now):
        for stats in self.sets.values():
            stats.sample(window, now)

    # ------------------------------------------------------------ events

    def on_put(self, topic, msgs, size):
        """A send stored ``msgs`` messages of ``size`` bytes under ``topic``
        (``incTopicPutNums``, ``incTopicPutSize``, ``incBrokerPutNums``)."""
        pair = self._topic_puts.get(topic)
        if pair is None:
            pair = self._topic_puts[topic] = (self.sets[TOPIC_PUT_NUMS].item(topic),
                                              self.sets[TOPIC_PUT_SIZE].item(topic))
            self._broker_put = self.sets[BROKER_PUT_NUMS].item(self.cluster_name)
        nums, sizes = pair
        nums.value += msgs
        nums.times += 1
        sizes.value += size
        sizes.times += 1
        self._broker_put.value += msgs

    def on_get(self, group, topic, queue_id, msgs, size, latency=0):
        """A pull found ``msgs`` messages of ``size`` bytes (``PullMessageProcessor``:
        ``incGroupGetNums``, ``incGroupGetSize``, ``incBrokerGetNums``,
        ``incGroupGetLatency``)."""
        key = "%s@%s" % (topic, group)
        self.sets[GROUP_GET_NUMS].add(key, msgs, 1)
        self.sets[GROUP_GET_SIZE].add(key, size, 1)
        self.sets[BROKER_GET_NUMS].item(self.cluster_name).value += msgs
        latency_key = "%d@%s@%s" % (queue_id, topic, group) if self.detail else key
        self.sets[GROUP_GET_LATENCY].add(latency_key, latency, 1)

    def on_send_back(self, group, topic, stored_topic, size):
        """CONSUMER_SEND_MSG_BACK stored a message of ``topic`` failed by ``group``, under
        ``stored_topic`` (``incSendBackNums``; a put to ``SCHEDULE_TOPIC_XXXX``, the usual
        retry, also counts as a put of that topic, without the broker-wide count)."""
        if stored_topic == SCHEDULE_TOPIC:
            self.sets[TOPIC_PUT_NUMS].add(stored_topic, 1, 1)
            self.sets[TOPIC_PUT_SIZE].add(stored_topic, size, 1)
        self.sets[SNDBCK_PUT_NUMS].add("%s@%s" % (topic, group), 1, 1)

    def on_scheduled_delivery(self, real_topic, level, msgs, size):
        """Delayed delivery put a due message back under ``real_topic``
        (``ScheduleMessageService.DeliverDelayedMessageTimerTask#onSuccess``)."""
        if self.detail:
            key = "%s@%d@%s" % (SCHEDULE_TOPIC, level - 1, SCHEDULE_CONSUMER_GROUP)
            self.sets[QUEUE_GET_NUMS].add(key, msgs, 1)
            self.sets[QUEUE_GET_SIZE].add(key, size, 1)
        key = "%s@%s" % (SCHEDULE_TOPIC, SCHEDULE_CONSUMER_GROUP)
        self.sets[GROUP_GET_NUMS].add(key, msgs, 1)
        self.sets[GROUP_GET_SIZE].add(key, size, 1)
        self.on_put(real_topic, msgs, size)

    def on_topic_deleted(self, topic):
        """``onTopicDeleted``: the topic's counters go."""
        prefix, infix = topic + "@", "@" + topic + "@"
        self._topic_puts.pop(topic, None)
        self.sets[TOPIC_PUT_NUMS].items.pop(topic, None)
        self.sets[TOPIC_PUT_SIZE].items.pop(topic, None)
        for name in (GROUP_GET_NUMS, GROUP_GET_SIZE, SNDBCK_PUT_NUMS) + _QUEUE_NAMES:
            if name in self.sets:
                self.sets[name].delete_where(lambda key: key.startswith(prefix))
        self.sets[GROUP_GET_LATENCY].delete_where(lambda key: infix in key)

    def on_group_deleted(self, group):
        """``onGroupDeleted``: the group's counters go."""
        suffix = "@" + group
        for name in (GROUP_GET_NUMS, GROUP_GET_SIZE, SNDBCK_PUT_NUMS, GROUP_GET_LATENCY,
                     QUEUE_GET_NUMS, QUEUE_GET_SIZE):
            if name in self.sets:
                self.sets[name].delete_where(lambda key: key.endswith(suffix))

    # ------------------------------------------------------------ figures

    def tps_group_get_nums(self, group, topic):
        """Messages a second ``group`` got of ``topic`` in the last minute
        (``tpsGroupGetNums``: GET_CONSUME_STATS' ``consumeTps``)."""
        return self.sets[GROUP_GET_NUMS].snapshot("%s@%s" % (topic, group), MINUTE).tps


def message_totals(store, manager):
    """``(messages put, messages got)`` since the store started: Java's
    ``StoreStatsService`` ``putMessageTimesTotal`` and ``getMessageTransferedMsgCount``
    where the store keeps them (``store.stats``), else the broker's ``BROKER_PUT_NUMS`` and
    ``BROKER_GET_NUMS``."""
    stats = getattr(store, "stats", None)
    if stats is not None:
        return stats.put_times_total, stats.get_transferred
    items = (manager.stats_item(name, manager.cluster_name)
             for name in (BROKER_PUT_NUMS, BROKER_GET_NUMS))
    return tuple(0 if item is None else item.value for item in items)


def next_morning(now):
    """``UtilAll.computeNextMorningTimeMillis``: the next local midnight after ``now`` (ms)."""
    tomorrow = datetime.date.fromtimestamp(now / 1000) + datetime.timedelta(days=1)
    return int(time.mktime(tomorrow.timetuple()) * 1000)


class BrokerStats:
    """The store's put and get totals at the last two local midnights (``BrokerStats``).

    Until the first midnight both are 0, as in Java; :meth:`record` runs at each midnight.
    """

    def __init__(self):
        self.put_yesterday_morning = 0
        self.put_today_morning = 0
        self.get_yesterday_morning = 0
        self.get_today_morning = 0

    def record(self, put_total, get_total):
        self.put_yesterday_morning = self.put_today_morning
        self.get_yesterday_morning = self.get_today_morning
        self.put_today_morning = put_total
        self.get_today_morning = get_total

    def runtime_info(self, put_total, get_total):
        """The ``msgPutTotal*`` and ``msgGetTotal*`` runtime keys (``prepareRuntimeInfo``)."""
        return {
            "msgPutTotalYesterdayMorning": str(self.put_yesterday_morning),
            "msgPutTotalTodayMorning": str(self.put_today_morning),
            "msgPutTotalTodayNow": str(put_total),
            "msgGetTotalYesterdayMorning": str(self.get_yesterday_morning),
            "msgGetTotalTodayMorning": str(self.get_today_morning),
            "msgGetTotalTodayNow": str(get_total),
        }
