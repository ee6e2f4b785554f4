"""What ``mqadmin`` asks about clients: GET_CONSUMER_CONNECTION_LIST (``consumerConnection``,
message tracks), QUERY_TOPIC_CONSUME_BY_WHO (``queryMsgById``'s track of who consumed),
GET_PRODUCER_CONNECTION_LIST (``producerConnection``) and GET_ALL_PRODUCER_INFO (``producer``)."""

from consume_support import Connection, Controller
from test_clients import heartbeat

from rmqproto.codec import headers as h
from rmqproto.codec.bodies.client import (
    ConsumeType, ConsumerConnection, GroupList, MessageModel, ProducerConnection,
    ProducerTableInfo,
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


def test_producer_connection_list(tmp_path):
    broker = Controller(tmp_path)
    broker.call(RC.HEART_BEAT, body=heartbeat("P1", group=None, producer="pg"),
                connection=Connection("10.0.0.3:1"))
    response = broker.call(RC.GET_PRODUCER_CONNECTION_LIST,
                           h.GetProducerConnectionListRequestHeader(producer_group="pg"))
    assert response.code == R.SUCCESS
    body = ProducerConnection.from_json(response.body)
    assert [(c.client_id, c.client_addr) for c in body.connection_set] == [("P1", "10.0.0.3:1")]
    missing = broker.call(RC.GET_PRODUCER_CONNECTION_LIST,
                          h.GetProducerConnectionListRequestHeader(producer_group="nobody"))
    assert (missing.code, missing.remark) == (R.SYSTEM_ERROR, "the producer group[nobody] not exist")


def test_all_producer_info(tmp_path):
    broker = Controller(tmp_path)
    assert ProducerTableInfo.from_json(broker.call(RC.GET_ALL_PRODUCER_INFO).body).data == {}
    for client, group, peer in (("P1", "pg", "10.0.0.3:1"), ("P2", "pg", "10.0.0.4:1"),
                                ("P3", "other", "10.0.0.5:1")):
        broker.call(RC.HEART_BEAT, body=heartbeat(client, group=None, producer=group),
                    connection=Connection(peer))
    response = broker.call(RC.GET_ALL_PRODUCER_INFO)
    assert response.code == R.SUCCESS
    data = ProducerTableInfo.from_json(response.body).data
    assert list(data) == ["other", "pg"]  # Java's HashMap order
    assert [(p.client_id, p.remote_ip, p.language, p.version) for p in data["pg"]] == [
        ("P1", "/10.0.0.3:1", "JAVA", 409), ("P2", "/10.0.0.4:1", "JAVA", 409)]
    assert data["other"][0].last_update_timestamp == broker.client_manager.now()


def test_delete_subscription_group(tmp_path):
    broker = Controller(tmp_path)
    groups, offsets = broker.subscription_group_manager, broker.consumer_offset_manager
    groups.find_subscription_group_config("gone")
    groups.find_subscription_group_config("kept")
    offsets.commit_offset("gone", "T", 0, 5)
    offsets.commit_offset("kept", "T", 0, 7)
    answer = broker.call(RC.DELETE_SUBSCRIPTIONGROUP, h.DeleteSubscriptionGroupRequestHeader(
        group_name="gone", remove_offset=True))
    assert answer.code == R.SUCCESS
    assert "gone" not in groups.subscription_group_table and "kept" in groups.subscription_group_table
    assert offsets.query_offset("gone", "T", 0) == -1 and offsets.query_offset("kept", "T", 0) == 7
