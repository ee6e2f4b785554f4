"""Broker statistics against the Java 4.9.7 broker: our broker and a Java broker in one cluster
each get a topic of their own, the Java client sends to and consumes each the same way, and
``mqadmin`` 4.9.8 ``statsAll``, ``clusterList`` (with and without ``-m``),
``brokerConsumeStats``, ``consumerProgress`` and ``topicStatus``, and ``mqadmin`` 5.3.3 ``statsAll`` and
``clusterList`` (with and without ``-m``, in one JVM beside them) answer alike for both: the
same counts, TPS of the same shape (they depend on timing, so are compared loosely)."""

import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from brokerkit import DaemonCluster
from rmqproto.codec import headers as h
from rmqproto.codec.bodies.offsets import ConsumeStats
from rmqproto.codec.bodies.stats import BrokerStatsData
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from support.javapeers import broker_port
from support.syncclient import call, wait_until

pytestmark = pytest.mark.java

SHARED = dict(brokerClusterName="DefaultCluster", brokerIP1="127.0.0.1", brokerIP2="127.0.0.1",
              mappedFileSizeCommitLog=16 * 1024 * 1024, mappedFileSizeConsumeQueue=6000)
COUNT = 8  # two a queue: the producer takes the topic's 4 queues in turn


@pytest.fixture
def both(tmp_path):
    cluster = DaemonCluster(tmp_path, **SHARED)
    port = broker_port()
    cluster.peers.broker("java", listenPort=port, namesrvAddr=cluster.namesrv_addr,
                         brokerName="broker-java", **SHARED)
    java_addr = "127.0.0.1:%d" % port
    wait_until(lambda: cluster.route("TBW102") is not None
               and len(cluster.route("TBW102").broker_datas) == 2, timeout=60)
    yield cluster, {"ours": cluster.broker_addr, "java": java_addr}
    cluster.stop()


def create_topic(addr, topic):
    header = h.CreateTopicRequestHeader(
        topic=topic, default_topic="TBW102", read_queue_nums=4, write_queue_nums=4, perm=6,
        topic_filter_type="SINGLE_TAG", topic_sys_flag=0, order=False)
    answer = call(addr, RC.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
    assert answer.code == R.SUCCESS, answer.remark


def minute_sum(addr, name, key):
    answer = call(addr, RC.VIEW_BROKER_STATS_DATA, h.ViewBrokerStatsDataRequestHeader(
        stats_name=name, stats_key=key).to_ext_fields())
    if answer.code != R.SUCCESS:
        return None
    return BrokerStatsData.from_json(answer.body).stats_minute.sum


def lag(addr, group, topic):
    answer = call(addr, RC.GET_CONSUME_STATS, h.GetConsumeStatsRequestHeader(
        consumer_group=group, topic=topic).to_ext_fields())
    return ConsumeStats.from_json(answer.body).total_diff() if answer.code == R.SUCCESS else None


def rows(out, first_column):
    """The whitespace-split lines of ``out`` whose first column is ``first_column``."""
    return [line.split() for line in out.splitlines() if line.split()[:1] == [first_column]]


def test_stats_commands_answer_as_java(both):
    cluster, addrs = both
    peers, namesrv = cluster.peers, cluster.namesrv_addr
    for side, addr in addrs.items():
        create_topic(addr, "Stats_" + side)
    wait_until(lambda: all(cluster.route("Stats_" + side) for side in addrs), timeout=30)

    with ThreadPoolExecutor(len(addrs)) as pool:  # the JVMs side by side
        runs = {side: pool.submit(peers.run_client, "rmqproto.peers.ProduceConsume", namesrv,
                                  "Stats_" + side, COUNT, "G_" + side, 60) for side in addrs}
    for side, run in runs.items():
        result = run.result()
        assert result.returncode == 0, (side, result.stdout + result.stderr)

    # both brokers have sampled the puts and gets (every 10 s) and the consumers' offsets
    for side, addr in addrs.items():
        topic, group = "Stats_" + side, "G_" + side
        wait_until(lambda: minute_sum(addr, "TOPIC_PUT_NUMS", topic) == COUNT
                   and minute_sum(addr, "GROUP_GET_NUMS", "%s@%s" % (topic, group)) == COUNT
                   and lag(addr, group, topic) == 0, timeout=30)

    # first those that read the minute figures (they show the counts for about a minute),
    # two JVMs at a time (more starve the machine: mqadmin's 3 s timeouts)
    commands = {"statsAll": ("statsAll", "-a")}
    commands.update({"progress_" + side: ("consumerProgress", "-g", "G_" + side) for side in addrs})
    commands.update({"totals": ("clusterList", "-m"), "tps": ("clusterList",)})
    commands.update({side: ("brokerConsumeStats", "-b", addr) for side, addr in addrs.items()})
    five = [[*command, "-n", namesrv] for command in
            (("statsAll", "-a"), ("clusterList", "-m"), ("clusterList",))]
    status = [["topicStatus", "-t", "Stats_" + side, "-n", namesrv] for side in addrs]
    with ThreadPoolExecutor(2) as pool:
        batch5 = pool.submit(peers.mqadmin5_batch, *five)  # first: it reads the minute too
        runs = {name: pool.submit(peers.mqadmin, command[0], "-n", namesrv, *command[1:])
                for name, command in commands.items()}
        topic_status = pool.submit(peers.mqadmin_batch, *status)
    outs = {name: run.result() for name, run in runs.items()}
    outs5 = dict(zip(("statsAll", "totals", "tps"), batch5.result()))

    # topicStatus (4.9.8; 5.3.3's fails against Java 4.9.7: test_rocketmq5_java.py): each
    # queue's min and max offsets, two messages a queue on both
    for (side, broker_name), out in zip((("ours", "broker-a"), ("java", "broker-java")),
                                        topic_status.result()):
        lines = sorted(rows(out, broker_name), key=lambda line: int(line[1]))
        assert [line[1:4] for line in lines] == [
            [str(q), "0", str(COUNT // 4)] for q in range(4)], out

    # statsAll: topic, group, accumulation, in TPS, out TPS, in and out messages of 24 h
    for out in (outs["statsAll"], outs5["statsAll"]):
        stats = {side: rows(out, "Stats_" + side) for side in addrs}
        for side, lines in stats.items():
            assert len(lines) == 1, out
            (topic, group, accumulation, in_tps, out_tps, in_day, out_day), = lines
            assert (group, accumulation, in_day, out_day) == (
                "G_" + side, "0", str(COUNT), str(COUNT)), out
            assert 0 < float(in_tps) <= COUNT and 0 < float(out_tps) <= COUNT, out

    # consumerProgress: the group's get TPS of the last minute (consumeTps)
    for side in addrs:
        out = outs["progress_" + side]
        found = re.search(r"^Consume TPS: (\d+\.\d\d)$", out, re.M)
        assert found and 0 < float(found.group(1)) <= COUNT, out
        assert re.search(r"^Diff Total: 0$", out, re.M), out

    # clusterList -m: yesterday's and today's puts and gets of each broker
    for out in (outs["totals"], outs5["totals"]):
        totals = {line[1]: line[2:] for line in rows(out, "DefaultCluster")}
        assert set(totals) == {"broker-a", "broker-java"}, out
        assert totals["broker-a"] == totals["broker-java"] == [
            "0", "0", str(COUNT), str(COUNT)], out

    # clusterList: in and out TPS with the pools' queue figures (5.x: and the ack pool's,
    # which neither has: "N")
    shape = re.compile(r"\d+\.\d\d\(\d+,\d+ms\)$")
    shape5 = re.compile(r"\d+\.\d\d\(\d+,\d+ms\|N,Nms\)$")
    for out, out_shape in ((outs["tps"], shape), (outs5["tps"], shape5)):
        tps = {line[1]: line for line in rows(out, "DefaultCluster")}
        assert set(tps) == {"broker-a", "broker-java"}, out
        for line in tps.values():
            assert shape.match(line[5]) and out_shape.match(line[6]), out
    # 5.x: the timer figures neither broker has, and brokerActive, which neither reports
    for line in rows(outs5["tps"], "DefaultCluster"):
        assert line[7:10] + line[-1:] == ["0-0(0.0w,", "0.0,", "0.0)", "false"], outs5["tps"]

    # brokerConsumeStats: every queue of each group's topic, the same offsets
    offsets = {}
    for side in addrs:
        out = outs[side]
        assert "#Topic" in out and "#Diff" in out, out
        lines = rows(out, "Stats_" + side)
        assert [line[1] for line in lines] == ["G_" + side] * 4, out
        offsets[side] = [(line[3], line[4], line[5], line[6]) for line in lines]
        assert "Diff Total: 0" in out, out
    assert offsets["ours"] == offsets["java"] == [
        (str(q), str(COUNT // 4), str(COUNT // 4), "0") for q in range(4)]
