"""The ``rocketmq`` source's options and offset arithmetic (rmqproto/spark/offsets.py), no Spark."""

import re

import pytest

from rmqproto.client.route import MessageQueue
from rmqproto.spark.offsets import (EARLIEST, LATEST, OffsetRange, SourceOptions,
                                    from_json_offsets, matching_topics, parse_offsets,
                                    rate_limit, split_ranges, to_json_offsets, topic_selector)

A0, A1, B0 = MessageQueue("T", "a", 0), MessageQueue("T", "a", 1), MessageQueue("T", "b", 0)


def test_topic_names_or_a_pattern():
    assert topic_selector("Orders") == (["Orders"], None)
    assert topic_selector("Orders, Refunds,Orders") == (["Orders", "Refunds"], None)
    assert topic_selector("%RETRY%g|x") == (["%RETRY%g|x"], None)  # legal characters only
    topics, pattern = topic_selector("Orders.*")
    assert topics is None and pattern.pattern == "Orders.*"
    assert matching_topics(pattern, ["OrdersEU", "Orders", "XOrders", "%RETRY%Orders",
                                     "RMQ_SYS_TRACE_TOPIC", "TBW102"]) == ["Orders", "OrdersEU"]
    assert matching_topics(re.compile(".*"), ["SCHEDULE_TOPIC_XXXX", "%DLQ%g", "A"]) == ["A"]
    with pytest.raises(ValueError, match="topic option is required"):
        topic_selector(" ")
    with pytest.raises(ValueError, match="neither topic names nor a regular expression"):
        topic_selector("Orders(")


def test_offsets_json_round_trips_with_string_queue_ids():
    offsets = {A0: 5, A1: EARLIEST, B0: LATEST}
    data = to_json_offsets(offsets)
    assert data == {"T": {"a": {"0": 5, "1": -2}, "b": {"0": -1}}}
    assert from_json_offsets(data) == offsets
    assert parse_offsets("startingOffsets", None, "earliest") == "earliest"
    assert parse_offsets("endingOffsets", '{"T": {"a": {"1": 7}}}', "latest") == {A1: 7}
    for bad in ('{"T": {"a": {"1": -3}}}', '{"T": {"a": {"x": 1}}}', '{"T": 1}', "soon"):
        with pytest.raises(ValueError, match="startingOffsets must be earliest, latest or JSON"):
            parse_offsets("startingOffsets", bad, "latest")


def test_source_options_are_checked_at_once():
    base = {"nameServer": "ns:9876", "topic": "T"}
    options = SourceOptions(base, streaming=False)
    assert (options.starting, options.ending, options.pull_batch_size, options.fail_on_data_loss,
            options.sub_expression) == ("earliest", "latest", 32, True, "*")
    assert SourceOptions(base, streaming=True).starting == "latest"
    for extra, error in [({"nameServer": ""}, "nameServer option is required"),
                         ({"minPartitions": "0"}, "minPartitions must be at least 1"),
                         ({"pullBatchSize": "many"}, "pullBatchSize must be a whole number"),
                         ({"failOnDataLoss": "maybe"}, "failOnDataLoss must be true or false"),
                         ({"startingOffsets": "latest"}, "latest is for streaming reads only")]:
        with pytest.raises(ValueError, match=error):
            SourceOptions({**base, **extra}, streaming=False)
    with pytest.raises(ValueError, match="endingOffsets is for batch reads only"):
        SourceOptions({**base, "endingOffsets": "latest"}, streaming=True)


def test_ranges_are_split_for_min_partitions_as_kafka_does():
    ranges = [OffsetRange(A0, 0, 100), OffsetRange(A1, 10, 10), OffsetRange(B0, 0, 20)]
    assert split_ranges(ranges) == [ranges[0], ranges[2]]  # empty ranges dropped
    parts = split_ranges(ranges, min_partitions=6)
    assert len(parts) >= 6
    for queue, start, end in ((A0, 0, 100), (B0, 0, 20)):  # every offset once, in order
        mine = [p for p in parts if p.queue == queue]
        assert mine[0].start == start and mine[-1].end == end
        assert all(x.end == y.start for x, y in zip(mine, mine[1:]))
    assert split_ranges(ranges, min_partitions=2) == [ranges[0], ranges[2]]


def test_rate_limit_shares_the_limit_in_proportion():
    start = {A0: 0, A1: 0, B0: 50}
    latest = {A0: 100, A1: 0, B0: 60}
    assert rate_limit(start, latest, 1000) == latest
    ends = rate_limit(start, latest, 22)
    assert ends == {A0: 20, A1: 0, B0: 52}  # 22 * 100/110 = 20, 22 * 10/110 = 2
    assert rate_limit(start, latest, 1) == {A0: 1, A1: 0, B0: 51}  # a share under one rounds up
    assert rate_limit({}, {A0: 5}, 2) == {A0: 5}  # a queue without a start has nothing to share
