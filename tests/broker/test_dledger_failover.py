"""Three DLedger brokers and a NameServer in one process on a real reactor (short DLedger
heartbeats, so that a failover takes about a second): the election makes one broker master
(brokerId 0) and the others slaves with their member's number + 1, all registered; messages
sent to the master are read back on it; when the master stops, another member's broker takes
over as master with every acknowledged message and takes new sends, and the remaining slave
copies the new master's metadata (a topic created on it) once a registration answer names it."""

import shutil

from twisted.internet import defer

from rmqproto.codec.codes import RequestCode, ResponseCode
from rmqproto.codec.headers import CreateTopicRequestHeader
from rmqproto.codec.frame import RemotingCommand
from rmqproto.codec.message import decode_record
from rmqproto.remoting import RemotingClient
from rmqproto.services import namesrv
from rmqproto.services.broker import BrokerService
from rmqproto.services.local import Options, broker_configs, namesrv_config
from rmqproto.store.dledger import DLedgerMessageStore
from support.processes import free_port
from support.realreactor import poll_until, run_reactor

TOPIC = "FailoverTopic"
#: DLedger timing for a quick test: heartbeats every 200 ms (a follower stands after 600 ms)
FAST = dict(heartBeatTimeIntervalMs=200, mappedFileSizeForEntryIndex=32 * 1024)


def configs(tmp_path):
    options = Options()
    base = free_port(30) + 2
    options.parseOptions(["--dledger", "--dataDir", str(tmp_path), "--listenPort", str(base),
                          "--namesrvPort", str(base + 26), "--metricsPort", "0"])
    shared = {"mappedFileSizeCommitLog": str(1024 * 1024), "mappedFileSizeConsumeQueue": "6000"}
    return options.values, broker_configs(options.values, shared, dledger=True)


def send_request(body):
    header = {"producerGroup": "PG", "topic": TOPIC, "defaultTopic": "TBW102",
              "defaultTopicQueueNums": "1", "queueId": "0", "sysFlag": "0",
              "bornTimestamp": "1700000000000", "flag": "0", "properties": "",
              "reconsumeTimes": "0"}
    return RemotingCommand(int(RequestCode.SEND_MESSAGE), ext_fields=header, body=body)


def roles(brokers):
    return {b.config["dLegerSelfId"]: (b.config["brokerId"], b.config["brokerRole"])
            for b in brokers}


def test_a_dledger_group_fails_over_in_process(tmp_path):
    local, broker_settings = configs(tmp_path)

    @defer.inlineCallbacks
    def scenario(reactor):
        names = namesrv.NameServerService(namesrv_config(local), reactor)
        brokers = [BrokerService(c, reactor, store=DLedgerMessageStore(c, reactor,
                                                                       dledger_settings=FAST))
                   for c in broker_settings]
        client = RemotingClient(reactor)
        running = [names, *brokers]
        try:
            for service in running:
                service.privilegedStartService()
                service.startService()
            yield poll_until(reactor, lambda: sorted(i for i, _ in roles(brokers).values())
                             in ([0, 1, 2], [0, 1, 3], [0, 2, 3]), timeout=20)
            for member, (broker_id, role) in roles(brokers).items():
                assert (broker_id, role) in ((0, "SYNC_MASTER"), (int(member[1:]) + 1, "SLAVE"))
            master = next(b for b in brokers if b.config["brokerId"] == 0)
            slave = next(b for b in brokers if b.config["brokerId"] != 0)
            refused = yield client.invoke("127.0.0.1:%d" % slave.port, send_request(b"no"), 3)
            assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE
            for i in range(20):
                answer = yield client.invoke("127.0.0.1:%d" % master.port,
                                             send_request(b"m%d" % i), 3)
                assert answer.code == ResponseCode.SUCCESS, answer.remark

            yield master.stopService()
            running.remove(master)
            rest = [b for b in brokers if b is not master]
            yield poll_until(reactor, lambda: any(b.config["brokerId"] == 0 for b in rest),
                             timeout=20)
            new = next(b for b in rest if b.config["brokerId"] == 0)
            other = next(b for b in rest if b is not new)
            assert other.config["brokerRole"] == "SLAVE"
            answer = yield client.invoke("127.0.0.1:%d" % new.port, send_request(b"after"), 3)
            assert answer.code == ResponseCode.SUCCESS, answer.remark
            # every acknowledged message is on the new master, in order, then the new one
            store = new.controller.store
            yield poll_until(reactor, lambda: store.get_max_offset_in_queue(TOPIC, 0) == 21)
            got = store.get_message("G", TOPIC, 0, 0, 32)
            assert [decode_record(bytes(m)).body for m in got.messages] == \
                [b"m%d" % i for i in range(20)] + [b"after"]
            # the slave copies the new master's topics (registration ≤ 10 s, then the sync)
            header = CreateTopicRequestHeader(
                topic="MadeOnTheNewMaster", default_topic="TBW102", read_queue_nums=2,
                write_queue_nums=2, perm=6, topic_filter_type="SINGLE_TAG", topic_sys_flag=0,
                order=False)
            made = yield client.invoke("127.0.0.1:%d" % new.port, RemotingCommand(
                int(RequestCode.UPDATE_AND_CREATE_TOPIC), ext_fields=header.to_ext_fields()), 3)
            assert made.code == ResponseCode.SUCCESS
            topics = other.controller.topic_config_manager.topic_config_table
            yield poll_until(reactor, lambda: "MadeOnTheNewMaster" in topics, timeout=30)
        finally:
            for service in reversed(running):
                yield service.stopService()
            yield client.close()

    try:
        run_reactor(scenario, timeout=60)
    finally:
        for member in ("n0", "n1", "n2"):  # DLedger reserves its segments whole
            shutil.rmtree(tmp_path / member, ignore_errors=True)
