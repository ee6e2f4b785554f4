"""TLS on the remoting ports: ``tls.server.mode`` and the ``tls.*`` settings (docs/security.md).

The first byte decides (Java's ``HandshakeHandler``): our own TLS and plain clients against
servers in each mode in process, then the Java 4.9.8 client's ``useTLS`` against ``twistd``
NameServer and broker daemons in each mode.
"""

import datetime
import socket
import ssl

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from twisted.internet import defer, threads

from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.bodies.route import TopicRouteData
from rmqproto.codec.frame import RemotingCommand, encode_frame
from rmqproto.remoting import RemotingConnectionError, RemotingFactory, RequestDispatcher, connect
from rmqproto.remoting.sendnow import unsent_bytes
from rmqproto.remoting.tls import (PLAIN, TLS, TlsMode, classify, client_policy, server_policy,
                                   tls_values)
from support.daemons import start_nameserver
from support.interop import java_available
from support.realreactor import poll_until, run_reactor
from support.syncclient import SyncClient, wait_until
from broker.brokerkit import start_broker

MODES = ("disabled", "permissive", "enforcing")


# ---------------------------------------------------------------- the rules


@pytest.mark.parametrize("mode, first, verdict", [
    (TlsMode.DISABLED, 0x16, "refused"), (TlsMode.DISABLED, 0x00, PLAIN),
    (TlsMode.PERMISSIVE, 0x16, TLS), (TlsMode.PERMISSIVE, 0x00, PLAIN),
    (TlsMode.ENFORCING, 0x16, TLS), (TlsMode.ENFORCING, 0x00, "refused"),
])
def test_the_first_byte_decides(mode, first, verdict):
    got = classify(mode, first, True)
    assert got == verdict if verdict != "refused" else got not in (PLAIN, TLS)


def test_without_a_context_a_handshake_is_refused_and_plain_still_served():
    assert classify(TlsMode.PERMISSIVE, 0x16, False) not in (PLAIN, TLS)
    assert classify(TlsMode.PERMISSIVE, 0x00, False) == PLAIN


def test_an_unknown_mode_is_permissive_as_java_s_tls_mode_parse():
    assert TlsMode.parse("strict") is TlsMode.PERMISSIVE
    assert TlsMode.parse("enforcing") is TlsMode.ENFORCING


def test_the_tls_config_file_wins_but_not_for_mode_and_enable(tmp_path):
    conf = tmp_path / "tls.properties"
    conf.write_text("tls.test.mode.enable=false\ntls.server.need.client.auth=require\n"
                    "tls.server.mode=disabled\ntls.enable=true\n")
    values = tls_values({"tls.config.file": str(conf), "tls.server.mode": "enforcing",
                         "tls.server.need.client.auth": "optional"})
    assert values["tls.test.mode.enable"] is False
    assert values["tls.server.need.client.auth"] == "require"
    assert values["tls.server.mode"] == "enforcing" and values["tls.enable"] is False
    assert tls_values({"tls.config.file": str(tmp_path / "missing")})["tls.test.mode.enable"]


# ---------------------------------------------------------------- in process


def _serve(reactor, config):
    dispatcher = RequestDispatcher()
    dispatcher.register(9, lambda req, context: req.response(R.SUCCESS, body=req.body))
    factory = RemotingFactory(dispatcher, reactor, tls=server_policy(config))
    return reactor.listenTCP(0, factory, interface="127.0.0.1")


@defer.inlineCallbacks
def _ask(reactor, port, tls):
    """Echo a 200 KB body over a new connection: "ok", or "refused" if it is closed."""
    factory = RemotingFactory(RequestDispatcher(), reactor, tls=tls)
    connection = yield connect(reactor, "127.0.0.1:%d" % port.getHost().port, factory)
    try:
        answer = yield connection.send_request(RemotingCommand(9, body=b"t" * 200_000), 5)
    except RemotingConnectionError:
        return "refused"
    connection.close()
    return "ok" if answer.body == b"t" * 200_000 else "garbled"


@pytest.mark.parametrize("mode, plain, tls", [
    ("disabled", "ok", "refused"), ("permissive", "ok", "ok"), ("enforcing", "refused", "ok")])
def test_our_plain_and_tls_clients_in_each_mode(mode, plain, tls):
    @defer.inlineCallbacks
    def scenario(reactor):
        port = _serve(reactor, {"tls.server.mode": mode})
        try:
            plain_got = yield _ask(reactor, port, None)
            tls_got = yield _ask(reactor, port, client_policy({"tls.enable": True}))
        finally:
            yield port.stopListening()
        return plain_got, tls_got

    assert run_reactor(scenario, timeout=20) == (plain, tls)


def _certificate(name, key, issuer=None, issuer_key=None):
    now = datetime.datetime.now(datetime.timezone.utc)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    builder = (x509.CertificateBuilder().subject_name(subject)
               .issuer_name(issuer.subject if issuer else subject).public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(days=1))
               .not_valid_after(now + datetime.timedelta(days=30)))
    if issuer is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
    return builder.sign(issuer_key or key, hashes.SHA256())


def _pem_files(directory, name, certificate, key, password=None):
    cert_path, key_path = directory / (name + ".crt"), directory / (name + ".key")
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    encryption = (serialization.BestAvailableEncryption(password.encode()) if password
                  else serialization.NoEncryption())
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8, encryption))
    return str(cert_path), str(key_path)


def test_operator_certificates_with_required_client_certificates(tmp_path):
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("test CA", ca_key)
    ca_path, _ = _pem_files(tmp_path, "ca", ca, ca_key)
    server_key, client_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(
        ec.SECP256R1())
    server_cert, server_key_path = _pem_files(
        tmp_path, "server", _certificate("localhost", server_key, ca, ca_key), server_key, "pw")
    client_cert, client_key_path = _pem_files(
        tmp_path, "client", _certificate("client", client_key, ca, ca_key), client_key)
    stranger_key = ec.generate_private_key(ec.SECP256R1())
    stranger_cert, stranger_key_path = _pem_files(
        tmp_path, "stranger", _certificate("stranger", stranger_key), stranger_key)
    server = {"tls.server.mode": "enforcing", "tls.test.mode.enable": False,
              "tls.server.certPath": server_cert, "tls.server.keyPath": server_key_path,
              "tls.server.keyPassword": "pw", "tls.server.need.client.auth": "require",
              "tls.server.authClient": True, "tls.server.trustCertPath": ca_path}

    def client(cert, key):
        return client_policy({"tls.enable": True, "tls.test.mode.enable": False,
                              "tls.client.certPath": cert, "tls.client.keyPath": key,
                              "tls.client.authServer": True, "tls.client.trustCertPath": ca_path})

    @defer.inlineCallbacks
    def scenario(reactor):
        port = _serve(reactor, server)
        try:
            got = []
            for cert, key in ((client_cert, client_key_path), ("", ""),
                              (stranger_cert, stranger_key_path)):
                got.append((yield _ask(reactor, port, client(cert, key))))
        finally:
            yield port.stopListening()
        return got

    assert run_reactor(scenario, timeout=20) == ["ok", "refused", "refused"]


def test_a_server_without_its_key_refuses_handshakes_and_serves_plain(tmp_path):
    policy = server_policy({"tls.test.mode.enable": False,
                            "tls.server.certPath": str(tmp_path / "missing.crt"),
                            "tls.server.keyPath": str(tmp_path / "missing.key")})
    assert policy.context is None and policy.classify(0x16) not in (PLAIN, TLS)
    assert policy.classify(0x00) == PLAIN


# ---------------------------------------------------------------- Java client, daemons


def _tls_client(address):
    """A :class:`SyncClient` speaking TLS (any certificate taken, as Java's test mode)."""
    client = SyncClient(address)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    client.sock = context.wrap_socket(client.sock)
    return client


def _route(namesrv_addr, topic):
    client = _tls_client(namesrv_addr)
    try:
        answer = client.call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    finally:
        client.close()
    return TopicRouteData.from_json(answer.body) if answer.code == R.SUCCESS else None


@pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")
@pytest.mark.parametrize("mode", MODES)
def test_the_java_client_s_use_tls_in_each_mode(mode, java_peers, tmp_path):
    # the broker registers over TLS where the NameServer insists on it (tls.enable)
    nameserver, namesrv_addr = start_nameserver(tmp_path, "--tls.server.mode", mode)
    broker, _ = start_broker(tmp_path, namesrv_addr, **{
        "tls.server.mode": mode, "tls.enable": str(mode == "enforcing").lower()})
    try:
        if mode == "disabled":
            wait_until(lambda: SyncClient(namesrv_addr).call(
                RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}).code == R.SUCCESS)
        else:
            wait_until(lambda: _route(namesrv_addr, "TBW102") is not None)
        clients = {use_tls: java_peers.start(
            "tls-sends-%s" % use_tls, java_peers.client_cp, "rmqproto.peers.TlsSends",
            namesrv_addr, "TlsTopic", str(use_tls).lower(), "2") for use_tls in (False, True)}
        wait_until(lambda: all(c.poll() is not None for c in clients.values()), timeout=120)
        outcomes, outputs = {}, ""
        for use_tls, client in clients.items():
            output = client.output()
            sends = [line.split()[0] for line in output.splitlines()
                     if line.startswith(("SEND_OK", "ERROR"))]
            outcomes[use_tls] = "ok" if sends == ["SEND_OK"] * 2 else "refused"
            outputs += output
        expected = {"disabled": {False: "ok", True: "refused"},
                    "permissive": {False: "ok", True: "ok"},
                    "enforcing": {False: "refused", True: "ok"}}[mode]
        assert outcomes == expected, outputs
        refusals = [line for line in nameserver.output().splitlines() + broker.output().splitlines()
                    if "closing connection from" in line]
        if mode != "permissive":
            assert refusals and all("tls.server.mode is %s" % mode in line for line in refusals)
        else:
            assert refusals == []
    finally:
        broker.stop()
        nameserver.stop()


def test_a_tls_client_that_does_not_read_is_stopped_too():
    # flow control counts the encrypted bytes waiting in the TCP transport
    sockets = []

    def lazy_client(port):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        sock = context.wrap_socket(sock)
        sockets.append(sock)
        sock.sendall(b"".join(encode_frame(RemotingCommand(8, opaque=n)) for n in range(50)))

    @defer.inlineCallbacks
    def scenario(reactor):
        dispatcher = RequestDispatcher()
        dispatcher.register(8, lambda req, context: req.response(R.SUCCESS, body=b"m" * 2**20))
        factory = RemotingFactory(dispatcher, reactor, tls=server_policy({}))
        port = reactor.listenTCP(0, factory, interface="127.0.0.1")
        try:
            yield threads.deferToThreadPool(reactor, reactor.getThreadPool(), lazy_client,
                                            port.getHost().port)
            yield poll_until(reactor, lambda: any(c._paused for c in factory.connections))
            (connection,) = factory.connections
            assert connection.transport.TLS
            assert unsent_bytes(connection.transport) < 2 * 2**20 + 64 * 1024
            assert factory.budget.charged > 0
        finally:
            for sock in sockets:
                sock.close()
            yield poll_until(reactor, lambda: not factory.connections)
            yield port.stopListening()
        return factory.budget.charged

    assert run_reactor(scenario, timeout=20) == 0


@pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")
def test_a_java_broker_with_tls_enable_registers_with_an_enforcing_nameserver(
        java_peers, tmp_path, monkeypatch):
    from support.javapeers import broker_port

    nameserver, namesrv_addr = start_nameserver(tmp_path, "--tls.server.mode", "enforcing")
    try:
        # BrokerStartup reads tls.enable from the JVM's system properties only
        monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-Dtls.enable=true")
        java_peers.broker("tls", listenPort=broker_port(), namesrvAddr=namesrv_addr)
        route = wait_until(lambda: _route(namesrv_addr, "TBW102"), timeout=60)
        assert route.broker_datas[0].broker_name == "broker-a"
        assert "closing connection from" not in nameserver.output()
    finally:
        nameserver.stop()


def test_a_broker_whose_client_context_cannot_be_made_does_not_start(tmp_path):
    from rmqproto.services.broker import Options, makeService

    options = Options()
    options.parseOptions(["--storePathRootDir", str(tmp_path), "--tls.enable", "true",
                          "--tls.test.mode.enable", "false",
                          "--tls.client.certPath", str(tmp_path / "missing.crt"),
                          "--tls.client.keyPath", str(tmp_path / "missing.key")])
    with pytest.raises(SystemExit, match="tls.enable is true but the TLS context could not"):
        makeService(options)
