"""twistd plugins of rmqproto: ``twistd rmq-nameserver``, ``twistd rmq-master``."""

from twisted.application.service import ServiceMaker

rmq_nameserver = ServiceMaker(
    "rmqproto NameServer", "rmqproto.services.namesrv",
    "An Apache RocketMQ compatible NameServer", "rmq-nameserver")

rmq_master = ServiceMaker(
    "rmqproto broker", "rmqproto.services.broker",
    "An Apache RocketMQ compatible broker (master)", "rmq-master")
