"""``rmqadmin`` without servers: bad arguments (exit 2), an unreachable NameServer (exit 1,
one line), the table and JSON forms, and the admin core's choices driven by scripted answers
(HA status from GET_BROKER_HA_STATUS or, on a 4.9 broker, from each broker's runtime info;
an offline group's offsets reset only backwards without force; DLedger roles)."""

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rmqproto.client.admin import AdminConfig, AdminCore
from rmqproto.client.lookup import Reply, run
from rmqproto.codec.bodies.client import MessageQueue as QueueBean
from rmqproto.codec.bodies.ha import HAConnectionRuntimeInfo, HARuntimeInfo
from rmqproto.codec.bodies.offsets import ConsumeStats, OffsetWrapper
from rmqproto.codec.bodies.route import BrokerData, ClusterInfo, KVTable, QueueData, TopicRouteData
from rmqproto.codec.codes import RequestCode, RequestCodeV5, ResponseCode
from rmqproto.codec.dledger_rpc import DLedgerRequestCode, MetadataResponse
from rmqproto.tools.rmqadmin import main
from rmqproto.tools.rmqadmin.commands import COMMANDS, parse_time
from rmqproto.tools.rmqadmin.output import Record, Sections, Table

NS = "ns:9876"


@pytest.mark.parametrize("argv, message", [
    (["topicRoute", "-n", NS], "the following arguments are required: -t/--topic"),
    (["brokerStatus", "-n", NS], "brokerStatus needs exactly one of -b"),
    (["brokerStatus", "-n", NS, "-b", "h:1", "-c", "C"], "brokerStatus needs exactly one of -b"),
    (["updateTopic", "-n", NS, "-b", "h:1", "-t", "T", "-p", "5"], "invalid choice: 5"),
    (["updateTopic", "-n", NS, "-b", "h:1", "-t", "T", "-o", "maybe"], "invalid _boolean value"),
    (["queryMsgByOffset", "-n", NS, "-t", "T", "-b", "b", "-i", "x", "-o", "0"], "invalid int value"),
    (["clusterList"], "no NameServer: give -n host:port or set NAMESRV_ADDR"),
    (["noSuchCommand"], "invalid choice: 'noSuchCommand'"),
])
def test_bad_arguments_exit_2_with_usage(argv, message, capsys, monkeypatch):
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_console_script_is_rmqadmin_main():
    setup = (Path(__file__).resolve().parents[2] / "setup.py").read_text()
    assert '"rmqadmin = rmqproto.tools.rmqadmin:main"' in setup


def test_every_command_of_the_task_exists():
    assert set(COMMANDS) == {
        "clusterList", "topicList", "topicRoute", "topicStatus", "updateTopic", "deleteTopic",
        "brokerStatus", "getBrokerConfig", "updateBrokerConfig", "consumerProgress",
        "queryMsgById", "queryMsgByKey", "queryMsgByOffset", "resetOffsetByTime", "sendMessage",
        "consumeMessage", "haStatus"}


def test_unreachable_nameserver_is_one_line_and_exit_1():
    result = subprocess.run([sys.executable, "-m", "rmqproto.tools.rmqadmin", "topicList"],
                            capture_output=True, text=True, timeout=60,
                            env={"NAMESRV_ADDR": "127.0.0.1:1", "PATH": "", "PYTHONPATH": ":".join(sys.path)})
    assert result.returncode == 1 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("rmqadmin topicList: no NameServer answered (connect to 127.0.0.1:1 failed")


def test_argument_errors_found_by_the_command_exit_1(capsys):
    for argv, message in (
            (["sendMessage", "-t", "T", "-p", "x", "-b", "broker-a"], "-b (broker name) and -i (queue id) go together"),
            (["consumeMessage", "-t", "T", "-i", "1"], "Please set the brokerName before queueId!"),
            (["haStatus", "-g", "g"], "-g (DLedger group) and -p (its peers) go together"),
            (["resetOffsetByTime", "-g", "G", "-t", "T", "-s", "yesterday"], "neither now, milliseconds")):
        assert main(argv + ["-n", "127.0.0.1:1"]) == 1
        assert message in capsys.readouterr().err


def test_times_and_output_forms():
    assert parse_time("1700000000123") == 1700000000123
    assert abs(parse_time("now") - parse_time(str(parse_time("now")))) < 1000
    assert parse_time("2024-01-02#03:04:05:678") % 1000 == 678
    table = Table(["brokerName", "queueId", "tps", "inSync"], [["broker-a", 0, 1.5, True], ["b", 12, None, False]])
    assert table.lines() == ["brokerName  queueId  tps   inSync",
                             "broker-a    0        1.50  true",
                             "b           12       -     false"]
    assert table.to_json() == [dict(brokerName="broker-a", queueId=0, tps=1.5, inSync=True),
                               dict(brokerName="b", queueId=12, tps=None, inSync=False)]
    parts = Sections(first=Record(a=1, long_name="x"), second=table)
    assert parts.lines()[:4] == ["== first ==", "a         : 1", "long_name : x", ""]
    when = parse_time("2024-01-02#03:04:05:006")
    assert Record(storeTimestamp=when, lastTimestamp=0).lines() == [
        "storeTimestamp : 2024-01-02 03:04:05,006", "lastTimestamp  : 0"]
    assert json.loads(json.dumps(parts.to_json())) == {"first": {"a": 1, "long_name": "x"},
                                                       "second": table.to_json()}


# ---------------------------------------------------------------- the core, scripted

class Servers:
    """Answers by (address, request code): a response body, a ``(code, remark)`` or a
    function of the request giving the response."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def __call__(self, call):
        self.calls.append((call.address, call.request.code, dict(call.request.ext_fields or {})))
        answer = self.answers.get((call.address, call.request.code))
        if callable(answer):
            return Reply(answer(call.request), None, 0)
        if answer is None:
            return Reply(None, ConnectionRefusedError("refused"), 0)
        if isinstance(answer, tuple):
            return Reply(call.request.response(answer[0], answer[1]), None, 0)
        return Reply(call.request.response(ResponseCode.SUCCESS, body=answer), None, 0)


def core():
    return AdminCore(AdminConfig(namesrvAddr=NS))


CLUSTER = ClusterInfo(
    broker_addr_table={"a": BrokerData(broker_name="a", cluster="C", broker_addrs={0: "m:1", 1: "s:1"})},
    cluster_addr_table={"C": ["a"]}).to_json()


def runtime(max_offset):
    return KVTable(table={"commitLogMaxOffset": str(max_offset)}).to_json()


def test_ha_status_from_the_master_or_from_each_broker():
    ha = HARuntimeInfo(master=True, master_commit_log_max_offset=900, ha_connection_info=[
        HAConnectionRuntimeInfo(addr="s:5", slave_ack_offset=700, diff=200, in_sync=False)])
    servers = Servers({(NS, RequestCode.GET_BROKER_CLUSTER_INFO): CLUSTER,
                       ("m:1", RequestCodeV5.GET_BROKER_HA_STATUS): ha.to_json()})
    (master,) = run(core().ha_status(), servers)
    assert (master.max_offset, master.source) == (900, "GET_BROKER_HA_STATUS")
    assert master.slaves == [("s:5", 700, 200, False)]

    servers = Servers({(NS, RequestCode.GET_BROKER_CLUSTER_INFO): CLUSTER,
                       ("m:1", RequestCodeV5.GET_BROKER_HA_STATUS):
                           (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "not supported"),
                       ("m:1", RequestCode.GET_BROKER_RUNTIME_INFO): runtime(900),
                       ("s:1", RequestCode.GET_BROKER_RUNTIME_INFO): runtime(650)})
    (master,) = run(core().ha_status(), servers)
    assert (master.max_offset, master.source) == (900, "GET_BROKER_RUNTIME_INFO")
    assert master.slaves == [("s:1", 650, 250, None)]


def test_offline_reset_moves_only_backwards_without_force():
    route = TopicRouteData(queue_datas=[QueueData(broker_name="a", read_queue_nums=2, write_queue_nums=2, perm=6)],
                           broker_datas=[BrokerData(broker_name="a", cluster="C", broker_addrs={0: "m:1"})])
    stats = ConsumeStats(offset_table={
        QueueBean(topic="T", broker_name="a", queue_id=0): OffsetWrapper(broker_offset=10, consumer_offset=8),
        QueueBean(topic="T", broker_name="a", queue_id=1): OffsetWrapper(broker_offset=10, consumer_offset=3)})
    searched = {"0": "5", "1": "6"}  # queue id -> offset of the time: 0 moves back, 1 would move on
    servers = Servers({
        (NS, RequestCode.GET_ROUTEINFO_BY_TOPIC): route.to_json(),
        ("m:1", RequestCode.INVOKE_BROKER_TO_RESET_OFFSET): (ResponseCode.CONSUMER_NOT_ONLINE, "offline"),
        ("m:1", RequestCode.GET_CONSUME_STATS): stats.to_json(),
        ("m:1", RequestCode.SEARCH_OFFSET_BY_TIMESTAMP): lambda request: request.response(
            ResponseCode.SUCCESS, ext_fields={"offset": searched[request.ext_fields["queueId"]]}),
        ("m:1", RequestCode.UPDATE_CONSUMER_OFFSET): b""})
    how, rollbacks = run(core().reset_offset("G", "T", 1234, force=False), servers)
    assert how == "offline"
    assert [(r.queue.queue_id, r.timestamp_offset, r.reset_offset) for r in rollbacks] == [(0, 5, 5), (1, 6, 3)]
    updates = [fields for _, code, fields in servers.calls if code == RequestCode.UPDATE_CONSUMER_OFFSET]
    assert [(u["queueId"], u["commitOffset"]) for u in updates] == [("0", "5")]


def test_dledger_roles_from_metadata():
    def meta(leader):
        return MetadataResponse(group="g", leader_id=leader, peers={"n0": "h:0", "n1": "h:1"}).to_json()
    servers = Servers({("h:0", DLedgerRequestCode.METADATA): meta("n0"),
                       ("h:1", DLedgerRequestCode.METADATA): meta(None)})
    members = run(core().raft_members("g", "n0-h:0;n1-h:1;n2-h:2"), servers)
    assert [(m.member_id, m.role, m.leader_id, m.term) for m in members] == [
        ("n0", "LEADER", "n0", None), ("n1", "CANDIDATE", None, None), ("n2", "UNREACHABLE", None, None)]
    with pytest.raises(Exception, match="peers must be id-host:port"):
        run(core().raft_members("g", "h:0"), servers)


def test_json_of_a_command_against_scripted_servers(monkeypatch):
    servers = Servers({(NS, RequestCode.GET_BROKER_CLUSTER_INFO): CLUSTER,
                       ("m:1", RequestCode.GET_BROKER_RUNTIME_INFO): runtime(42),
                       ("s:1", RequestCode.GET_BROKER_RUNTIME_INFO): runtime(40)})
    monkeypatch.setattr("rmqproto.tools.rmqadmin.session.AdminSession._perform",
                        lambda self, call: servers(call))
    out = io.StringIO()
    assert main(["brokerStatus", "-c", "C", "-n", NS, "--json"], out=out) == 0
    assert json.loads(out.getvalue()) == {"m:1 a[0]": {"commitLogMaxOffset": "42"},
                                          "s:1 a[1]": {"commitLogMaxOffset": "40"}}


def test_ordered_topic_on_a_cluster_puts_its_order_conf(monkeypatch):
    servers = Servers({(NS, RequestCode.GET_BROKER_CLUSTER_INFO): CLUSTER,
                       ("m:1", RequestCode.UPDATE_AND_CREATE_TOPIC): b"",
                       (NS, RequestCode.PUT_KV_CONFIG): b""})
    monkeypatch.setattr("rmqproto.tools.rmqadmin.session.AdminSession._perform",
                        lambda self, call: servers(call))
    assert main(["updateTopic", "-c", "C", "-t", "T", "-w", "4", "-o", "true", "-n", NS],
                out=io.StringIO()) == 0
    made = [(a, f) for a, code, f in servers.calls if code == RequestCode.UPDATE_AND_CREATE_TOPIC]
    assert [(a, f["topic"], f["writeQueueNums"], f["order"]) for a, f in made] == [("m:1", "T", "4", "true")]
    (conf,) = [f for _, code, f in servers.calls if code == RequestCode.PUT_KV_CONFIG]
    assert conf == {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "a:4"}
