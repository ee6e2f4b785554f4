"""A broker switching role with its DLedger member (``BrokerController#changeToSlave`` /
``#changeToMaster``), on a fake clock: settings, sends refused or taken, the transaction
checker, delayed delivery, the metadata copy and the forced registrations."""

import pytest

from rmqproto.broker.dledgerbroker import DLedgerRoles, MemberDispatcher
from rmqproto.codec.codes import RequestCode, ResponseCode
from rmqproto.codec.frame import RemotingCommand, decode_frame
from rmqproto.dledger.actions import Role
from rmqproto.remoting import RequestContext, RequestDispatcher
from broker.brokerkit import call, make_controller

PEERS = "n0-127.0.0.1:40911;n1-127.0.0.1:40912;n2-127.0.0.1:40913"


class Member:
    """What the role changes read of a DLedger member."""

    def __init__(self):
        self.role_listeners = []
        self.append_observers = []
        self.node = self
        self.store = self
        self.role, self.term = Role.CANDIDATE, 0
        self.end_index = self.end_term = self.committed_index = -1
        self.dispatcher = RequestDispatcher()
        self.now = lambda: 0

    def become(self, role, term):
        self.role, self.term = role, term
        for listener in list(self.role_listeners):
            listener(term, role)


@pytest.fixture
def broker(tmp_path):
    controller = make_controller(tmp_path, enableDLegerCommitLog=True, dLegerGroup="broker-a",
                                 dLegerPeers=PEERS, dLegerSelfId="n1")
    store = controller.store
    store.dledger = Member()
    store.dispatched = lambda: store.behind == 0
    store.behind = 0
    store.recovered = 0

    def recover_topic_queue_table():
        store.recovered += 1
    store.recover_topic_queue_table = recover_topic_queue_table
    registrations = []
    controller.registration.register_all = lambda **kw: registrations.append(kw)
    controller.start()
    roles = DLedgerRoles(controller)
    roles.startService()
    yield controller, store.dledger, roles, registrations
    roles.stopService()


def send(controller):
    header = {"producerGroup": "PG", "topic": "TopicTest", "defaultTopic": "TBW102",
              "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0",
              "bornTimestamp": "1700000000000", "flag": "0", "properties": "", "reconsumeTimes": "0"}
    return call(controller, RequestCode.SEND_MESSAGE, header, b"hello")


def test_a_dledger_broker_starts_with_id_minus_one_and_registers_only_with_a_role(broker):
    controller, member, roles, registrations = broker
    assert controller.config["brokerId"] == -1 and registrations == []
    assert not controller.transaction_check_service._loop      # started by a role change only
    assert not controller.schedule_service.started


def test_follower_is_a_slave_that_refuses_sends_and_copies_metadata(broker):
    controller, member, roles, registrations = broker
    controller.transaction_check_service.start()
    member.become(Role.FOLLOWER, 1)
    assert (controller.config["brokerId"], controller.config["brokerRole"]) == (2, "SLAVE")
    assert controller.store.config["brokerRole"] == "SLAVE"
    assert registrations == [dict(check_order_config=True, oneway=True)]
    assert controller.transaction_check_service._loop is None
    assert send(controller).code == ResponseCode.SERVICE_NOT_AVAILABLE
    # the metadata copy follows the master the NameServer names, from scratch after each change
    assert roles.slave_sync._first.active()
    controller.registration._registered([_result("127.0.0.1:30911")], False)
    assert roles.slave_sync.master_addr == "127.0.0.1:30911"
    member.become(Role.FOLLOWER, 2)
    assert roles.slave_sync.master_addr is None and controller.registration.master_addr is None
    assert registrations[-1] == dict(check_order_config=True, oneway=True)


def _result(master_addr):
    from rmqproto.broker.registration import RegisterBrokerResult
    return RegisterBrokerResult(master_addr, None, None)


def test_leader_waits_for_its_log_then_is_the_sync_master(broker):
    controller, member, roles, registrations = broker
    member.become(Role.CANDIDATE, 1)                  # from the configured ASYNC_MASTER
    assert controller.config["brokerRole"] == "SLAVE" and len(registrations) == 1
    member.end_index = member.end_term = 4
    member.committed_index = 2
    member.become(Role.LEADER, 4)
    clock = controller.reactor
    clock.advance(0)
    assert controller.config["brokerRole"] == "SLAVE"   # entries of its term not committed
    member.committed_index = 4
    controller.store.behind = 10
    clock.advance(0.1)
    assert controller.config["brokerRole"] == "SLAVE"   # committed, not dispatched
    controller.store.behind = 0
    clock.advance(0.1)
    assert (controller.config["brokerId"], controller.config["brokerRole"]) == (0, "SYNC_MASTER")
    assert controller.store.config["brokerRole"] == "SYNC_MASTER"
    assert controller.store.recovered == 1 and len(registrations) == 2
    assert controller.transaction_check_service._loop is not None
    assert controller.schedule_service.started
    assert not clock.getDelayedCalls() or all(  # no poll left
        call.func != roles.poll for call in clock.getDelayedCalls())
    assert send(controller).code == ResponseCode.SUCCESS
    # losing the leadership makes it a slave again
    member.become(Role.CANDIDATE, 5)
    assert (controller.config["brokerId"], controller.config["brokerRole"]) == (2, "SLAVE")
    assert not controller.schedule_service.started
    assert controller.transaction_check_service._loop is None


def test_a_leader_that_loses_its_term_while_waiting_stays_slave(broker):
    controller, member, roles, registrations = broker
    member.become(Role.FOLLOWER, 1)
    member.end_index, member.end_term, member.committed_index = 3, 2, 1
    member.become(Role.LEADER, 2)
    controller.reactor.advance(0.1)
    member.role, member.term = Role.CANDIDATE, 3          # seen by the next poll first
    controller.reactor.advance(0.1)
    assert controller.config["brokerRole"] == "SLAVE" and controller.store.recovered == 0
    assert roles.handler.next_deadline() is None


def test_a_role_taken_before_the_broker_listened_is_carried_out(tmp_path):
    controller = make_controller(tmp_path, enableDLegerCommitLog=True, dLegerGroup="g",
                                 dLegerPeers=PEERS, dLegerSelfId="n2")
    controller.store.dledger = member = Member()
    member.role, member.term = Role.FOLLOWER, 3
    roles = DLedgerRoles(controller)
    roles.startService()
    assert controller.config["brokerId"] == 3
    roles.stopService()
    assert roles.role_changed not in member.role_listeners


def test_the_member_port_answers_once_the_store_made_the_member(broker):
    controller, member, roles, registrations = broker
    served = []
    member.dispatcher.register(int(RequestCode.HEART_BEAT), lambda request, context: (
        served.append(request) or request.response(ResponseCode.SUCCESS).encode()))
    request = RemotingCommand(int(RequestCode.HEART_BEAT), opaque=3)
    dispatcher = MemberDispatcher(controller.store)
    assert dispatcher.dispatch(request, RequestContext(None, "peer")) is not None
    assert served == [request]
    controller.store.dledger = None                      # not loaded yet
    answer = dispatcher.dispatch(request, RequestContext(None, "peer"))
    assert decode_frame(answer[4:]).code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
