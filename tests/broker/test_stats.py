"""Broker statistics on a fake clock: the sampling windows and figures of Java's
``StatsItem`` / ``StatsItemSet``, the events ``BrokerStatsManager`` counts, the daily
``BrokerStats``, and the requests that read them."""

import datetime

import pytest

from rmqproto.broker.stats import (
    BROKER_GET_NUMS, BROKER_PUT_NUMS, DAY, GROUP_GET_LATENCY, GROUP_GET_NUMS, GROUP_GET_SIZE,
    HOUR, MINUTE, QUEUE_GET_NUMS, SNDBCK_PUT_NUMS, TOPIC_PUT_NUMS, TOPIC_PUT_SIZE,
    BrokerStats, BrokerStatsManager, StatsItem, StatsSnapshot, message_totals, next_morning,
)
from rmqproto.broker.statssampler import StatsSampler
from rmqproto.codec import headers as h
from rmqproto.codec.bodies.offsets import ConsumeStats
from rmqproto.codec.bodies.route import KVTable
from rmqproto.codec.bodies.stats import BrokerStatsData, ConsumeStatsList, QueryConsumeTimeSpanBody
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.broker.controller import BrokerController
from brokerkit import NOW_MS, broker_config, call, make_controller
from consume_support import Controller, result_of
from store.store_support import stores  # noqa: F401 (a fixture: real stores)
from test_pull import pull, put
from test_send import send

T0 = 1_700_000_000_000


def java_snapshot(first, last):
    """``StatsItem#computeStatsData`` written out from Java's formulas, for
    ``(timestamp, times, value)`` snapshots."""
    total = last[2] - first[2]
    times = last[1] - first[1]
    return StatsSnapshot(total, total * 1000.0 / (last[0] - first[0]),
                         total * 1.0 / times if times > 0 else 0.0, times)


def test_an_item_never_sampled_is_empty():
    item = StatsItem()
    item.value, item.times = 5, 5
    assert item.snapshot(MINUTE) == StatsSnapshot(0, 0.0, 0.0, 0)


def test_first_sample_compares_with_zero_one_period_before():
    item = StatsItem()
    item.value, item.times = 300, 3  # three puts of 100 bytes
    item.sample(MINUTE, T0)
    assert list(item.windows[MINUTE]) == [(T0 - 10_000, 0, 0), (T0, 3, 300)]
    assert item.snapshot(MINUTE) == StatsSnapshot(300, 30.0, 100.0, 3)


@pytest.mark.parametrize("window, period, kept", [
    (MINUTE, 10_000, 7), (HOUR, 600_000, 7), (DAY, 3_600_000, 25)])
def test_each_window_keeps_its_last_snapshots(window, period, kept):
    """7 snapshots 10 s apart make the minute (60 s), 7 × 10 min the hour, 25 × 1 h the day;
    the figures compare the oldest kept snapshot with the newest."""
    item = StatsItem()
    snapshots = []
    for step in range(40):
        item.value += 7 * step  # an uneven rate
        item.times += step % 3
        now = T0 + step * period
        item.sample(window, now)
        snapshots.append((now, item.times, item.value))
    kept_snapshots = list(item.windows[window])
    assert len(kept_snapshots) == kept
    assert kept_snapshots == snapshots[-kept:]
    assert item.snapshot(window) == java_snapshot(snapshots[-kept], snapshots[-1])
    assert item.snapshot(window).sum == sum(7 * s for s in range(40 - kept + 1, 40))


def test_windows_are_sampled_apart():
    item = StatsItem()
    item.value = item.times = 1
    item.sample(HOUR, T0)
    assert item.snapshot(MINUTE).sum == 0 and item.snapshot(HOUR).sum == 1
    assert item.snapshot(HOUR).tps == pytest.approx(1 / 600)


def test_a_value_only_counter_has_no_average():
    """BROKER_PUT_NUMS grows its value only (``incBrokerPutNums``): avgpt stays 0."""
    manager = BrokerStatsManager("DefaultCluster")
    manager.on_put("T", 4, 400)
    manager.sample(MINUTE, T0)
    snapshot = manager.stats_item(BROKER_PUT_NUMS, "DefaultCluster").snapshot(MINUTE)
    assert snapshot == StatsSnapshot(4, 0.4, 0.0, 0)


def test_puts_count_per_topic_and_broker():
    manager = BrokerStatsManager("C")
    manager.on_put("T", 1, 150)
    manager.on_put("T", 3, 450)  # a batch of 3
    manager.on_put("U", 1, 100)
    nums, size = manager.stats_item(TOPIC_PUT_NUMS, "T"), manager.stats_item(TOPIC_PUT_SIZE, "T")
    assert (nums.value, nums.times, size.value, size.times) == (4, 2, 600, 2)
    assert manager.stats_item(BROKER_PUT_NUMS, "C").value == 5
    assert manager.stats_item(TOPIC_PUT_NUMS, "V") is None
    assert manager.stats_item("NO_SUCH_STATS", "T") is None


def test_gets_count_per_topic_at_group():
    manager = BrokerStatsManager("C")
    manager.on_get("g", "T", 2, 5, 500)
    manager.on_get("g", "T", 3, 1, 100)
    nums = manager.stats_item(GROUP_GET_NUMS, "T@g")
    assert (nums.value, nums.times) == (6, 2)
    assert manager.stats_item(GROUP_GET_SIZE, "T@g").value == 600
    assert manager.stats_item(BROKER_GET_NUMS, "C").value == 6
    assert manager.stats_item(GROUP_GET_LATENCY, "2@T@g").times == 1
    plain = BrokerStatsManager("C", detail=False)
    plain.on_get("g", "T", 2, 5, 500)
    assert plain.stats_item(GROUP_GET_LATENCY, "T@g").times == 1
    assert QUEUE_GET_NUMS not in plain.sets


def test_group_get_tps_is_the_minute_rate():
    manager = BrokerStatsManager("C")
    manager.sample(MINUTE, T0)
    manager.on_get("g", "T", 0, 30, 3000)
    assert manager.tps_group_get_nums("g", "T") == 0.0  # not sampled yet
    manager.sample(MINUTE, T0 + 10_000)
    assert manager.tps_group_get_nums("g", "T") == 3.0
    assert manager.tps_group_get_nums("other", "T") == 0.0


def test_send_back_counts_the_original_topic_and_the_schedule_put():
    manager = BrokerStatsManager("C")
    manager.on_send_back("g", "T", "SCHEDULE_TOPIC_XXXX", 200)
    manager.on_send_back("g", "T", "%DLQ%g", 200)
    assert manager.stats_item(SNDBCK_PUT_NUMS, "T@g").value == 2
    assert manager.stats_item(TOPIC_PUT_NUMS, "SCHEDULE_TOPIC_XXXX").value == 1
    assert manager.stats_item(TOPIC_PUT_NUMS, "%DLQ%g") is None
    assert manager.stats_item(BROKER_PUT_NUMS, "C") is None  # not a put of the broker's


def test_scheduled_delivery_gets_from_the_schedule_topic_and_puts_the_real_one():
    manager = BrokerStatsManager("C")
    manager.on_scheduled_delivery("T", 3, 1, 120)
    assert manager.stats_item(GROUP_GET_NUMS, "SCHEDULE_TOPIC_XXXX@SCHEDULE_CONSUMER").value == 1
    assert manager.stats_item(QUEUE_GET_NUMS, "SCHEDULE_TOPIC_XXXX@2@SCHEDULE_CONSUMER").value == 1
    assert manager.stats_item(TOPIC_PUT_NUMS, "T").value == 1
    assert manager.stats_item(BROKER_PUT_NUMS, "C").value == 1


def test_deleting_a_topic_or_group_drops_their_counters():
    manager = BrokerStatsManager("C")
    manager.on_put("T", 1, 10)
    manager.on_put("T2", 1, 10)
    for group in ("g", "h"):
        manager.on_get(group, "T", 0, 1, 10)
        manager.on_get(group, "T2", 0, 1, 10)
    manager.on_topic_deleted("T")
    assert manager.stats_item(TOPIC_PUT_NUMS, "T") is None
    assert manager.stats_item(GROUP_GET_NUMS, "T@g") is None
    assert manager.stats_item(GROUP_GET_LATENCY, "0@T@h") is None
    assert manager.stats_item(GROUP_GET_NUMS, "T2@g") is not None
    manager.on_put("T", 1, 10)  # counts afresh
    assert manager.stats_item(TOPIC_PUT_NUMS, "T").value == 1
    manager.on_group_deleted("g")
    assert manager.stats_item(GROUP_GET_NUMS, "T2@g") is None
    assert manager.stats_item(GROUP_GET_NUMS, "T2@h") is not None


def test_broker_stats_record_moves_today_to_yesterday():
    stats = BrokerStats()
    assert stats.runtime_info(7, 3) == {
        "msgPutTotalYesterdayMorning": "0", "msgPutTotalTodayMorning": "0",
        "msgPutTotalTodayNow": "7", "msgGetTotalYesterdayMorning": "0",
        "msgGetTotalTodayMorning": "0", "msgGetTotalTodayNow": "3"}
    stats.record(10, 4)
    stats.record(25, 9)
    info = stats.runtime_info(30, 12)
    assert (info["msgPutTotalYesterdayMorning"], info["msgPutTotalTodayMorning"],
            info["msgPutTotalTodayNow"]) == ("10", "25", "30")
    assert (info["msgGetTotalYesterdayMorning"], info["msgGetTotalTodayMorning"]) == ("4", "9")


@pytest.mark.parametrize("now", [T0, T0 + 12 * 3_600_000, 0])
def test_next_morning_is_the_next_local_midnight(now):
    morning = next_morning(now)
    assert 0 < morning - now <= 24 * 3_600_000 + 3_600_000  # a daylight-saving day: 25 h
    local = datetime.datetime.fromtimestamp(morning / 1000)
    assert (local.hour, local.minute, local.second, local.microsecond) == (0, 0, 0, 0)


# ---------------------------------------------------------------- on a whole controller

@pytest.fixture
def broker(tmp_path):
    broker = make_controller(tmp_path)
    yield broker
    broker.stats_sampler.stop()


def view(broker, name, key):
    return call(broker, RC.VIEW_BROKER_STATS_DATA, h.ViewBrokerStatsDataRequestHeader(
        stats_name=name, stats_key=key).to_ext_fields())


def test_sampler_samples_at_start_and_every_period(broker):
    broker.stats_sampler.start()
    for _ in range(3):
        assert send(broker, topic="StatsTopic", body=b"x" * 50).code == R.SUCCESS
    before = view(broker, TOPIC_PUT_NUMS, "StatsTopic")
    assert BrokerStatsData.from_json(before.body).stats_minute.sum == 0
    broker.reactor.advance(10)
    data = BrokerStatsData.from_json(view(broker, TOPIC_PUT_NUMS, "StatsTopic").body)
    assert (data.stats_minute.sum, data.stats_minute.tps, data.stats_minute.avgpt) == (3, 0.3, 1.0)
    assert data.stats_hour.sum == 0 and data.stats_day.sum == 0
    for _ in range(59):
        broker.reactor.advance(10)
    data = BrokerStatsData.from_json(view(broker, TOPIC_PUT_NUMS, "StatsTopic").body)
    assert data.stats_minute.sum == 0 and data.stats_hour.sum == 3


def test_view_of_an_unknown_counter_is_refused(broker):
    answer = view(broker, TOPIC_PUT_NUMS, "NoSuchTopic")
    assert (answer.code, answer.remark) == (
        R.SYSTEM_ERROR, "The stats <TOPIC_PUT_NUMS> <NoSuchTopic> not exist")


def test_runtime_info_days_roll_at_local_midnight(broker):
    broker.stats_sampler.start()
    send(broker)
    send(broker)
    table = KVTable.from_json(call(broker, RC.GET_BROKER_RUNTIME_INFO).body).table
    assert (table["msgPutTotalYesterdayMorning"], table["msgPutTotalTodayMorning"],
            table["msgPutTotalTodayNow"]) == ("0", "0", "2")
    broker.reactor.advance((next_morning(NOW_MS) - NOW_MS) / 1000)
    send(broker)
    table = KVTable.from_json(call(broker, RC.GET_BROKER_RUNTIME_INFO).body).table
    assert (table["msgPutTotalYesterdayMorning"], table["msgPutTotalTodayMorning"],
            table["msgPutTotalTodayNow"]) == ("0", "2", "3")
    broker.reactor.advance(24 * 3600)
    table = KVTable.from_json(call(broker, RC.GET_BROKER_RUNTIME_INFO).body).table
    assert (table["msgPutTotalYesterdayMorning"], table["msgPutTotalTodayMorning"]) == ("2", "3")
    assert table["msgGetTotalTodayNow"] == "0"


def test_sampler_stop_cancels_its_timers(tmp_path):
    broker = make_controller(tmp_path)
    before = len(broker.reactor.getDelayedCalls())
    sampler = StatsSampler(broker.reactor, broker.broker_stats_manager, lambda: None)
    sampler.start()
    assert len(broker.reactor.getDelayedCalls()) == before + 4  # three windows and midnight
    sampler.stop()
    assert len(broker.reactor.getDelayedCalls()) == before


def test_broker_consume_stats_lists_every_group(broker):
    broker.consumer_offset_manager.commit_offset("g1", "TopicA", 1, 1)
    for _ in range(2):
        send(broker, topic="TopicA", queue_id=1)
    broker.subscription_group_manager.find_subscription_group_config("g1")
    broker.broker_stats_manager.on_get("g1", "TopicA", 1, 20, 2000)
    broker.broker_stats_manager.sample(MINUTE, NOW_MS)
    answer = call(broker, RC.GET_BROKER_CONSUME_STATS, {"isOrder": "false"})
    assert answer.code == R.SUCCESS
    stats_list = ConsumeStatsList.from_json(answer.body)
    assert stats_list.broker_addr == broker.broker_addr
    groups = {group: stats for entry in stats_list.consume_stats_list
              for group, stats in entry.items()}
    assert set(groups) >= {"g1"} and all(groups[g] == [] for g in groups if g != "g1")
    (stats,) = groups["g1"]
    write_queues = broker.topic_config_manager.select_topic_config("TopicA").write_queue_nums
    assert len(stats.offset_table) == write_queues
    assert stats.total_diff() == stats_list.total_diff == 1
    assert stats.consume_tps == 2.0
    ordered = ConsumeStatsList.from_json(
        call(broker, RC.GET_BROKER_CONSUME_STATS, {"isOrder": "true"}).body)
    assert all(stats == [] for entry in ordered.consume_stats_list for stats in entry.values())


def test_consume_stats_carry_the_group_get_tps(broker):
    send(broker, topic="TopicA", queue_id=1)
    broker.consumer_offset_manager.commit_offset("g1", "TopicA", 1, 0)
    broker.broker_stats_manager.on_get("g1", "TopicA", 1, 5, 500)
    broker.broker_stats_manager.sample(MINUTE, NOW_MS)
    answer = call(broker, RC.GET_CONSUME_STATS, h.GetConsumeStatsRequestHeader(
        consumer_group="g1", topic="TopicA").to_ext_fields())
    assert ConsumeStats.from_json(answer.body).consume_tps == 0.5


def test_consume_time_span_of_each_write_queue(broker):
    stored = []
    for _ in range(3):
        send(broker, topic="TopicA", queue_id=1)
        stored.append(broker.store.records("TopicA", 1)[-1].store_timestamp)
        broker.reactor.advance(2)
    broker.consumer_offset_manager.commit_offset("g1", "TopicA", 1, 1)
    now = int(broker.reactor.seconds() * 1000)
    answer = call(broker, RC.QUERY_CONSUME_TIME_SPAN, h.QueryConsumeTimeSpanRequestHeader(
        topic="TopicA", group="g1").to_ext_fields())
    assert answer.code == R.SUCCESS
    spans = QueryConsumeTimeSpanBody.from_json(answer.body).consume_time_span_set
    write_queues = broker.topic_config_manager.select_topic_config("TopicA").write_queue_nums
    assert [s.message_queue.queue_id for s in spans] == list(range(write_queues))
    one = spans[1]
    assert (one.min_time_stamp, one.max_time_stamp, one.consume_time_stamp, one.delay_time) == (
        stored[0], stored[2], stored[0], now - stored[1])
    assert one.message_queue.broker_name == "broker-a"
    assert one.min_time_stamp_str.count("#") == 1 and one.min_time_stamp_str.endswith(
        ":%03d" % (stored[0] % 1000))
    # an empty queue: no times (-1), and Java's delay from a store time of -1
    empty = spans[0]
    assert (empty.min_time_stamp, empty.max_time_stamp, empty.consume_time_stamp,
            empty.delay_time) == (-1, -1, -1, now + 1)
    missing = call(broker, RC.QUERY_CONSUME_TIME_SPAN, h.QueryConsumeTimeSpanRequestHeader(
        topic="Nope", group="g1").to_ext_fields())
    assert (missing.code, missing.remark) == (R.TOPIC_NOT_EXIST, "topic[Nope] not exist")


# ---------------------------------------------------------------- the counting paths

def test_pulls_and_send_backs_are_counted(tmp_path):
    broker = Controller(tmp_path)
    broker.topic("T")
    stored = [put(broker, body=b"m%d" % i) for i in range(3)]
    response = pull(broker)
    assert response.code == R.SUCCESS
    manager = broker.broker_stats_manager
    nums = manager.stats_item(GROUP_GET_NUMS, "T@g")
    assert (nums.value, nums.times) == (3, 1)
    assert manager.stats_item(GROUP_GET_SIZE, "T@g").value == len(response.body)
    assert manager.stats_item(BROKER_GET_NUMS, broker.config["brokerClusterName"]).value == 3
    assert pull(broker, offset=3).code == R.PULL_NOT_FOUND  # not counted
    assert manager.stats_item(GROUP_GET_NUMS, "T@g").times == 1

    back = h.ConsumerSendMsgBackRequestHeader(offset=stored[0].append_result.wrote_offset,
                                              group="g", delay_level=0, max_reconsume_times=1)
    assert result_of(broker.call(RC.CONSUMER_SEND_MSG_BACK, back)).code == R.SUCCESS
    back.offset = broker.store.puts[-1].commit_log_offset  # the retry: now to the DLQ
    assert result_of(broker.call(RC.CONSUMER_SEND_MSG_BACK, back)).code == R.SUCCESS
    assert manager.stats_item(SNDBCK_PUT_NUMS, "T@g").value == 2
    assert manager.stats_item(TOPIC_PUT_NUMS, "SCHEDULE_TOPIC_XXXX").value == 1


def test_a_delayed_send_counts_under_the_schedule_topic(tmp_path, stores):
    store = stores.open()
    broker = BrokerController(broker_config(tmp_path), store.reactor, store=store)
    plain = {"WAIT": "true", "TAGS": "TagA"}
    assert send(broker, properties=plain).code == R.SUCCESS
    assert send(broker, properties=dict(plain, DELAY="3")).code == R.SUCCESS
    manager = broker.broker_stats_manager
    assert manager.stats_item(TOPIC_PUT_NUMS, "TopicA").value == 1
    assert manager.stats_item(TOPIC_PUT_NUMS, "SCHEDULE_TOPIC_XXXX").value == 1
    table = KVTable.from_json(call(broker, RC.GET_BROKER_RUNTIME_INFO).body).table
    assert table["msgPutTotalTodayNow"] == "2"  # the store's count


def test_the_broker_wide_counters_appear_with_the_first_count():
    """As Java's ``getAndCreateStatsItem``: no BROKER_PUT_NUMS item before a put."""
    manager = BrokerStatsManager("C")
    assert manager.stats_item(BROKER_PUT_NUMS, "C") is None
    assert message_totals(None, manager) == (0, 0)
    manager.on_put("T", 2, 20)
    manager.on_get("g", "T", 0, 1, 10)
    assert message_totals(None, manager) == (2, 1)
