"""The Python RocketMQ client: one sans-I/O core and two transports over it.

The core (:mod:`~rmqproto.client.config`, :mod:`~rmqproto.client.nameserver`,
:mod:`~rmqproto.client.route`, :mod:`~rmqproto.client.fault`,
:mod:`~rmqproto.client.message`, :mod:`~rmqproto.client.lookup`,
:mod:`~rmqproto.client.producer`, :mod:`~rmqproto.client.transaction`,
:mod:`~rmqproto.client.consumer`, :mod:`~rmqproto.client.allocate`,
:mod:`~rmqproto.client.push`) never opens a socket
nor reads a clock: it yields the requests to make and is given their answers and the
time. :mod:`~rmqproto.client.blocking` runs it over plain sockets (scripts, Spark
executors), :mod:`~rmqproto.client.deferred` over Twisted (Deferreds). See docs/client.md.
"""

from rmqproto.client.config import ConsumerConfig, ProducerConfig, PushConsumerConfig
from rmqproto.client.errors import BrokerError, ClientError
from rmqproto.client.message import Message, ReceivedMessage, SendResult, SendStatus
from rmqproto.client.push import ConsumeStatus
from rmqproto.client.route import MessageQueue
from rmqproto.client.transaction import LocalTransactionState, TransactionSendResult

__all__ = ["ProducerConfig", "ConsumerConfig", "PushConsumerConfig", "ClientError", "BrokerError",
           "Message", "SendResult", "SendStatus", "ReceivedMessage", "MessageQueue",
           "ConsumeStatus", "LocalTransactionState", "TransactionSendResult"]
