"""``mqadmin`` 4.9.8 and 5.3.3 against our broker and the Java 4.9.7 broker, started with the
same settings in one cluster: ``getBrokerConfig`` / ``updateBrokerConfig``,
``producerConnection``, ``producer``, ``deleteSubGroup``, ``deleteTopic``,
``resetOffsetByTime`` (with a live push consumer of the tool's own client version, which both
brokers also ask for its offsets: INVOKE_BROKER_TO_GET_CONSUMER_STATUS), ``queryCq`` and
``cleanExpiredCQ`` give the same answers from both; so do QUERY_CONSUME_TIME_SPAN and
INVOKE_BROKER_TO_GET_CONSUMER_STATUS, which no mqadmin command sends, asked directly.

Every test runs once per tool version on the one cluster of the module, with names of its
own (the reset test runs both versions side by side); each tool's commands of a test run in
one JVM (``JavaPeers.mqadmin_batch``).
"""

import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from brokerkit import DaemonCluster
from rmqproto.codec import headers as h
from rmqproto.codec.bodies.client import HeartbeatData, MessageQueue, ProducerData
from rmqproto.codec.bodies.offsets import ConsumerOffsetSerializeWrapper, GetConsumerStatusBody
from rmqproto.codec.bodies.stats import QueryConsumeTimeSpanBody
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.config import parse_properties
from support.hapair import send_statuses
from support.javapeers import broker_port
from support.storefaults import Sender
from support.syncclient import SyncClient, call, create_topic, wait_until

pytestmark = pytest.mark.java

#: What differs by nature between two brokers on one machine, or is not a setting of ours.
DIFFERENT = {"listenPort", "haListenPort", "namesrvAddr", "storePathRootDir", "storePathCommitLog",
             "rocketmqHome", "brokerName"}
SHARED = dict(brokerClusterName="DefaultCluster", brokerIP1="127.0.0.1", brokerIP2="127.0.0.1",
              mappedFileSizeCommitLog=16 * 1024 * 1024, mappedFileSizeConsumeQueue=6000)
QUEUES = 4
BROKER_NAMES = {"ours": "broker-a", "java": "broker-java"}
#: Each tool version, with the suffix of the names its runs use.
TOOLS = {"4.9.8": "", "5.3.3": "5"}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """Our NameServer, our broker and a Java broker registered with it: ``(cluster, brokers)``
    with ``brokers = {"ours": addr, "java": addr}``."""
    cluster = DaemonCluster(tmp_path_factory.mktemp("admin-java"), **SHARED)
    port = broker_port()
    cluster.peers.broker("java", listenPort=port, namesrvAddr=cluster.namesrv_addr,
                         brokerName="broker-java", **SHARED)
    wait_until(lambda: cluster.route("TBW102") is not None
               and len(cluster.route("TBW102").broker_datas) == 2, timeout=60)
    yield cluster, {"ours": cluster.broker_addr, "java": "127.0.0.1:%d" % port}
    cluster.stop()


@pytest.fixture(params=list(TOOLS))
def tool(request):
    return request.param


def classpath(cluster, tool):
    """The classpath of the tool's version of mqadmin and the Java client."""
    return cluster.peers.client5_cp if tool == "5.3.3" else cluster.peers.client_cp


def mqadmin(cluster, tool, *commands):
    """Run ``commands`` (each a list of arguments, ``-n`` added) with the tool in one JVM."""
    return cluster.peers.mqadmin_batch(*([*c, "-n", cluster.namesrv_addr] for c in commands),
                                       classpath=classpath(cluster, tool))


def broker_config(out):
    values = {}
    for line in out.splitlines():
        found = re.match(r"(\S+)\s+=  (.*)$", line)
        if found:
            values[found.group(1)] = found.group(2)
    assert values, out
    return values


def deliveries(cluster, name):
    log = cluster.workdir / (name + ".log")
    return log.read_text(errors="replace").count("MSG ") if log.exists() else 0


def max_offset(addr, topic, queue_id):
    return int(call(addr, RC.GET_MAX_OFFSET, {"topic": topic, "queueId": str(queue_id)})
               .ext_fields["offset"])


def stored(addr, topic):
    return sum(max_offset(addr, topic, q) for q in range(QUEUES))


def committed(addr, group, topic):
    """Whether the broker has stored the group's offset of every queue (what a reset needs)."""
    table = ConsumerOffsetSerializeWrapper.from_json(
        call(addr, RC.GET_ALL_CONSUMER_OFFSET).body).offset_table
    return len(table.get(topic + "@" + group, {})) == QUEUES


def test_producer_connection_delete_sub_group_and_delete_topic(both, tool):
    cluster, brokers = both
    sfx = TOOLS[tool]
    producers = []
    for name, addr in brokers.items():  # online producers of one group on each broker
        client = SyncClient(addr)
        heartbeat = HeartbeatData("producer-" + name, [ProducerData("PG_admin" + sfx)], [])
        assert client.call(RC.HEART_BEAT, body=heartbeat.to_json()).code == R.SUCCESS
        producers.append(client)
    commands = []
    for name, addr in brokers.items():  # a topic on each broker alone, so routes pick it
        topic = "Admin_%s%s" % (name, sfx)
        commands += [["updateTopic", "-b", addr, "-t", topic],
                     ["producerConnection", "-g", "PG_admin" + sfx, "-t", topic],
                     ["producerConnection", "-g", "PG_nobody", "-t", topic],
                     ["producer", "-b", addr],
                     ["updateSubGroup", "-b", addr, "-g", "SG_admin" + sfx],
                     ["deleteSubGroup", "-b", addr, "-g", "SG_admin" + sfx, "-r", "true"]]
    commands.append(["deleteTopic", "-c", "DefaultCluster", "-t", "Admin_ours" + sfx])
    outs = mqadmin(cluster, tool, *commands)
    for client in producers:
        client.close()

    for (name, addr), (created, found, missing, every, _, deleted) in zip(
            brokers.items(), (outs[:6], outs[6:12])):
        assert "create topic to %s success" % addr in created, created
        assert re.search(r"producer-%s\s+127\.0\.0\.1:\d+\s+JAVA" % name, found), found
        assert "the producer group[PG_nobody] not exist" in missing, missing
        assert re.search(r"^producer group \(PG_admin%s\) instance : clientId=producer-%s,"
                         r"remoteIP=/127\.0\.0\.1:\d+, language=JAVA, version=\d+, "
                         r"lastUpdateTimestamp=\d{13}$" % (sfx, name), every, re.M), every
        assert "delete subscription group [SG_admin%s] from broker [%s] success" % (
            sfx, addr) in deleted, deleted
        groups = call(addr, RC.GET_ALL_SUBSCRIPTIONGROUP_CONFIG).body.decode()
        assert '"SG_admin%s"' % sfx not in groups

    out = outs[-1]
    assert "delete topic [Admin_ours%s] from cluster [DefaultCluster] success" % sfx in out, out
    assert '"Admin_ours%s"' % sfx not in call(brokers["ours"], RC.GET_ALL_TOPIC_CONFIG).body.decode()
    wait_until(lambda: cluster.route("Admin_ours" + sfx) is None, timeout=30)
    assert cluster.route("Admin_java" + sfx) is not None


def test_reset_offset_by_time_tells_the_live_consumer(both):
    """Both tool versions side by side (names of their own): most of a run is waiting, for
    the consumers' offsets and for the 10 s a Java consumer waits in ``resetOffset``."""
    with ThreadPoolExecutor(len(TOOLS)) as pool:
        runs = [pool.submit(reset_offset_by_time, *both, tool) for tool in TOOLS]
    for run in runs:
        run.result()


def reset_offset_by_time(cluster, brokers, tool):
    peers, namesrv, sfx = cluster.peers, cluster.namesrv_addr, TOOLS[tool]
    start = int(time.time() * 1000)
    sent_ok = {}
    for name, addr in brokers.items():
        create_topic(addr, "Reset_%s%s" % (name, sfx), queues=QUEUES)
    topics = ["Reset_%s%s" % (name, sfx) for name in brokers]
    for topic in topics:
        wait_until(lambda t=topic: cluster.route(t) is not None, timeout=30)
    with ThreadPoolExecutor(len(topics)) as pool:  # the producers' JVMs side by side
        sends = {topic: pool.submit(peers.run_client, "rmqproto.peers.SyncSends", namesrv, topic,
                                    12, classpath=classpath(cluster, tool)) for topic in topics}
    for topic, sending in sends.items():
        sent = sending.result()
        # a send the loaded machine times out (no retries) is just not sent
        sent_ok[topic] = send_statuses(sent.stdout).count("SEND_OK")
        assert sent.returncode == 0 and sent_ok[topic] > 0, sent.stdout + sent.stderr
        peers.start("consumer-" + topic, classpath(cluster, tool), "rmqproto.peers.ConsumeTopics",
                    namesrv, "G_" + topic, topic, "1000", "120")
    for name, addr in brokers.items():
        topic = "Reset_%s%s" % (name, sfx)
        assert stored(addr, topic) == sent_ok[topic]
        wait_until(lambda t=topic: deliveries(cluster, "consumer-" + t) >= sent_ok[t], timeout=60)
        wait_until(lambda a=addr, t=topic: committed(a, "G_" + t, t), timeout=30)
    for name, addr in brokers.items():
        # INVOKE_BROKER_TO_GET_CONSUMER_STATUS (no mqadmin command registers it): the
        # consumer's own offsets, which the broker asks it for: everything consumed
        topic = "Reset_%s%s" % (name, sfx)
        header = h.GetConsumerStatusRequestHeader(topic=topic, group="G_" + topic)
        answer = call(addr, RC.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, header.to_ext_fields())
        assert answer.code == R.SUCCESS, answer.remark
        [(client, offsets)] = GetConsumerStatusBody.from_json(answer.body).consumer_table.items()
        assert "@" in client and offsets == {
            MessageQueue(topic, BROKER_NAMES[name], q): max_offset(addr, topic, q)
            for q in range(QUEUES)}, (name, offsets)
    outs = mqadmin(cluster, tool, *(
        ["resetOffsetByTime", "-g", "G_Reset_%s%s" % (name, sfx), "-t", "Reset_%s%s" % (name, sfx),
         "-s", start, "-f", "true"] for name in brokers))
    for out in outs:  # 4.9.8 and 5.3.3 say it each their way, then list the queues
        assert re.search(r"(rollback|reset) consumer offset by specified", out), out
        assert "#brokerName" in out, out
    for name in brokers:  # every message once more
        topic = "Reset_%s%s" % (name, sfx)
        wait_until(lambda t=topic: deliveries(cluster, "consumer-" + t) >= 2 * sent_ok[t],
                   timeout=60)


def test_query_consume_queue_and_clean_expired_cq(both, tool):
    cluster, brokers = both
    sfx = TOOLS[tool]
    offsets = {}
    for name, addr in brokers.items():  # same-sized messages: topic names of one length
        sender = Sender(addr, "Cq_%s%s" % (name, sfx))
        create_topic(addr, sender.topic)
        assert [sender.send(body_size=100) for _ in range(3)] == [R.SUCCESS] * 3
        sender.close()
        offsets[name] = sorted(sender.acked.values())
    commands = []
    for name, addr in brokers.items():
        topic = "Cq_%s%s" % (name, sfx)
        commands += [["queryCq", "-b", addr, "-t", topic, "-q", 0, "-i", 0, "-c", 10],
                     ["queryCq", "-b", addr, "-t", topic, "-q", 0, "-i", 1, "-c", 1,
                      "-g", "G_offline"],
                     ["cleanExpiredCQ", "-b", addr]]
    answers = mqadmin(cluster, tool, *commands)
    outs = dict(zip(brokers, answers[::3]))
    # every unit with the commit-log offset its send was answered with
    for name, out in outs.items():
        found = re.findall(r"physicOffset=(\d+), physicSize=(\d+)", out)
        assert [int(o) for o, _ in found] == offsets[name], out
    # apart from those offsets and the topic, the answers are the same
    same = [re.sub(r"physicOffset=\d+", "physicOffset=N", out) for out in outs.values()]
    assert same[0] == same[1], same
    assert "Queue data: \nmax: 3, min: 0" in same[0] and same[0].count("idx: ") == 3, same[0]
    assert "eval=false, msg='null'" in same[0], same[0]
    # a group named: whether it is online, the unit asked for
    for name, out in zip(brokers, answers[1::3]):
        assert "Filter data: \nG_offline@Cq_%s%s is not online!" % (name, sfx) in out, out
        assert out.count("idx: 1\n") == 1 and "idx: 2" not in out, out
    # nothing has expired: both say success and keep the queue
    for out in answers[2::3]:
        assert out.strip() == "success", out
    for name, addr in brokers.items():
        topic = "Cq_%s%s" % (name, sfx)
        answer = call(addr, RC.GET_MAX_OFFSET, {"topic": topic, "queueId": "0"})
        assert answer.ext_fields["offset"] == "3"
        # QUERY_CONSUME_TIME_SPAN (no mqadmin command): nothing consumed, so the consumed time
        # is the first message's, and the next (the first) has waited since it was stored
        answer = call(addr, RC.QUERY_CONSUME_TIME_SPAN, h.QueryConsumeTimeSpanRequestHeader(
            topic=topic, group="G_offline").to_ext_fields())
        assert answer.code == R.SUCCESS, answer.remark
        [span] = QueryConsumeTimeSpanBody.from_json(answer.body).consume_time_span_set
        assert span.message_queue == MessageQueue(topic, BROKER_NAMES[name], 0)
        assert 0 < span.min_time_stamp <= span.max_time_stamp
        assert span.consume_time_stamp == span.min_time_stamp and span.delay_time > 0
        assert re.fullmatch(r"\d{4}-\d\d-\d\d#\d\d:\d\d:\d\d:\d{3}", span.min_time_stamp_str)
        missing = call(addr, RC.QUERY_CONSUME_TIME_SPAN, h.QueryConsumeTimeSpanRequestHeader(
            topic="Cq_none", group="G_offline").to_ext_fields())
        assert (missing.code, missing.remark) == (R.TOPIC_NOT_EXIST, "topic[Cq_none] not exist")


def test_get_and_update_broker_config(both, tool):
    """Last: it changes both brokers' settings (to values of each tool's own)."""
    cluster, brokers = both
    size, auto_create = {"4.9.8": ("65536", "false"), "5.3.3": ("131072", "true")}[tool]
    outs = mqadmin(cluster, tool, ["getBrokerConfig", "-b", brokers["ours"]],
                   ["getBrokerConfig", "-b", brokers["java"]],
                   ["updateBrokerConfig", "-c", "DefaultCluster", "-k", "maxMessageSize", "-v", size],
                   ["updateBrokerConfig", "-c", "DefaultCluster", "-k", "autoCreateTopicEnable",
                    "-v", auto_create],
                   ["getBrokerConfig", "-b", brokers["ours"]],
                   ["getBrokerConfig", "-b", brokers["java"]])
    ours, java = broker_config(outs[0]), broker_config(outs[1])
    assert set(java) <= set(ours)
    assert {k: ours[k] for k in java if k not in DIFFERENT} == \
        {k: v for k, v in java.items() if k not in DIFFERENT}
    for out in outs[2:4]:
        assert out.count("update broker config success") == 2, out  # both brokers
    ours, java = broker_config(outs[4]), broker_config(outs[5])
    assert (ours["maxMessageSize"], ours["autoCreateTopicEnable"]) == (size, auto_create)
    assert (java["maxMessageSize"], java["autoCreateTopicEnable"]) == (size, auto_create)
    saved = parse_properties((cluster.workdir / "store" / "config" / "broker.properties").read_text())
    assert (saved["maxMessageSize"], saved["autoCreateTopicEnable"]) == (size, auto_create)
    java_saved = parse_properties((cluster.workdir / "broker-java.properties").read_text())
    assert set(java_saved) <= set(saved)
