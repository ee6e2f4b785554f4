"""The HA port locked down, with real processes: our ``twistd rmq-master`` (SYNC_MASTER)
with ``haTlsEnable``, and a slave that is a real Java 4.9.7 broker (plain TCP, let in by
``haSlaveAllowList``) or our ``twistd rmq-slave`` with a certificate of the private CA.
Java producers get SEND_OK (the slave's acks arrive) and the commit logs end identical."""

import pytest

from support.hacerts import make_certificates
from support.hapair import HAPair
from support.interop import java_available

pytestmark = pytest.mark.skipif(not java_available(), reason="Java 17 and Maven are not installed")


def tls(certs, name):
    return dict(haTlsEnable="true", haTlsCertPath=certs[name]["cert"],
                haTlsKeyPath=certs[name]["key"], haTlsTrustCertPath=certs["ca"]["cert"])


@pytest.mark.parametrize("slave_kind", ["java", "ours"], ids=["java-slave", "our-tls-slave"])
def test_sync_sends_are_acked_through_the_locked_ha_port(tmp_path, slave_kind):
    certs = make_certificates(tmp_path)
    master = tls(certs, "master")
    if slave_kind == "java":
        master["haSlaveAllowList"] = "127.0.0.1"  # a Java slave speaks plain TCP
    pair = HAPair(tmp_path / "pair", slave_kind,
                  slave_settings=tls(certs, "slave") if slave_kind == "ours" else None,
                  **master)
    try:
        pair.wait_in_sync()
        producer = pair.producer()
        try:
            statuses = [producer.send()[0] for _ in range(20)]
        finally:
            producer.close()
        assert statuses == ["SEND_OK"] * 20
        pair.wait_logs_identical()
        assert "HA port refuses" not in pair.master.output()
    finally:
        pair.stop()
