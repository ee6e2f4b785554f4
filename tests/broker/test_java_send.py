"""Real Java 4.9.8 producers and mqadmin against ``twistd -n rmq-master`` registered with
``twistd -n rmq-nameserver``: sync, async, oneway and batch sends get
SEND_OK with offset msgIds and queue offsets that match what the broker stored; a topic
made with mqadmin shows in the route; oversize input gets Java's response codes."""

import collections
import re

import pytest

from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.message import decode_message_id, decode_record
from support.interop import java_available
from support.syncclient import call
from brokerkit import DaemonCluster

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")

COUNT = 20


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = DaemonCluster(tmp_path_factory.mktemp("broker-java-send"))
    yield cluster
    cluster.stop()


def test_java_producer_sync_async_oneway_and_batch(cluster):
    result = cluster.peers.run_client("rmqproto.peers.SendAll", cluster.namesrv_addr,
                                      "JavaSendTopic", COUNT)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line.split() for line in result.stdout.splitlines()]
    acked = [line for line in lines if line[0] in ("SYNC", "ASYNC", "BATCH")]
    assert collections.Counter(line[0] for line in acked) == {"SYNC": COUNT, "ASYNC": COUNT, "BATCH": 1}
    assert ["ONEWAY", str(COUNT)] in lines
    assert all(line[1] == "SEND_OK" for line in acked)
    port = int(cluster.broker_addr.rsplit(":", 1)[1])
    stored = collections.defaultdict(list)  # queue id -> offsets acknowledged
    for kind, _, uniq_ids, offset_ids, queue_id, queue_offset in acked:
        offset_ids = offset_ids.split(",")
        assert len(offset_ids) == len(uniq_ids.split(","))
        for i, offset_id in enumerate(offset_ids):
            host, physical = decode_message_id(offset_id)
            assert host == ("127.0.0.1", port)
            record = decode_record(call(cluster.broker_addr, RC.VIEW_MESSAGE_BY_ID,
                                        {"offset": str(physical)}).body)
            assert record.queue_id == int(queue_id)
            assert record.queue_offset == int(queue_offset) + i
            assert record.properties["UNIQ_KEY"] == uniq_ids.split(",")[i]
            assert record.properties["CLUSTER"] == "DefaultCluster"
            assert record.topic == "JavaSendTopic"
            stored[int(queue_id)].append(int(queue_offset) + i)
    # the topic was created from TBW102 with the producer's 4 queues and registered at once
    route = cluster.route("JavaSendTopic")
    assert route.queue_datas[0].write_queue_nums == 4
    total = sum(int(call(cluster.broker_addr, RC.GET_MAX_OFFSET,
                         {"topic": "JavaSendTopic", "queueId": str(q)}).ext_fields["offset"])
                for q in range(4))
    assert total == 4 * COUNT  # sync + async + oneway + batch
    for offsets in stored.values():
        assert len(set(offsets)) == len(offsets)
    refused = {line[1]: int(line[2]) for line in lines if line[0] == "REFUSED"}
    assert refused == {"oversize-body": R.MESSAGE_ILLEGAL, "oversize-properties": R.MESSAGE_ILLEGAL}


def test_mqadmin_update_topic_and_route(cluster):
    out = cluster.peers.mqadmin("updateTopic", "-b", cluster.broker_addr, "-t", "AdminTopic",
                                "-r", "3", "-w", "5", "-n", cluster.namesrv_addr)
    assert "create topic to %s success" % cluster.broker_addr in out, out
    route = cluster.route("AdminTopic")  # registered before the answer, as Java does
    assert (route.queue_datas[0].read_queue_nums, route.queue_datas[0].write_queue_nums) == (3, 5)
    out = cluster.peers.mqadmin("topicRoute", "-t", "AdminTopic", "-n", cluster.namesrv_addr)
    assert '"writeQueueNums":5' in out.replace(" ", "").replace("\n", ""), out
    out = cluster.peers.mqadmin("topicStatus", "-t", "AdminTopic", "-n", cluster.namesrv_addr)
    assert len(re.findall(r"broker-a\s+\d", out)) == 5, out


def test_mqadmin_refuses_system_and_illegal_topics(cluster):
    for topic in ("SCHEDULE_TOPIC_XXXX", "bad*topic"):
        out = cluster.peers.mqadmin("updateTopic", "-b", cluster.broker_addr, "-t", topic,
                                    "-n", cluster.namesrv_addr)
        assert "success" not in out, out


def test_unknown_request_code(cluster):
    answer = call(cluster.broker_addr, 9999)
    assert answer.code == R.REQUEST_CODE_NOT_SUPPORTED
    assert answer.remark == " request type 9999 not supported"
