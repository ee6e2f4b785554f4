"""Errors a client call ends with (Java ``MQClientException`` and ``MQBrokerException``)."""

from rmqproto.errors import RmqError


class ClientError(RmqError):
    """A call the client could not complete: bad arguments, no route, retries exhausted
    (``MQClientException``). ``__cause__`` holds the last underlying error, if any."""


class BrokerError(ClientError):
    """A broker answered with an error code (``MQBrokerException``)."""

    def __init__(self, code, remark, broker_address=None):
        super().__init__("CODE: %s DESC: %s BROKER: %s" % (int(code), remark, broker_address))
        self.code = code
        self.remark = remark
        self.broker_address = broker_address
