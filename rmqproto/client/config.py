"""Producer settings under the Java property names and with the defaults of
``ClientConfig`` and ``DefaultMQProducer`` (4.9.8)."""

from rmqproto.client.errors import ClientError

#: ``TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC``: the route a topic unknown to the NameServer borrows.
AUTO_CREATE_TOPIC_KEY = "TBW102"

_DEFAULTS = {
    # ClientConfig
    "namesrvAddr": "",
    "pollNameServerInterval": 30_000,
    "instanceName": "DEFAULT",
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
    # not in Java: how this client picks a NameServer (see rmqproto.client.nameserver)
    "nameServerStrategy": "random",
}


class ProducerConfig:
    """The settings of one producer, each an attribute named as in Java
    (``config.sendMsgTimeout``); times are milliseconds as in Java.

    An unknown name is refused so that a misspelt setting does not pass silently.
    """

    __slots__ = tuple(_DEFAULTS)

    def __init__(self, **settings):
        unknown = sorted(set(settings) - set(_DEFAULTS))
        if unknown:
            raise ClientError("unknown producer setting(s): %s" % ", ".join(unknown))
        for name, default in _DEFAULTS.items():
            value = settings.get(name, default)
            if type(default) is int and (type(value) is not int or value < 0):
                raise ClientError("%s must be a non-negative int, got %r" % (name, value))
            setattr(self, name, value)

    @property
    def namesrv_list(self):
        """The NameServer addresses of ``namesrvAddr`` (separated by ``;`` as in Java)."""
        return [part.strip() for part in self.namesrvAddr.split(";") if part.strip()]

    def as_dict(self):
        return {name: getattr(self, name) for name in _DEFAULTS}
