"""twistd plugins of rmqproto: ``rmq-nameserver``, ``rmq-master``, ``rmq-local`` (and more)."""

from twisted.application.service import ServiceMaker

rmq_nameserver = ServiceMaker(
    "rmqproto NameServer", "rmqproto.services.namesrv",
    "An Apache RocketMQ compatible NameServer", "rmq-nameserver")

rmq_master = ServiceMaker(
    "rmqproto broker", "rmqproto.services.broker",
    "An Apache RocketMQ compatible broker (master)", "rmq-master")

rmq_local = ServiceMaker(
    "rmqproto local cluster", "rmqproto.services.local",
    "A NameServer, a SYNC_MASTER and its slave in one process", "rmq-local")

rmq_slave = ServiceMaker(
    "rmqproto slave broker", "rmqproto.services.slave",
    "An Apache RocketMQ compatible slave broker replicating its master", "rmq-slave")

rmq_dledger = ServiceMaker(
    "rmqproto DLedger member", "rmqproto.services.dledger",
    "One member of a DLedger (Raft) group, compatible with DLedger 0.3.1.2", "rmq-dledger")
