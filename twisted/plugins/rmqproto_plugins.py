"""twistd plugins of rmqproto: ``twistd rmq-nameserver``."""

from twisted.application.service import ServiceMaker

rmq_nameserver = ServiceMaker(
    "rmqproto NameServer", "rmqproto.services.namesrv",
    "An Apache RocketMQ compatible NameServer", "rmq-nameserver")
