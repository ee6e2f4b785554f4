"""``spark.read.format("rocketmq")`` while the master is down: the bounds come from the
slave and the rows are pulled from it (``findBrokerAddressInSubscribe``), against our
SYNC_MASTER and slave (``twistd rmq-master`` / ``rmq-slave``)."""

import pytest

from rmqproto.client import Message
from rmqproto.client.blocking import Producer
from rmqproto.codec.bodies.route import TopicRouteData
from rmqproto.codec.codes import RequestCode, ResponseCode
from support.hapair import HAPair
from support.syncclient import call, create_topic, wait_until

pytestmark = pytest.mark.java
TOPIC = "SparkFailover"


def broker_ids(pair):
    answer = call(pair.namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})
    if answer.code != ResponseCode.SUCCESS:
        return set()
    return set(TopicRouteData.from_json(answer.body).broker_datas[0].broker_addrs)


def test_rows_come_from_the_slave_while_the_master_is_down(spark, tmp_path):
    pair = HAPair(tmp_path, "ours", topic=TOPIC, slaveReadEnable="true")
    try:
        pair.wait_in_sync()
        create_topic(pair.master_addr, TOPIC, queues=2)
        wait_until(lambda: broker_ids(pair) == {0, 1}, timeout=30)
        pair.wait_slave_knows_topic(TOPIC)
        with Producer(namesrvAddr=pair.namesrv_addr) as producer:
            sent = sorted("failover-%d" % i for i in range(30))
            for body in sent:
                producer.send(Message(TOPIC, body, tags="T"))
        pair.wait_logs_identical()
        pair.master.kill()
        wait_until(lambda: broker_ids(pair) == {1}, timeout=30)
        rows = (spark.read.format("rocketmq").option("nameServer", pair.namesrv_addr)
                .option("topic", TOPIC).load().collect())
        assert sorted(r.body.decode() for r in rows) == sent
        assert {r.tags for r in rows} == {"T"}
    finally:
        pair.stop()
