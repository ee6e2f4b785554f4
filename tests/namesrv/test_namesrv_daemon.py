"""The NameServer daemon as an operator runs it: ``twistd -n rmq-nameserver`` in its own process."""

import signal
import socket
import subprocess
import sys
import zlib

import pytest

from rmqproto.codec import headers as h
from rmqproto.codec.bodies.topic import RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.frame import RemotingCommand, encode_frame
from rmqproto.services.namesrv import SETTINGS, Options
from support.daemons import start_nameserver
from support.syncclient import SyncClient, call, wait_until


def test_twistd_lists_the_plugin():
    out = subprocess.run([sys.executable, "-c", "from twisted.scripts.twistd import run; run()",
                          "--help"], capture_output=True, text=True).stdout
    assert "rmq-nameserver" in out


def test_options_accept_java_namesrv_properties(tmp_path):
    conf = tmp_path / "namesrv.properties"
    conf.write_text("listenPort=19876\norderMessageEnable=true\nrocketmqHome=/opt/rmq\n")
    options = Options()
    options.parseOptions(["-c", str(conf), "--kvConfigPath", str(tmp_path / "kv.json")])
    assert options.values["listenPort"] == 19876
    assert options.values["orderMessageEnable"] is True
    assert options.unknown == ["rocketmqHome"]
    for setting in SETTINGS.by_name:
        assert setting in str(options)  # --help documents every setting


def register_request(name="broker-a", addr="127.0.0.1:10911", topic="T"):
    body = RegisterBrokerBody(topic_config_serialize_wrapper=TopicConfigSerializeWrapper(
        topic_config_table={topic: TopicConfig(topic_name=topic)})).to_json()
    header = h.RegisterBrokerRequestHeader(
        broker_name=name, broker_addr=addr, cluster_name="C", ha_server_addr="127.0.0.1:10912",
        broker_id=0, compressed=False, body_crc32=zlib.crc32(body) & 0x7FFFFFFF)
    return header.to_ext_fields(), body


def route_code(address, topic="T"):
    return call(address, RC.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}).code


@pytest.fixture
def nameserver(tmp_path):
    daemon, address = start_nameserver(tmp_path, "--scanNotActiveBrokerInterval", 200,
                                       "--brokerChannelExpiredTime", 1500)
    yield daemon, address
    assert_graceful_stop(daemon)


def assert_graceful_stop(daemon):
    """SIGTERM runs the whole shutdown (twistd then re-raises the signal, hence -15)."""
    assert daemon.stop() in (0, -signal.SIGTERM)
    assert "The Name Server shut down" in daemon.output()
    assert "Server Shut Down." in daemon.output()


def test_broker_expires_without_heartbeat_and_its_connection_is_closed(nameserver):
    daemon, address = nameserver
    broker = SyncClient(address)
    assert broker.call(RC.REGISTER_BROKER, *register_request()).code == R.SUCCESS
    assert route_code(address) == R.SUCCESS
    wait_until(lambda: route_code(address) == R.TOPIC_NOT_EXIST, timeout=10)
    assert broker.is_closed_by_peer()
    assert "The broker channel expired, 127.0.0.1:10911" in daemon.output()


def test_broker_connection_close_removes_routes_at_once(nameserver):
    _, address = nameserver
    broker = SyncClient(address)
    broker.call(RC.REGISTER_BROKER, *register_request())
    broker.close()
    wait_until(lambda: route_code(address) == R.TOPIC_NOT_EXIST, timeout=1.0, interval=0.05)


def test_kv_config_survives_restart(tmp_path):
    daemon, address = start_nameserver(tmp_path)
    ext = h.PutKVConfigRequestHeader(namespace="ns", key="k", value="v").to_ext_fields()
    assert call(address, RC.PUT_KV_CONFIG, ext).code == R.SUCCESS
    assert_graceful_stop(daemon)
    assert b'"configTable":{"ns":{"k":"v"}}' in (tmp_path / "kvConfig.json").read_bytes()
    daemon, address = start_nameserver(tmp_path)
    try:
        got = call(address, RC.GET_KV_CONFIG, {"namespace": "ns", "key": "k"})
        assert got.ext_fields == {"value": "v"}
    finally:
        daemon.stop()


BAD_INPUTS = {
    "garbage": b"\x00\x00\x00\x10garbage-bytes!!!",
    "two GiB length prefix": b"\x7f\xff\xff\xff" + b"x" * 100,
    "header longer than frame": b"\x00\x00\x00\x08\x00\x00\x00\xff" + b"{}{}",
    "invalid JSON header": b"\x00\x00\x00\x0a\x00\x00\x00\x06{nope}",
    "negative length": b"\xff\xff\xff\xf0",
}


@pytest.mark.parametrize("payload", BAD_INPUTS.values(), ids=list(BAD_INPUTS))
def test_bad_frames_close_only_that_connection(nameserver, payload):
    daemon, address = nameserver
    bystander = SyncClient(address)
    bystander.call(RC.REGISTER_BROKER, *register_request())
    bad = SyncClient(address)
    bad.send_raw(payload)
    assert bad.is_closed_by_peer()
    assert bystander.call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).code == R.SUCCESS
    assert daemon.poll() is None


def test_truncated_frame_then_disconnect_leaves_server_serving(nameserver):
    _, address = nameserver
    bad = socket.create_connection(("127.0.0.1", int(address.split(":")[1])))
    bad.sendall(b"\x00\x00\x01\x00\x00\x00\x00\x05{\"co")
    bad.close()
    assert route_code(address) == R.TOPIC_NOT_EXIST


def test_missing_fields_and_unknown_codes_get_java_answers(nameserver):
    _, address = nameserver
    missing = call(address, RC.GET_ROUTEINFO_BY_TOPIC, {})
    assert missing.code == R.SYSTEM_ERROR and "topic" in missing.remark
    unknown = call(address, 4242)
    assert (unknown.code, unknown.remark) == (R.REQUEST_CODE_NOT_SUPPORTED,
                                               " request type 4242 not supported")
    header, body = register_request()
    header["bodyCrc32"] = "1"
    bad_crc = call(address, RC.REGISTER_BROKER, header, body)
    assert (bad_crc.code, bad_crc.remark) == (R.SYSTEM_ERROR, "crc32 not match")


def test_a_thousand_concurrent_connections_keep_getting_routes(tmp_path):
    daemon, address = start_nameserver(tmp_path)
    broker = SyncClient(address)
    broker.call(RC.REGISTER_BROKER, *register_request())
    clients = [SyncClient(address) for _ in range(1000)]
    try:
        for round_ in range(2):
            for client in clients:
                client.opaque += 1
                client.send_raw(encode_frame(RemotingCommand(
                    int(RC.GET_ROUTEINFO_BY_TOPIC), opaque=client.opaque, ext_fields={"topic": "T"})))
            codes = [client.read_command().code for client in clients]
            assert codes == [R.SUCCESS] * 1000
    finally:
        for client in clients:
            client.close()
        assert_graceful_stop(daemon)
