"""A broker's figures at scrape time: rocketmq-exporter's names where it has the same idea.

* ``BrokerStatsManager``'s minute window (``StatsItem#computeStatsData``), as the exporter
  reads it through ``VIEW_BROKER_STATS_DATA``: ``rocketmq_producer_tps`` (TOPIC_PUT_NUMS),
  ``rocketmq_consumer_tps`` (GROUP_GET_NUMS), their ``*_message_size`` (bytes a second),
  ``rocketmq_send_back_nums``, ``rocketmq_broker_tps`` / ``rocketmq_broker_qps``.
* The GET_BROKER_RUNTIME_INFO table (what ``mqadmin brokerStatus`` prints) as
  ``rocketmq_brokeruntime_*``, each the exporter's name for the same key.
* ``rocketmq_group_diff``: per consumer group and topic, the messages this broker holds
  beyond the group's committed offsets (``ConsumeStats#computeTotalDiff``).
* The store: ``rmqproto_store_*`` (unflushed bytes, the last commit-log flush's duration).
"""

from prometheus_client.core import GaugeMetricFamily

from rmqproto.broker.stats import (
    BROKER_GET_NUMS, BROKER_PUT_NUMS, GROUP_GET_NUMS, GROUP_GET_SIZE, MINUTE, SNDBCK_PUT_NUMS,
    TOPIC_PUT_NUMS, TOPIC_PUT_SIZE,
)
from rmqproto.metrics.families import counter, gauge

__all__ = ["BrokerCollector", "RUNTIME_METRICS", "broker_labels"]

#: GET_BROKER_RUNTIME_INFO key → rocketmq-exporter's metric name (``RMQMetricsCollector``)
RUNTIME_METRICS = {
    "commitLogMaxOffset": "rocketmq_brokeruntime_commitlog_maxoffset",
    "commitLogMinOffset": "rocketmq_brokeruntime_commitlog_minoffset",
    "commitLogDiskRatio": "rocketmq_brokeruntime_commitlog_disk_ratio",
    "consumeQueueDiskRatio": "rocketmq_brokeruntime_consumequeue_disk_ratio",
    "dispatchBehindBytes": "rocketmq_brokeruntime_dispatch_behind_bytes",
    "dispatchMaxBuffer": "rocketmq_brokeruntime_dispatch_maxbuffer",
    "earliestMessageTimeStamp": "rocketmq_brokeruntime_earliest_message_timestamp",
    "msgPutTotalTodayNow": "rocketmq_brokeruntime_msg_put_total_today_now",
    "msgPutTotalTodayMorning": "rocketmq_brokeruntime_msg_puttotal_todaymorning",
    "msgPutTotalYesterdayMorning": "rocketmq_brokeruntime_msg_puttotal_yesterdaymorning",
    "msgGetTotalTodayNow": "rocketmq_brokeruntime_msg_gettotal_today_now",
    "msgGetTotalTodayMorning": "rocketmq_brokeruntime_msg_gettotal_todaymorning",
    "msgGetTotalYesterdayMorning": "rocketmq_brokeruntime_msg_gettotal_yesterdaymorning",
    "putMessageTimesTotal": "rocketmq_brokeruntime_putmessage_times_total",
    "putMessageSizeTotal": "rocketmq_brokeruntime_put_message_size_total",
    "putMessageAverageSize": "rocketmq_brokeruntime_put_message_average_size",
    "putMessageEntireTimeMax": "rocketmq_brokeruntime_putmessage_entire_time_max",
    "getMessageEntireTimeMax": "rocketmq_brokeruntime_getmessage_entire_time_max",
    "pageCacheLockTimeMills": "rocketmq_brokeruntime_pagecache_lock_time_mills",
    "startAcceptSendRequestTimeStamp": "rocketmq_brokeruntime_start_accept_sendrequest_time",
    "putLatency99": "rocketmq_brokeruntime_put_latency_99",
    "putLatency999": "rocketmq_brokeruntime_put_latency_999",
    "sendThreadPoolQueueSize": "rocketmq_brokeruntime_send_threadpool_queue_size",
    "sendThreadPoolQueueCapacity": "rocketmq_brokeruntime_send_threadpoolqueue_capacity",
    "pullThreadPoolQueueSize": "rocketmq_brokeruntime_pull_threadpoolqueue_size",
    "pullThreadPoolQueueCapacity": "rocketmq_brokeruntime_pull_threadpoolqueue_capacity",
    "queryThreadPoolQueueSize": "rocketmq_brokeruntime_query_threadpoolqueue_size",
    "queryThreadPoolQueueCapacity": "rocketmq_brokeruntime_query_threadpool_queue_capacity",
}
#: runtime keys holding "tps10 tps60 tps600" → the exporter's name before its window suffix
RUNTIME_TPS = {
    "putTps": "rocketmq_brokeruntime_put_tps",
    "getFoundTps": "rocketmq_brokeruntime_getfound_tps",
    "getMissTps": "rocketmq_brokeruntime_getmiss_tps",
    "getTotalTps": "rocketmq_brokeruntime_gettotal_tps",
    "getTransferedTps": "rocketmq_brokeruntime_gettransfered_tps",
}
_TPS_WINDOWS = ("10", "60", "600")

_BROKER = ["cluster", "broker", "brokerId"]


def broker_labels(config):
    """The label values naming a broker: cluster, broker name, broker id."""
    return [config["brokerClusterName"], config["brokerName"], str(config["brokerId"])]


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


class BrokerCollector:
    """The figures of the :class:`~rmqproto.broker.controller.BrokerController` ``controller``."""

    def __init__(self, controller):
        self.controller = controller

    def collect(self):
        controller = self.controller
        labels = broker_labels(controller.config)
        yield from self._stats(controller.broker_stats_manager, labels)
        yield from self._runtime(controller.admin_processor.runtime_info(), labels)
        yield self._group_diff(labels)
        yield from self._store(controller.store, labels)

    @staticmethod
    def _stats(manager, labels):
        def family(name, doc, stats, extra, value):
            metric = GaugeMetricFamily(name, doc, labels=_BROKER + extra)
            for key, item in manager.sets[stats].items.items():
                parts = key.split("@", len(extra) - 1) if extra else []
                if len(parts) == len(extra):
                    metric.add_metric(labels + parts, value(item.snapshot(MINUTE)))
            return metric

        tps, total = (lambda s: s.tps), (lambda s: s.sum)
        yield family("rocketmq_producer_tps", "messages put a second per topic (last minute)",
                     TOPIC_PUT_NUMS, ["topic"], tps)
        yield family("rocketmq_producer_message_size", "bytes put a second per topic (last minute)",
                     TOPIC_PUT_SIZE, ["topic"], tps)
        yield family("rocketmq_consumer_tps", "messages got a second per topic and group "
                     "(last minute)", GROUP_GET_NUMS, ["topic", "group"], tps)
        yield family("rocketmq_consumer_message_size", "bytes got a second per topic and group "
                     "(last minute)", GROUP_GET_SIZE, ["topic", "group"], tps)
        yield family("rocketmq_send_back_nums", "messages sent back per topic and group "
                     "(last minute)", SNDBCK_PUT_NUMS, ["topic", "group"], total)
        for name, stats, doc in (("rocketmq_broker_tps", BROKER_PUT_NUMS, "messages put a second"),
                                 ("rocketmq_broker_qps", BROKER_GET_NUMS, "messages got a second")):
            item = manager.stats_item(stats, manager.cluster_name)
            yield gauge(name, doc + " by the broker (last minute)", _BROKER, labels,
                        item.snapshot(MINUTE).tps if item is not None else 0.0)

    @staticmethod
    def _runtime(info, labels):
        for key, name in RUNTIME_METRICS.items():
            value = _number(info.get(key))
            if value is not None:
                yield gauge(name, "GET_BROKER_RUNTIME_INFO " + key, _BROKER, labels, value)
        for key, prefix in RUNTIME_TPS.items():
            for window, text in zip(_TPS_WINDOWS, info.get(key, "").split(" ")):
                value = _number(text)
                if value is not None:
                    yield gauge(prefix + window, "GET_BROKER_RUNTIME_INFO %s over %s s"
                                % (key, window), _BROKER, labels, value)

    def _group_diff(self, labels):
        """``rocketmq_group_diff``: messages not yet consumed per group and topic."""
        metric = GaugeMetricFamily("rocketmq_group_diff", "messages of the topic on this broker "
                                   "beyond the group's committed offsets",
                                   labels=_BROKER + ["topic", "group"])
        store = self.controller.store
        for key, offsets in self.controller.consumer_offset_manager.offset_table.items():
            topic, _, group = key.partition("@")
            if not group:
                continue
            diff = sum(max(store.get_max_offset_in_queue(topic, queue_id) - max(offset, 0), 0)
                       for queue_id, offset in offsets.items())
            metric.add_metric(labels + [topic, group], diff)
        return metric

    @staticmethod
    def _store(store, labels):
        """The default store's flush figures (a plug-in store has none of them)."""
        flusher = getattr(store, "flusher", None)
        if flusher is None:
            return
        yield gauge("rmqproto_store_unflushed_bytes", "commit-log bytes written but not yet "
                    "flushed to disk", _BROKER, labels, flusher.queue.unflushed_bytes)
        yield gauge("rmqproto_store_flush_latency_seconds", "duration of the last commit-log "
                    "flush", _BROKER, labels, flusher.last_flush_seconds)
        yield counter("rmqproto_store_flushes", "commit-log flushes done since start",
                      _BROKER, labels, flusher.flushes)
