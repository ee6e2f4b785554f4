"""GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY passed on to the consumer and its
answer relayed (``AdminBrokerProcessor#callConsumer``), and INVOKE_BROKER_TO_GET_CONSUMER_STATUS
gathering every consumer's offsets (``Broker2Client#getConsumeStatus``), on a fake clock."""

import pytest
from consume_support import Connection, Controller, result_of
from test_pull import put
from twisted.internet.defer import Deferred, succeed

from rmqproto.broker.processors.callconsumer import ConsumerCallProcessor
from rmqproto.codec import headers as h
from rmqproto.codec.bodies.client import (
    ConsumerData, ConsumeType, HeartbeatData, MessageModel, MessageQueue,
)
from rmqproto.codec.bodies.offsets import GetConsumerStatusBody
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.frame import FLAG_RESPONSE, RemotingCommand
from rmqproto.codec.message import decode_record
from rmqproto.remoting import RemotingTimeoutError


class Consumer(Connection):
    """A consumer connection: answers each request with ``answer`` (a Deferred of one)."""

    def __init__(self, answer):
        super().__init__("127.0.0.1:50001")
        self.answer = answer
        self.requests = []

    def send_request(self, request, timeout):
        self.requests.append((request, timeout))
        return self.answer


@pytest.fixture
def broker(tmp_path):
    broker = Controller(tmp_path)
    ConsumerCallProcessor(broker).register_with(broker.dispatcher)
    broker.topic("T")
    return broker


def join(broker, connection, version=409, client_id="client-1"):
    beat = HeartbeatData(client_id, [], [ConsumerData("g", ConsumeType.CONSUME_PASSIVELY,
                                                       MessageModel.CLUSTERING)])
    assert broker.call(RC.HEART_BEAT, body=beat.to_json(), connection=connection,
                       version=version).code == R.SUCCESS


def running_info(broker):
    header = h.GetConsumerRunningInfoRequestHeader(consumer_group="g", client_id="client-1",
                                                   jstack_enable=False)
    return broker.call(RC.GET_CONSUMER_RUNNING_INFO, header)


def test_the_consumers_answer_is_relayed(broker):
    consumer = Consumer(succeed(RemotingCommand(0, flag=FLAG_RESPONSE, remark="fine",
                                                body=b'{"properties":{}}')))
    join(broker, consumer)
    answer = result_of(running_info(broker))
    assert (answer.code, answer.remark, answer.body) == (R.SUCCESS, "fine", b'{"properties":{}}')
    assert answer.opaque == 7  # the admin's request, not the forwarded one
    [(forwarded, timeout)] = consumer.requests
    assert forwarded.code == RC.GET_CONSUMER_RUNNING_INFO and timeout == 10.0
    assert forwarded.ext_fields["clientId"] == "client-1"


def test_a_consumer_not_online_or_too_old(broker):
    answer = running_info(broker)
    assert (answer.code, answer.remark) == (R.SYSTEM_ERROR, "The Consumer <g> <client-1> not online")
    join(broker, Consumer(Deferred()), version=50)
    assert running_info(broker).remark == ("The Consumer <client-1> Version <V3_1_2_SNAPSHOT> too low "
                                           "to finish, please upgrade it to V3_1_8_SNAPSHOT")


def test_a_consumer_that_does_not_answer_in_time(broker):
    answer = Deferred()
    join(broker, Consumer(answer))
    pending = running_info(broker)
    answer.errback(RemotingTimeoutError("wait response timeout 10000ms"))
    result = result_of(pending)
    assert (result.code, result.remark) == (
        R.CONSUME_MSG_TIMEOUT, "consumer <g> <client-1> Timeout: wait response timeout 10000ms")


def test_consume_message_directly_sends_the_stored_message(broker):
    stored = put(broker, body=b"again")
    consumer = Consumer(succeed(RemotingCommand(0, flag=FLAG_RESPONSE)))
    join(broker, consumer)
    header = h.ConsumeMessageDirectlyResultRequestHeader(
        consumer_group="g", client_id="client-1", msg_id=stored.append_result.msg_id)
    assert result_of(broker.call(RC.CONSUME_MESSAGE_DIRECTLY, header)).code == R.SUCCESS
    [(forwarded, _)] = consumer.requests
    assert decode_record(forwarded.body, 0).body == b"again"
    assert forwarded.ext_fields["brokerName"] == "broker-a"


def status_answer(*offsets):
    table = {MessageQueue("T", "broker-a", q): offset for q, offset in enumerate(offsets)}
    return succeed(RemotingCommand(0, flag=FLAG_RESPONSE, body=GetConsumerStatusBody(
        message_queue_table=table).to_json()))


def consumer_status(broker, client=None):
    header = h.GetConsumerStatusRequestHeader(topic="T", group="g", client_addr=client)
    answer = broker.call(RC.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, header)
    return answer if isinstance(answer, RemotingCommand) else result_of(answer)


def test_consumer_status_gathers_each_consumers_offsets(broker):
    first, second = Consumer(status_answer(3, 4)), Consumer(status_answer(5))
    second.peer = "127.0.0.1:50002"
    silent = Consumer(Deferred())
    silent.answer.errback(RemotingTimeoutError("wait response timeout 5000ms"))
    silent.peer = "127.0.0.1:50003"
    for client, connection in (("client-1", first), ("client-2", second), ("client-3", silent)):
        join(broker, connection, client_id=client)
    answer = consumer_status(broker)
    assert answer.code == R.SUCCESS
    table = GetConsumerStatusBody.from_json(answer.body).consumer_table
    assert table == {"client-1": {MessageQueue("T", "broker-a", 0): 3,
                                  MessageQueue("T", "broker-a", 1): 4},
                     "client-2": {MessageQueue("T", "broker-a", 0): 5}}
    [(asked, timeout)] = first.requests
    assert (asked.code, asked.ext_fields, timeout) == (
        RC.GET_CONSUMER_STATUS_FROM_CLIENT, {"topic": "T", "group": "g"}, 5.0)
    # only the client named
    second.answer = status_answer(5)
    only = GetConsumerStatusBody.from_json(consumer_status(broker, "client-2").body)
    assert list(only.consumer_table) == ["client-2"] and len(first.requests) == 1


def test_consumer_status_of_a_group_offline_or_too_old(broker):
    answer = consumer_status(broker)
    assert (answer.code, answer.remark) == (
        R.SYSTEM_ERROR, "No Any Consumer online in the consumer group: [g]")
    join(broker, Consumer(Deferred()), version=10)
    answer = consumer_status(broker)
    assert (answer.code, answer.remark) == (
        R.SYSTEM_ERROR, "the client does not support this feature. version=V3_0_0_BETA7")
