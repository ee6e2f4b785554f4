"""Client settings under the Java property names and with the defaults of
``ClientConfig``, ``DefaultMQProducer`` and ``DefaultLitePullConsumer`` (4.9.8)."""

from rmqproto.client.errors import ClientError

#: ``TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC``: the route a topic unknown to the NameServer borrows.
AUTO_CREATE_TOPIC_KEY = "TBW102"

_CLIENT = {
    # ClientConfig
    "namesrvAddr": "",
    "pollNameServerInterval": 30_000,
    "instanceName": "DEFAULT",
    "heartbeatBrokerInterval": 30_000,
    # not in Java: how this client picks a NameServer (see rmqproto.client.nameserver)
    "nameServerStrategy": "random",
}

_PRODUCER = {
    # DefaultMQProducer
    "producerGroup": "DEFAULT_PRODUCER",
    "createTopicKey": AUTO_CREATE_TOPIC_KEY,
    "defaultTopicQueueNums": 4,
    "sendMsgTimeout": 3000,
    "compressMsgBodyOverHowmuch": 4096,
    "retryTimesWhenSendFailed": 2,
    "retryTimesWhenSendAsyncFailed": 2,
    "retryAnotherBrokerWhenNotStoreOK": False,
    "maxMessageSize": 4 * 1024 * 1024,
    "sendLatencyFaultEnable": False,
}

_LITE_PULL_CONSUMER = {
    # DefaultLitePullConsumer
    "consumerGroup": "DEFAULT_CONSUMER",
    "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
    "autoCommit": True,
    "autoCommitIntervalMillis": 5000,
    "pullBatchSize": 10,
    "consumerPullTimeoutMillis": 10_000,
    "brokerSuspendMaxTimeMillis": 20_000,
    "pollTimeoutMillis": 5000,
    # Java's system property rocketmq.client.rebalance.waitInterval
    "rebalanceInterval": 20_000,
}


_PUSH_CONSUMER = {
    # DefaultMQPushConsumer
    "consumerGroup": "DEFAULT_CONSUMER",
    "messageModel": "CLUSTERING",
    "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
    # a name of rmqproto.client.allocate.STRATEGIES, or a strategy function
    "allocateMessageQueueStrategy": "AVG",
    "consumeThreadMax": 20,
    "pullThresholdForQueue": 1000,
    "pullInterval": 0,
    "consumeMessageBatchMaxSize": 1,
    "pullBatchSize": 32,
    # None: 16 for a concurrent listener, unlimited for an orderly one (Java's -1)
    "maxReconsumeTimes": None,
    "suspendCurrentQueueTimeMillis": 1000,
    "persistConsumerOffsetInterval": 5000,
    # DefaultMQPushConsumerImpl's constants
    "brokerSuspendMaxTimeMillis": 15_000,
    "consumerTimeoutMillisWhenSuspend": 30_000,
    "pullTimeDelayMillsWhenException": 3000,
    # Java's system properties rocketmq.client.rebalance.waitInterval and
    # rocketmq.client.localOffsetStoreDir ("": ~/.rocketmq_offsets)
    "rebalanceInterval": 20_000,
    "offsetStoreDir": "",
}


class _Settings:
    """Settings, each an attribute named as in Java (``config.sendMsgTimeout``); times are
    milliseconds as in Java. An unknown name is refused so that a misspelt setting does not
    pass silently."""

    __slots__ = ()
    _DEFAULTS = {}
    _KIND = ""

    def __init__(self, **settings):
        unknown = sorted(set(settings) - set(self._DEFAULTS))
        if unknown:
            raise ClientError("unknown %s setting(s): %s" % (self._KIND, ", ".join(unknown)))
        for name, default in self._DEFAULTS.items():
            value = settings.get(name, default)
            if type(default) is int and (type(value) is not int or value < 0):
                raise ClientError("%s must be a non-negative int, got %r" % (name, value))
            setattr(self, name, value)

    @property
    def namesrv_list(self):
        """The NameServer addresses of ``namesrvAddr`` (separated by ``;`` as in Java)."""
        return [part.strip() for part in self.namesrvAddr.split(";") if part.strip()]

    def as_dict(self):
        return {name: getattr(self, name) for name in self._DEFAULTS}


class ProducerConfig(_Settings):
    """The settings of one producer (``ClientConfig`` and ``DefaultMQProducer``)."""

    _DEFAULTS = {**_CLIENT, **_PRODUCER}
    _KIND = "producer"
    __slots__ = tuple(_DEFAULTS)


class PushConsumerConfig(_Settings):
    """The settings of one push consumer (``ClientConfig`` and ``DefaultMQPushConsumer``)."""

    _DEFAULTS = {**_CLIENT, **_PUSH_CONSUMER}
    _KIND = "push consumer"
    __slots__ = tuple(_DEFAULTS)


class ConsumerConfig(_Settings):
    """The settings of one lite pull consumer (``ClientConfig`` and ``DefaultLitePullConsumer``)."""

    _DEFAULTS = {**_CLIENT, **_LITE_PULL_CONSUMER}
    _KIND = "consumer"
    __slots__ = tuple(_DEFAULTS)
