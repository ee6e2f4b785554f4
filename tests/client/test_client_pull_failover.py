"""The lite pull consumer and the push consumer follow the master's ``suggestWhichBrokerId``
to the slave, keep consuming from the slave while its master is down and return to the
master once it is back (``findBrokerAddressInSubscribe``), against our SYNC_MASTER and our
slave (``twistd rmq-master`` / ``rmq-slave``)."""

import pytest

from rmqproto.client import Message
from rmqproto.client import blocking
from rmqproto.client.blocking import LitePullConsumer, Producer, PushConsumer
from rmqproto.codec.bodies.route import TopicRouteData
from rmqproto.codec.codes import RequestCode, ResponseCode
from support.hapair import HAPair
from support.interop import java_available
from support.syncclient import call, create_topic, wait_until

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")
TOPIC = "PullFailover"


@pytest.fixture
def pair(tmp_path):
    # slaveReadEnable and no memory for messages: a consumer behind the last message is sent
    # to the slave (whichBrokerWhenConsumeSlowly), which sends it back (it does not enable it)
    pair = HAPair(tmp_path, "ours", topic=TOPIC, slaveReadEnable="true",
                  accessMessageInMemoryMaxRatio=0)
    yield pair
    pair.stop()


def broker_ids(pair):
    answer = call(pair.namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})
    if answer.code != ResponseCode.SUCCESS:
        return set()
    return set(TopicRouteData.from_json(answer.body).broker_datas[0].broker_addrs)


def send(pair, prefix, count):
    with Producer(namesrvAddr=pair.namesrv_addr) as producer:
        return {producer.send(Message(TOPIC, "%s-%d" % (prefix, i), keys="k%d" % i)).msg_id
                for i in range(count)}


def ready(pair):
    pair.wait_in_sync()
    create_topic(pair.master_addr, TOPIC, queues=2)
    wait_until(lambda: broker_ids(pair) == {0, 1}, timeout=30)
    pair.wait_slave_knows_topic(TOPIC)
    sent = send(pair, "before", 20)
    pair.wait_logs_identical()
    return sent


def test_push_consumer_consumes_from_the_slave_while_the_master_is_down_and_back(pair, monkeypatch):
    sent = ready(pair)
    pulled_from, got = [], []
    perform = blocking._Connections.perform

    def recording(connections, call_):
        if call_.request.code == RequestCode.PULL_MESSAGE and call_.request.ext_fields["topic"] == TOPIC:
            pulled_from.append(call_.address)
        return perform(connections, call_)

    monkeypatch.setattr(blocking._Connections, "perform", recording)
    with PushConsumer(namesrvAddr=pair.namesrv_addr, consumerGroup="cg_push_failover",
                      consumeFromWhere="CONSUME_FROM_FIRST_OFFSET", pullBatchSize=4,
                      pollNameServerInterval=300, brokerSuspendMaxTimeMillis=1000) as c:
        c.subscribe(TOPIC)
        c.register_message_listener(lambda messages: got.extend(messages) or "CONSUME_SUCCESS")
        c.start()
        wait_until(lambda: pair.slave_addr in pulled_from, timeout=30)
        pair.master.kill()
        wait_until(lambda: broker_ids(pair) == {1}, timeout=30)
        del pulled_from[:]
        wait_until(lambda: len(got) >= 20 and pair.slave_addr in pulled_from, timeout=30)
        assert sorted(m.msg_id for m in got) == sorted(sent)  # all of them, none twice
        pair.start_master()
        wait_until(lambda: broker_ids(pair) == {0, 1}, timeout=30)
        del pulled_from[:]
        sent_after = send(pair, "after", 6)
        wait_until(lambda: len(got) >= 26, timeout=30)
        assert sorted(m.msg_id for m in got[20:]) == sorted(sent_after)
        wait_until(lambda: pulled_from[-2:] == [pair.master_addr] * 2, timeout=30)


def test_consumes_from_the_slave_while_the_master_is_down_and_back(pair):
    sent = ready(pair)
    pulled_from = []
    with LitePullConsumer(namesrvAddr=pair.namesrv_addr, consumerGroup="cg_failover",
                          consumeFromWhere="CONSUME_FROM_FIRST_OFFSET", pullBatchSize=4,
                          pollNameServerInterval=300) as c:
        perform = c._perform

        def recording(call_):
            if call_.request.code == RequestCode.PULL_MESSAGE:
                pulled_from.append(call_.address)
            return perform(call_)

        c._perform = recording
        c.subscribe(TOPIC)
        got = c.poll(10) + c.poll(10) + c.poll(10)
        assert pulled_from[:3] == [pair.master_addr, pair.master_addr, pair.slave_addr]
        pair.master.kill()
        wait_until(lambda: broker_ids(pair) == {1}, timeout=30)
        del pulled_from[:]
        while len(got) < 20:
            more = c.poll(10)
            assert more, "nothing from the slave"
            got += more
        assert pair.slave_addr in pulled_from
        assert sorted(m.msg_id for m in got) == sorted(sent)  # all of them, none twice
        pair.start_master()
        wait_until(lambda: broker_ids(pair) == {0, 1}, timeout=30)
        sent_after = send(pair, "after", 6)
        del pulled_from[:]
        after = []
        while len(after) < 6:
            more = c.poll(10)
            assert more, "nothing after the master came back"
            after += more
        assert sorted(m.msg_id for m in after) == sorted(sent_after)
        assert pulled_from[-1] == pair.master_addr
