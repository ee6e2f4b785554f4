"""``rmqadmin`` against our cluster (``twistd rmq-local``: NameServer, SYNC_MASTER, slave) and
the Java 4.9.7 NameServer, master and slave, in the same tests: every command's answer holds
the facts ``mqadmin`` 4.9.8 prints for the same cluster, and what the changing commands
(``updateTopic``, ``deleteTopic``, ``updateBrokerConfig``, ``sendMessage``,
``resetOffsetByTime`` with the group's consumer online and offline) did is what mqadmin
then sees. ``haStatus`` has no 4.9.8 twin: its
offsets are checked against each broker's ``brokerStatus``."""

import pytest

from rmqproto.client import Message
from rmqproto.client.blocking import LitePullConsumer, Producer
from rmqproto.client.route import MessageQueue
from support.interop import java_available
from support.javapeers import JavaPeers
from support.syncclient import wait_until
from client.adminkit import (
    BROKER, CLUSTER, JavaCluster, LocalCluster, consumed, key_values, message, mqadmin_batch,
    remove_bodies, rmqadmin, rmqadmin_error, route, rows)

pytestmark = pytest.mark.java
TOPIC, DOOMED, GROUP, COUNT = "AdminTopic", "AdminDoomed", "AdminGroup", 12


def routed(namesrv_addr, topic):
    """The topic's route from rmqadmin, or None while the NameServer has none."""
    try:
        return rmqadmin(namesrv_addr, "topicRoute", "-t", topic)
    except AssertionError:
        return None


def prepare(cluster, peers):
    """The changes every test reads back: topics made and deleted, messages sent, a group's
    offsets committed then reset to the start, a setting changed; the answers of rmqadmin
    and mqadmin to every reading command afterwards."""
    ns, state = cluster.namesrv_addr, {}
    wait_until(lambda: len(rmqadmin(ns, "clusterList")) == 2, timeout=30)
    rmqadmin(ns, "updateTopic", "-c", CLUSTER, "-t", TOPIC, "-r", 4, "-w", 4)
    rmqadmin(ns, "updateTopic", "-b", cluster.master, "-t", DOOMED, "-r", 2, "-w", 2)
    wait_until(lambda: routed(ns, TOPIC) and routed(ns, DOOMED), timeout=30)
    state["deleted"] = rmqadmin(ns, "deleteTopic", "-t", DOOMED, "-c", CLUSTER)
    with Producer(namesrvAddr=ns, producerGroup="pg_admin") as producer:
        state["sent"] = [producer.send(Message(TOPIC, "body-%d" % i, tags="Tag%d" % (i % 2),
                                               keys=["k%d" % i, "both"])) for i in range(COUNT)]
    (state["cli_sent"],) = rmqadmin(ns, "sendMessage", "-t", TOPIC, "-p", "from rmqadmin",
                                    "-k", "cli", "-c", "Cli", "-b", BROKER, "-i", 1)
    queues = [MessageQueue(TOPIC, BROKER, i) for i in range(4)]
    with LitePullConsumer(namesrvAddr=ns, consumerGroup=GROUP, autoCommit=False) as consumer:
        consumer.assign(queues)
        for queue in queues:
            consumer.seek_to_begin(queue)
        got = []
        wait_until(lambda: got.extend(consumer.poll(0.2)) or len(got) >= COUNT + 1, timeout=30)
        consumer.commit_sync()
        # online (it has sent its heartbeat): the broker tells the consumer where to go
        state["reset_online"] = rmqadmin(ns, "resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", -1)
    wait_until(lambda: routed(ns, "%RETRY%" + GROUP), timeout=30)
    state["progress_before"] = rmqadmin(ns, "consumerProgress", "-g", GROUP)
    state["reset"] = rmqadmin(ns, "resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", 0)
    state["config"] = rmqadmin(ns, "updateBrokerConfig", "-b", cluster.master,
                               "-k", "flushIntervalCommitLog", "-v", 777)
    wait_until(lambda: rmqadmin(ns, "haStatus")[0]["lagBytes"] == 0, timeout=30)

    first = state["sent"][0]
    reads = {
        "clusterList": ["clusterList"],
        "topicList": ["topicList"],
        "topicRoute": ["topicRoute", "-t", TOPIC],
        "doomedRoute": ["topicRoute", "-t", DOOMED],
        "topicStatus": ["topicStatus", "-t", TOPIC],
        "brokerStatus": ["brokerStatus", "-b", cluster.master],
        "slaveStatus": ["brokerStatus", "-b", cluster.slave],
        "getBrokerConfig": ["getBrokerConfig", "-b", cluster.master],
        "consumerProgress": ["consumerProgress", "-g", GROUP],
        "groups": ["consumerProgress"],
        "queryMsgById": ["queryMsgById", "-i", first.offset_msg_id],
        "cliMsg": ["queryMsgById", "-i", state["cli_sent"]["offsetMsgId"]],
        "queryMsgByKey": ["queryMsgByKey", "-t", TOPIC, "-k", "both"],
        "queryMsgByOffset": ["queryMsgByOffset", "-t", TOPIC, "-b", BROKER,
                             "-i", first.queue.queue_id, "-o", first.queue_offset],
        "consumeMessage": ["consumeMessage", "-t", TOPIC, "-b", BROKER, "-i", 1, "-o", 0],
    }
    state["topics_before"] = rmqadmin(ns, "topicList")  # a broker may add a system topic meanwhile
    try:
        state["mqadmin"] = mqadmin_batch(peers, ns, reads)
    finally:
        remove_bodies([first.msg_id, state["cli_sent"]["msgId"]])
    state["ours"] = {name: rmqadmin(ns, *args) for name, args in reads.items()
                     if name not in ("doomedRoute",)}
    state["ha"] = rmqadmin(ns, "haStatus")
    return state


@pytest.fixture(scope="module", params=["ours", "java"])
def cluster(request, tmp_path_factory):
    if not java_available():
        pytest.skip("Java 17 and Maven are not installed")
    workdir = tmp_path_factory.mktemp("rmqadmin-" + request.param)
    peers = JavaPeers(workdir)
    cluster = None
    try:
        cluster = LocalCluster(workdir) if request.param == "ours" else JavaCluster(peers)
        cluster.state = prepare(cluster, peers)
        yield cluster
    finally:
        if cluster is not None:
            cluster.stop()
        peers.stop_all()


def test_cluster_and_topic_lists(cluster):
    mq, ours = cluster.state["mqadmin"], cluster.state["ours"]
    assert {(r["clusterName"], r["brokerName"], r["brokerId"], r["address"], r["version"])
            for r in ours["clusterList"]} == {
        (c, b, int(i), a, v) for c, b, i, a, v, *_ in rows(mq["clusterList"], "#Cluster Name")}
    assert {(CLUSTER, BROKER, 0, cluster.master), (CLUSTER, BROKER, 1, cluster.slave)} == {
        (r["clusterName"], r["brokerName"], r["brokerId"], r["address"]) for r in ours["clusterList"]}
    before = {r["topic"] for r in cluster.state["topics_before"]}
    java = {line.strip() for line in mq["topicList"].strip().splitlines()}
    assert before <= java <= {r["topic"] for r in ours["topicList"]}
    assert TOPIC in before and DOOMED not in java


def test_topic_route_and_status(cluster):
    mq, ours = cluster.state["mqadmin"], cluster.state["ours"]
    java = route(mq["topicRoute"])
    assert {(r["brokerName"], r["cluster"], r["brokerId"], r["address"])
            for r in ours["topicRoute"]["brokers"]} == {
        (b.broker_name, b.cluster, i, a) for b in java.broker_datas for i, a in b.broker_addrs.items()}
    assert [(r["brokerName"], r["readQueueNums"], r["writeQueueNums"], r["perm"], r["topicSysFlag"])
            for r in ours["topicRoute"]["queues"]] == [
        (q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag)
        for q in java.queue_datas] == [(BROKER, 4, 4, 6, 0)]
    status = [(r["brokerName"], r["queueId"], r["minOffset"], r["maxOffset"]) for r in ours["topicStatus"]]
    assert status == [(b, int(q), int(lo), int(hi)) for b, q, lo, hi, *_ in
                      rows(mq["topicStatus"], "#Broker Name")]
    assert sum(hi - lo for _, _, lo, hi in status) == COUNT + 1


def test_deleted_topic_is_gone_for_mqadmin(cluster):
    assert "No topic route info in name server for the topic: %s" % DOOMED in cluster.state["mqadmin"]["doomedRoute"]
    deleted = cluster.state["deleted"]
    assert deleted["brokers"] == [cluster.master] and deleted["nameServers"] == [cluster.namesrv_addr]


def test_broker_status_and_config(cluster):
    mq, ours = cluster.state["mqadmin"], cluster.state["ours"]
    java = key_values(mq["brokerStatus"], ": ")
    assert set(ours["brokerStatus"]) == set(java)
    for key in ("brokerVersionDesc", "bootTimestamp", "commitLogMinOffset", "commitLogMaxOffset",
                "msgPutTotalTodayNow"):
        assert ours["brokerStatus"][key] == java[key], key
    config = key_values(mq["getBrokerConfig"], "=  ")
    assert ours["getBrokerConfig"] == config
    assert config["flushIntervalCommitLog"] == "777"
    assert cluster.state["config"] == [dict(address=cluster.master, key="flushIntervalCommitLog",
                                            value="777", result="success")]


def test_consumer_progress_and_reset(cluster):
    mq, state = cluster.state["mqadmin"], cluster.state
    before = {(r["topic"], r["brokerName"], r["queueId"]): (r["brokerOffset"], r["consumerOffset"])
              for r in state["progress_before"]["queues"]}
    assert set(before) == {(TOPIC, BROKER, i) for i in range(4)}
    assert all(broker == consumer for broker, consumer in before.values())  # all consumed
    ends = {(r["brokerName"], r["queueId"]): r["maxOffset"] for r in state["ours"]["topicStatus"]}
    assert {(r["brokerName"], r["queueId"]): r["offset"] for r in state["reset_online"]} == ends
    reset = {(r["brokerName"], r["queueId"]): r for r in state["reset"]}
    assert set(reset) == {(BROKER, i) for i in range(4)}
    assert all(r["resetOffset"] == r["timestampOffset"] == 0 for r in reset.values()), reset
    ours = state["ours"]["consumerProgress"]
    java = rows(mq["consumerProgress"], "#Topic")
    assert [(r["topic"], r["brokerName"], r["queueId"], r["brokerOffset"], r["consumerOffset"], r["diff"])
            for r in ours["queues"]] == [(t, b, int(q), int(bo), int(co), int(diff))
                                         for t, b, q, bo, co, diff, *_ in java]
    assert all(r["consumerOffset"] == 0 for r in ours["queues"])  # the reset, as mqadmin sees it
    assert ours["total"]["diffTotal"] == COUNT + 1
    assert "Diff Total: %d" % (COUNT + 1) in mq["consumerProgress"]
    assert {r["group"]: r["diffTotal"] for r in state["ours"]["groups"]} == {
        row[0]: int(row[-1]) for row in rows(mq["groups"], "#Group")}


def test_messages_by_id_key_and_offset(cluster):
    mq, ours, state = cluster.state["mqadmin"], cluster.state["ours"], cluster.state
    first = state["sent"][0]
    for name in ("queryMsgById", "queryMsgByOffset"):
        java = message(mq[name])
        assert {key: ours[name][key] for key in java} == java, name
        assert ours[name]["body"] == "body-0" and ours[name]["msgId"] == first.msg_id
    cli = message(mq["cliMsg"])
    assert (cli["topic"], cli["tags"], cli["keys"], cli["queueId"]) == (TOPIC, "Cli", "cli", 1)
    assert ours["cliMsg"]["body"] == "from rmqadmin"
    assert {(r["msgId"], r["queueId"], r["queueOffset"]) for r in ours["queryMsgByKey"]} == {
        (i, int(q), int(o)) for i, q, o in rows(mq["queryMsgByKey"], "#Message ID")}
    assert {r["msgId"] for r in ours["queryMsgByKey"]} == {r.msg_id for r in state["sent"]}
    assert [(r["msgId"], r["queueOffset"], r["body"]) for r in ours["consumeMessage"]] == consumed(
        mq["consumeMessage"])
    assert "from rmqadmin" in {r["body"] for r in ours["consumeMessage"]}


def test_ha_status_matches_each_brokers_status(cluster):
    (master,) = cluster.state["ha"]
    status = key_values(cluster.state["mqadmin"]["brokerStatus"], ": ")
    assert (master["brokerName"], master["master"]) == (BROKER, cluster.master)
    assert master["masterMaxOffset"] == int(status["commitLogMaxOffset"])
    assert master["lagBytes"] == 0
    if cluster.kind == "ours":  # the master's view of the slave connection (GET_BROKER_HA_STATUS)
        assert master["source"] == "GET_BROKER_HA_STATUS" and master["inSync"] is True
        assert int(status["slaveAckOffset_" + master["slave"]]) == master["slaveAckOffset"]
    else:  # 4.9 serves no HA status: the slave's own max offset
        assert master["source"] == "GET_BROKER_RUNTIME_INFO" and master["slave"] == cluster.slave
        slave = key_values(cluster.state["mqadmin"]["slaveStatus"], ": ")
        assert master["slaveAckOffset"] == int(slave["commitLogMaxOffset"])


def test_errors_are_one_line_and_exit_1(cluster, capsys):
    ns = cluster.namesrv_addr
    assert rmqadmin_error(ns, capsys, "topicRoute", "-t", "NoSuchTopic") == (
        "rmqadmin topicRoute: CODE: 17 DESC: No topic route info in name server for the topic: NoSuchTopic")
    assert rmqadmin_error(ns, capsys, "consumerProgress", "-g", "NoSuchGroup").startswith(
        "rmqadmin consumerProgress: CODE: 17 DESC: No topic route info")
    assert "connect to 127.0.0.1:1 failed" in rmqadmin_error(ns, capsys, "brokerStatus", "-b", "127.0.0.1:1")
    assert rmqadmin_error("127.0.0.1:1", capsys, "clusterList").startswith(
        "rmqadmin clusterList: no NameServer answered")
