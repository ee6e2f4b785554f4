"""The ``rocketmq`` format (docs/spark.md) in Spark local mode against ``twistd -n rmq-local``
and against the Java 4.9.7 NameServer and broker, the same tests on both: a batch read
returns exactly what was sent; a streaming query stopped and restarted mid-stream writes
every message once into Parquet; the sink's 100k rows read back whole; offsets deleted by
retention fail a read or are skipped (``failOnDataLoss``)."""

import json
import os
import time

import pytest

from rmqproto.client import Message
from rmqproto.client.blocking import Producer, now_ms
from support.interop import java_available
from support.javapeers import JavaPeers
from support.syncclient import wait_until
from sparkclusters import JavaCluster, LocalCluster

pytestmark = pytest.mark.java

READ, TIMED, STREAM, STREAM_NEW, WRITTEN, PIPED, LOST, FILLER = (
    "SparkRead", "SparkTimed", "SparkStream", "SparkStreamLater", "SparkWritten", "SparkPiped",
    "SparkLost", "SparkFiller")


@pytest.fixture(scope="module")
def clusters(tmp_path_factory):
    """Both clusters at once, so that their first 60 s (before retention can run) overlap
    each other and the tests before the retention tests."""
    if not java_available():
        pytest.skip("Java 17 and Maven are not installed")
    workdir = tmp_path_factory.mktemp("rocketmq")
    (workdir / "ours").mkdir()
    (workdir / "java").mkdir()
    peers = JavaPeers(workdir / "java")
    started = {}
    try:
        started["ours"] = LocalCluster(workdir / "ours")
        started["java"] = JavaCluster(peers)
        for cluster in started.values():
            cluster.create_topics(READ, TIMED, STREAM, WRITTEN, PIPED, LOST, FILLER)
        yield started
    finally:
        for cluster in started.values():
            cluster.stop()
        peers.stop_all()


@pytest.fixture(params=["ours", "java"])
def cluster(request, clusters):
    return clusters[request.param]


def send(cluster, topic, count, prefix):
    """``count`` messages (tags, keys, properties, every seventh compressed); body ->
    (Message, SendResult)."""
    sent = {}
    with Producer(namesrvAddr=cluster.namesrv_addr, producerGroup="spark_tests") as producer:
        for i in range(count):
            body = "%s-%d" % (prefix, i) + ("z" * 6000 if i % 7 == 3 else "")
            message = Message(topic, body, tags="Tag%d" % (i % 3), keys=["%s-k%d" % (prefix, i), "both"],
                              properties={"origin": prefix, "index": str(i)})
            sent[body] = (message, producer.send(message))
    return sent


def read(spark, cluster, topic, **options):
    reader = spark.read.format("rocketmq").option("nameServer", cluster.namesrv_addr) \
        .option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def check_rows(rows, sent):
    assert sorted(row.body.decode() for row in rows) == sorted(sent)
    for row in rows:
        message, result = sent[row.body.decode()]
        assert (row.topic, row.tags, row.keys) == (message.topic, message.tags, " ".join(message.keys))
        assert {k: row.properties[k] for k in message.properties} == message.properties
        assert row.properties["UNIQ_KEY"] == result.msg_id and row.msgId == result.offset_msg_id
        assert (row.brokerName, row.queueId, row.queueOffset) == (
            result.queue.broker_name, result.queue.queue_id, result.queue_offset)


def test_a_batch_read_returns_what_was_sent(spark, cluster):
    sent = send(cluster, READ, 90, "batch-" + cluster.kind)
    frame = read(spark, cluster, READ)
    check_rows(frame.collect(), sent)
    assert frame.rdd.getNumPartitions() == 4  # one per queue
    assert read(spark, cluster, READ, minPartitions=10).rdd.getNumPartitions() >= 10
    assert read(spark, cluster, READ, minPartitions=10).count() == 90
    tagged = read(spark, cluster, READ, subExpression="Tag1 || Tag2").collect()
    assert sorted(r.body.decode() for r in tagged) == sorted(
        body for body, (m, _) in sent.items() if m.tags in ("Tag1", "Tag2"))


def test_offsets_and_timestamps_choose_the_rows(spark, cluster):
    first = send(cluster, TIMED, 40, "early")
    results = [result for _, result in first.values()]
    broker = results[0].queue.broker_name
    between = max(read(spark, cluster, TIMED).collect(), key=lambda r: r.storeTimestamp)
    cut = int(between.storeTimestamp.timestamp() * 1000) + 1
    wait_until(lambda: now_ms() > cut + 1, interval=0.001)
    later = send(cluster, TIMED, 12, "late")

    def bodies(**options):
        return sorted(r.body.decode() for r in read(spark, cluster, TIMED, **options).collect())
    assert bodies(startingTimestamp=cut) == sorted(later)
    assert bodies(endingTimestamp=cut) == sorted(first)
    queue0 = {"%s" % TIMED: {broker: {"0": 2}}}
    expected = sorted(body for body, (_, r) in {**first, **later}.items()
                      if r.queue.queue_id == 0 and 2 <= r.queue_offset < 5)
    assert bodies(startingOffsets=json.dumps(queue0),
                  endingOffsets=json.dumps({TIMED: {broker: {"0": 5, "1": -2, "2": -2, "3": -2}}})
                  ) == expected


def _wait_progress(query, batches):
    wait_until(lambda: sum(p["numInputRows"] > 0 for p in query.recentProgress) >= batches
               or query.exception(), timeout=60)
    assert query.exception() is None, query.exception()


def test_a_stream_stopped_and_restarted_writes_every_message_once(spark, cluster, tmp_path):
    pattern = "SparkStream.*"
    sent = send(cluster, STREAM, 60, "stream-" + cluster.kind)
    output, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")

    def start(trigger):
        stream = (spark.readStream.format("rocketmq").option("nameServer", cluster.namesrv_addr)
                  .option("topic", pattern).option("startingOffsets", "earliest")
                  .option("maxOffsetsPerTrigger", 20).load()
                  .selectExpr("topic", "body", "queueId", "queueOffset"))
        return (stream.writeStream.format("parquet").option("path", output)
                .option("checkpointLocation", checkpoint).trigger(**trigger).start())

    query = start(dict(processingTime="1 hour"))  # one micro-batch, then it waits
    try:
        _wait_progress(query, 1)
    finally:
        query.stop()
    assert 0 < spark.read.parquet(output).count() <= 20  # stopped mid-stream
    more = send(cluster, STREAM, 30, "more-" + cluster.kind)
    cluster.create_topics(STREAM_NEW + cluster.kind)  # a new topic the pattern matches
    newer = send(cluster, STREAM_NEW + cluster.kind, 10, "new-" + cluster.kind)
    query = start(dict(availableNow=True))
    assert query.awaitTermination(120)
    assert query.exception() is None
    rows = spark.read.parquet(output).collect()
    assert sorted(r.body.decode() for r in rows) == sorted({**sent, **more, **newer})
    assert len({(r.topic, r.queueId, r.queueOffset) for r in rows}) == len(rows)


def test_a_write_of_100k_rows_reads_back_whole(spark, cluster):
    rows = 100_000
    frame = spark.range(rows).selectExpr(
        "cast(id as string) as body", "concat('k', id) as keys",
        "concat('T', id % 3) as tags", "map('n', cast(id as string)) as properties")
    frame.write.format("rocketmq").option("nameServer", cluster.namesrv_addr) \
        .option("topic", WRITTEN).mode("append").save()
    back = read(spark, cluster, WRITTEN, minPartitions=4)
    assert back.count() == rows
    summary = back.selectExpr("count(distinct body) as bodies",
                              "sum(cast(cast(body as string) = substr(keys, 2) as int)) as keyed",
                              "sum(cast(tags = concat('T', cast(body as string) % 3) as int)) as tagged",
                              "sum(cast(properties['n'] = cast(body as string) as int)) as props"
                              ).collect()[0]
    assert tuple(summary) == (rows, rows, rows, rows)


def test_a_stream_writes_to_a_topic(spark, cluster, tmp_path):
    """readStream of one topic into writeStream of another: each row once more there."""
    expected = read(spark, cluster, READ).count()
    stream = (spark.readStream.format("rocketmq").option("nameServer", cluster.namesrv_addr)
              .option("topic", READ).option("startingOffsets", "earliest").load()
              .selectExpr("body", "tags", "keys", "properties"))
    query = (stream.writeStream.format("rocketmq").option("nameServer", cluster.namesrv_addr)
             .option("topic", PIPED).option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(120)
    assert query.exception() is None
    source = sorted((r.body, r.tags, r.keys) for r in read(spark, cluster, READ).collect())
    piped = sorted((r.body, r.tags, r.keys) for r in read(spark, cluster, PIPED).collect())
    assert len(piped) == expected and piped == source


@pytest.mark.parametrize("frame, error", [
    ("select 'x' as payload", "needs a body column"),
    ("select 1 as body", "column body must be binary or string, not int"),
    ("select 'x' as body, 5 as tags", "column tags must be string, not int"),
])
def test_the_sink_refuses_frames_it_cannot_write(spark, clusters, frame, error):
    with pytest.raises(Exception, match=error):
        spark.sql(frame).write.format("rocketmq").option("nameServer", clusters["ours"].namesrv_addr) \
            .option("topic", WRITTEN).mode("append").save()


def test_the_sink_fails_clearly_when_no_nameserver_answers(spark, clusters):
    with pytest.raises(Exception, match="cannot reach the NameServer 127.0.0.1:1"):
        spark.sql("select 'x' as body").write.format("rocketmq").option("nameServer", "127.0.0.1:1") \
            .option("topic", WRITTEN).mode("append").save()


def _min_offsets(spark, cluster, topic):
    from rmqproto.spark.brokers import Brokers
    with Brokers(cluster.namesrv_addr, "spark_tests_bounds") as brokers:
        return {q.queue_id: brokers.bounds(q)[0] for q in brokers.queues([topic])}


def test_offsets_deleted_by_retention_fail_the_read_or_are_skipped(spark, cluster, tmp_path):
    gone = send(cluster, LOST, 40, "lost-" + cluster.kind)
    with Producer(namesrvAddr=cluster.namesrv_addr, producerGroup="spark_tests") as producer:
        for _ in range(8):  # roll the commit log on: the messages above are in full segments
            producer.send(Message(FILLER, os.urandom(200_000)))
    kept = send(cluster, LOST, 8, "kept-" + cluster.kind)  # in the last segment, which stays
    wait_until(lambda: time.monotonic() - cluster.started > 61, timeout=90, interval=0.5)
    cluster.delete_expired_segments()
    seen = []
    try:  # a queue's min offset moves to its first message left (ConsumeQueue#correctMinOffset)
        low = wait_until(lambda: (lambda m: seen.append(m) or (m if min(m.values()) > 0 else None))(
            _min_offsets(spark, cluster, LOST)), timeout=60)
    except TimeoutError:
        raise AssertionError("min offsets of %s: %s" % (LOST, seen[-1:])) from None
    assert low == {q: 10 for q in range(4)}
    kept = sorted(kept)
    everything = json.dumps({LOST: {_broker_of(gone): {str(q): 0 for q in range(4)}}})
    with pytest.raises(Exception, match=r"offsets 0 to 9 of %s/.* were deleted by retention" % LOST):
        read(spark, cluster, LOST, startingOffsets=everything).collect()
    skipped = read(spark, cluster, LOST, startingOffsets=everything, failOnDataLoss="false")
    assert sorted(r.body.decode() for r in skipped.collect()) == kept

    def stream(fail):  # a stream from offsets that were deleted: the same two ways
        return (spark.readStream.format("rocketmq").option("nameServer", cluster.namesrv_addr)
                .option("topic", LOST).option("startingOffsets", everything)
                .option("failOnDataLoss", fail).load().selectExpr("body").writeStream
                .format("parquet").option("path", str(tmp_path / fail))
                .option("checkpointLocation", str(tmp_path / ("cp" + fail)))
                .trigger(availableNow=True).start())
    failing = stream("true")
    with pytest.raises(Exception, match="were deleted by retention"):
        failing.awaitTermination(120)
    assert stream("false").awaitTermination(120)
    assert sorted(r.body.decode() for r in spark.read.parquet(str(tmp_path / "false")).collect()) == kept


def _broker_of(sent):
    (broker,) = {r.queue.broker_name for _, r in sent.values()}
    return broker
