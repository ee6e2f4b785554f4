"""What ``mqadmin`` asks about consumers: GET_CONSUMER_CONNECTION_LIST (``consumerConnection``,
message tracks) and QUERY_TOPIC_CONSUME_BY_WHO (``queryMsgById``'s track of who consumed)."""

from consume_support import Connection, Controller
from test_clients import heartbeat

from rmqproto.codec import headers as h
from rmqproto.codec.bodies.client import (
    ConsumeType, ConsumerConnection, GroupList, MessageModel,
)
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R


def test_consumer_connection_list(tmp_path):
    broker = Controller(tmp_path)
    a, b = Connection("10.0.0.1:1"), Connection("10.0.0.2:1")
    broker.call(RC.HEART_BEAT, body=heartbeat("A", topics=("T", "U")), connection=a)
    broker.call(RC.HEART_BEAT, body=heartbeat("B", topics=("T", "U")), connection=b)
    response = broker.call(RC.GET_CONSUMER_CONNECTION_LIST,
                           h.GetConsumerConnectionListRequestHeader(consumer_group="g"))
    assert response.code == R.SUCCESS
    body = ConsumerConnection.from_json(response.body)
    assert [(c.client_id, c.client_addr, c.language, c.version) for c in body.connection_set] == [
        ("A", "10.0.0.1:1", "JAVA", 409), ("B", "10.0.0.2:1", "JAVA", 409)]
    assert sorted(body.subscription_table) == ["T", "U"]
    assert body.subscription_table["T"].sub_string == "*"
    assert (body.consume_type, body.message_model) == (ConsumeType.CONSUME_PASSIVELY,
                                                       MessageModel.CLUSTERING)


def test_consumer_connection_list_of_an_offline_group(tmp_path):
    response = Controller(tmp_path).call(
        RC.GET_CONSUMER_CONNECTION_LIST, h.GetConsumerConnectionListRequestHeader(consumer_group="x"))
    assert (response.code, response.remark) == (R.CONSUMER_NOT_ONLINE,
                                                 "the consumer group[x] not online")


def test_query_topic_consume_by_who_joins_subscribers_and_stored_offsets(tmp_path):
    broker = Controller(tmp_path)
    broker.call(RC.HEART_BEAT, body=heartbeat("A", group="online", topics=("T",)))
    broker.consumer_offset_manager.commit_offset("offline", "T", 0, 5)
    broker.consumer_offset_manager.commit_offset("other", "U", 0, 5)

    def who(topic):
        response = broker.call(RC.QUERY_TOPIC_CONSUME_BY_WHO,
                               h.QueryTopicConsumeByWhoRequestHeader(topic=topic))
        assert response.code == R.SUCCESS
        return sorted(GroupList.from_json(response.body).group_list)

    assert who("T") == ["offline", "online"]
    assert who("U") == ["other"]
    assert who("V") == []
