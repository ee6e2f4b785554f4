"""The HA port with ``haTlsEnable`` (issue 43, failure 2): our slave with a certificate
of the private CA replicates over TLS; a TLS peer without a certificate, or with one of
another CA, and a plain-TCP peer not in ``haSlaveAllowList`` are refused with one log line
and get no byte of the commit log; a plain peer in the list (a Java slave) is served.
Real TCP and real TLS on a real reactor; the master's store is a fake, the slave's real."""

from types import SimpleNamespace

import pytest
from twisted.internet import defer, protocol, ssl
from twisted.logger import LogLevel, capturedLogs

from rmqproto.broker.config import SETTINGS, apply_startup_rules
from rmqproto.codec.ha import encode_slave_report
from rmqproto.ha.client import HAClient
from rmqproto.ha.master import HAMasterService
from rmqproto.ha.slave import HAClientConnector
from rmqproto.ha.tls import tls_factory, tls_options
from rmqproto.store.defaultstore import DefaultMessageStore

from support.fakehamaster import FakeHAStore
from support.hacerts import make_certificates
from support.realreactor import run_reactor
from support.recordstream import records
from support.scriptedmaster import SEGMENT, until

GOOD = records(30)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("certs"))


def tls_settings(certs, name):
    return dict(haTlsEnable=True, haTlsCertPath=certs[name]["cert"],
                haTlsKeyPath=certs[name]["key"], haTlsTrustCertPath=certs["ca"]["cert"])


def start_master(reactor, certs, **overrides):
    values, unknown = SETTINGS.resolve(dict(
        mappedFileSizeCommitLog=SEGMENT, haListenPort=0, bindAddress="127.0.0.1",
        brokerRole="SYNC_MASTER", **tls_settings(certs, "master")), overrides)
    assert not unknown
    store = FakeHAStore(reactor, SEGMENT)
    store.append(GOOD)
    ha = HAMasterService(SimpleNamespace(config=values, reactor=reactor, store=store))
    ha.startService()
    return ha


class Peer(protocol.Protocol):
    """A client of the HA port: reports 0 and keeps what it is sent."""

    def connectionMade(self):
        self.factory.peer = self
        self.received = b""
        self.lost = False
        self.transport.write(encode_slave_report(0))

    def dataReceived(self, data):
        self.received += data

    def connectionLost(self, reason):
        self.lost = True


@defer.inlineCallbacks
def peer_gets(reactor, ha, tls=None):
    """Connect a :class:`Peer` (with TLS options ``tls``) until it is closed or served:
    the bytes it received, and whether it was closed."""
    factory = protocol.ClientFactory.forProtocol(Peer)
    factory.peer = None
    reactor.connectTCP("127.0.0.1", ha.port,
                       factory if tls is None else tls_factory(tls, True, factory, reactor))
    yield until(reactor, lambda: factory.peer is not None
                and (factory.peer.lost or len(factory.peer.received) >= len(GOOD)))
    return factory.peer.received, factory.peer.lost


def refusals(events):
    return [e for e in events if e["log_level"] >= LogLevel.warn
            and e.get("log_format", "").startswith("HA port refuses")]


def run(scenario):
    with capturedLogs() as events:
        run_reactor(scenario, timeout=30)
    return events


def test_our_tls_slave_replicates(tmp_path, certs):
    @defer.inlineCallbacks
    def scenario(reactor):
        ha = start_master(reactor, certs)
        values, _ = SETTINGS.resolve(dict(
            brokerRole="SLAVE", brokerId=1, storePathRootDir=str(tmp_path),
            mappedFileSizeCommitLog=SEGMENT, **tls_settings(certs, "slave")))
        store = DefaultMessageStore(apply_startup_rules(values), reactor)
        store.load()
        store.start()
        connector = HAClientConnector(HAClient(store, values), reactor, tls=tls_options(values))
        try:
            connector.start()
            connector.update_master_address("127.0.0.1:%d" % ha.port)
            yield until(reactor, lambda: ha.table.push2slave_max_offset == len(GOOD))
            assert bytes(store.commit_log.queue.files[0].mm[:len(GOOD)]) == GOOD
            [connection] = ha.table.replicas
            assert connection.transport.getPeerCertificate().get_subject().CN == "slave"
        finally:
            connector.shutdown()
            store.shutdown()
            yield ha.stopService()

    assert refusals(run(scenario)) == []


@pytest.mark.parametrize("who", ["no certificate", "another CA's certificate", "plain TCP"])
def test_peers_without_a_valid_certificate_are_refused(certs, who):
    @defer.inlineCallbacks
    def scenario(reactor):
        ha = start_master(reactor, certs)
        try:
            if who == "no certificate":
                tls = ssl.CertificateOptions(trustRoot=ssl.trustRootFromCertificates(
                    [ssl.Certificate.loadPEM(open(certs["ca"]["cert"], "rb").read())]))
            elif who == "another CA's certificate":
                tls = tls_options(dict(haTlsCertPath=certs["rogue"]["cert"],
                                       haTlsKeyPath=certs["rogue"]["key"],
                                       haTlsTrustCertPath=certs["ca"]["cert"]))
            else:
                tls = None
            received, lost = yield peer_gets(reactor, ha, tls)
            assert received == b"" and lost
            assert len(ha.table) == 0 and ha.table.push2slave_max_offset == 0
        finally:
            yield ha.stopService()

    [line] = refusals(run(scenario))
    assert line["addr"].startswith("127.0.0.1:")
    expected = "plain TCP while haTlsEnable" if who == "plain TCP" else "TLS handshake failed"
    assert expected in line["why"]


def test_a_plain_peer_in_the_allow_list_is_served_beside_tls(certs):
    """A Java slave speaks plain TCP: with haTlsEnable it is served from haSlaveAllowList."""
    @defer.inlineCallbacks
    def scenario(reactor):
        ha = start_master(reactor, certs, haSlaveAllowList="127.0.0.1")
        try:
            received, lost = yield peer_gets(reactor, ha)
            assert len(received) >= len(GOOD) and not lost
        finally:
            yield ha.stopService()

    assert refusals(run(scenario)) == []


def test_missing_certificate_files_are_a_clear_configuration_error(tmp_path):
    from rmqproto.config import ConfigError
    with pytest.raises(ConfigError, match="haTlsEnable needs haTlsKeyPath"):
        tls_options(dict(haTlsCertPath=str(tmp_path / "x.pem")))
    with pytest.raises(ConfigError, match="haTlsCertPath: cannot read"):
        tls_options(dict(haTlsCertPath=str(tmp_path / "missing.pem"),
                         haTlsKeyPath="k", haTlsTrustCertPath="t"))


def test_a_peer_that_never_completes_the_handshake_is_closed(certs):
    """A slowloris on the TLS port: one byte of a ClientHello, then nothing."""
    @defer.inlineCallbacks
    def scenario(reactor):
        ha = start_master(reactor, certs, haHousekeepingInterval=300)
        try:
            factory = protocol.ClientFactory.forProtocol(Silent)
            factory.peer = None
            reactor.connectTCP("127.0.0.1", ha.port, factory)
            yield until(reactor, lambda: factory.peer is not None and factory.peer.lost)
            assert len(ha.factory.tls.protocols) == 0
        finally:
            yield ha.stopService()

    [line] = refusals(run(scenario))
    assert "no TLS handshake within haHousekeepingInterval" in line["why"]


class Silent(protocol.Protocol):
    def connectionMade(self):
        self.factory.peer = self
        self.lost = False
        self.transport.write(b"\x16")

    def connectionLost(self, reason):
        self.lost = True


def test_rmq_slave_with_a_missing_certificate_stops_with_one_line(tmp_path):
    from rmqproto.services import slave as tap
    options = tap.Options()
    options.parseOptions(["--haTlsEnable", "true", "--haTlsCertPath", str(tmp_path / "no.pem"),
                          "--haTlsKeyPath", "k", "--haTlsTrustCertPath", "t",
                          "--storePathRootDir", str(tmp_path / "store")])
    with pytest.raises(SystemExit, match="haTlsCertPath: cannot read .*no.pem"):
        tap.makeService(options)
    assert not (tmp_path / "store").exists()
