"""The collectors on fakes and a task clock: what each figure means, without processes."""

from types import SimpleNamespace

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from rmqproto.codec.codes import ResponseCode as R
from rmqproto.codec.frame import RemotingCommand
from rmqproto.dledger.actions import Role
from rmqproto.ha.replicas import ReplicaTable
from rmqproto.ha.transfer import GroupTransferWaits
from rmqproto.metrics.dledger import RoleHistory
from rmqproto.metrics.endpoint import MetricsEndpoint, MetricsResource
from rmqproto.metrics.ha import HAMasterCollector
from rmqproto.metrics.remoting import RemotingCollector
from rmqproto.remoting.dispatch import RequestContext, RequestDispatcher

BROKER = dict(brokerClusterName="C", brokerName="b", brokerId=0)
HA_CONFIG = dict(BROKER, haSlaveFallbehindMax=1000, haSendHeartbeatInterval=5000,
                 haHousekeepingInterval=20000, mappedFileSizeCommitLog=1 << 20)


def samples_of(*collectors):
    endpoint = MetricsEndpoint(0, collectors)
    assert endpoint.service is None  # metricsPort 0: nothing listens
    text = generate_latest(endpoint.registry).decode()
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((sample.labels, sample.value))
    return found


class FakeHA:
    def __init__(self, max_offset, stored_at, now):
        self.config = HA_CONFIG
        self.table = ReplicaTable(HA_CONFIG, now)
        self.waits = GroupTransferWaits()
        self.transfer_timeouts = 0
        self.clock = now
        self.store = SimpleNamespace(
            get_max_phy_offset=lambda: max_offset,
            look_message_by_offset=lambda at: SimpleNamespace(store_timestamp=stored_at[at]))

    def now(self):
        return self.clock


def test_a_slave_behind_and_silent_shows_its_lag_and_drops_out_of_sync():
    ha = FakeHA(max_offset=5000, stored_at={3000: 10_000}, now=10_000)
    ha.table.register("conn", "127.0.0.1:4000", 10_000)
    ha.table.report("conn", 3000, 10_000, 5000, lambda: 0)
    ha.waits.add(5000, 13_000, "send")
    ha.clock = 12_500  # heard 2.5 s ago: still live, 2000 bytes behind (more than 1000)
    found = samples_of(HAMasterCollector(ha))
    slave = {"slave": "127.0.0.1:4000"}
    pick = {name: [v for labels, v in found[name] if slave.items() <= labels.items()]
            for name in ("rmqproto_ha_slave_ack_offset", "rmqproto_ha_slave_lag_bytes",
                         "rmqproto_ha_slave_lag_seconds", "rmqproto_ha_slave_in_sync")}
    assert pick == {"rmqproto_ha_slave_ack_offset": [3000], "rmqproto_ha_slave_lag_bytes": [2000],
                    "rmqproto_ha_slave_lag_seconds": [2.5], "rmqproto_ha_slave_in_sync": [0]}
    assert found["rmqproto_ha_group_transfer_waits"][0][1] == 1
    assert found["rmqproto_ha_master_max_offset"][0][1] == 5000

    ha.table.replicas["conn"].transfer_from_where = 5000  # the master sent it all
    ha.table.report("conn", 5000, 12_500, 5000, lambda: 0)  # caught up
    found = samples_of(HAMasterCollector(ha))
    assert found["rmqproto_ha_slave_lag_seconds"][0][1] == 0
    assert found["rmqproto_ha_slave_in_sync"][0][1] == 1
    ha.clock = 12_500 + 10_001  # silent for more than two heartbeat intervals
    assert samples_of(HAMasterCollector(ha))["rmqproto_ha_slave_in_sync"][0][1] == 0


def test_role_history_counts_candidacies_and_leaderships():
    server = SimpleNamespace(role_listeners=[], now=lambda: 5000)
    history = RoleHistory(server)
    (listener,) = server.role_listeners
    for role in (Role.CANDIDATE, Role.CANDIDATE, Role.LEADER, Role.FOLLOWER):
        listener(3, role)
    assert (history.candidacies, history.leaderships, history.since) == (2, 1, 5.0)


def test_requests_and_the_dispatchers_own_error_answers_are_counted_by_code():
    dispatcher = RequestDispatcher()
    dispatcher.register(105, lambda req, context: 1 / 0)
    context = RequestContext(None, "10.0.0.1:1234")
    for code in (105, 999, 999):
        dispatcher.dispatch(RemotingCommand(code), context)
    factory = SimpleNamespace(connections={object(), object()})
    found = samples_of(RemotingCollector([("remoting", factory)], dispatcher, (["svc"], ["x"])))
    assert found["rmqproto_remoting_connections"] == [({"svc": "x", "listener": "remoting"}, 2)]
    assert found["rmqproto_remoting_requests_total"] == [
        ({"svc": "x", "code": "GET_ROUTEINFO_BY_TOPIC"}, 1), ({"svc": "x", "code": "999"}, 2)]
    assert sorted(found["rmqproto_remoting_errors_total"], key=lambda s: s[1]) == [
        ({"svc": "x", "code": R.SYSTEM_ERROR.name}, 1),
        ({"svc": "x", "code": R.REQUEST_CODE_NOT_SUPPORTED.name}, 2)]


def test_the_resource_answers_the_text_format():
    endpoint = MetricsEndpoint(0, [])
    headers = {}
    fake_request = SimpleNamespace(setHeader=lambda name, value: headers.__setitem__(name, value))
    body = MetricsResource(endpoint.registry).render_GET(fake_request)
    assert headers[b"Content-Type"].startswith(b"text/plain") and isinstance(body, bytes)
