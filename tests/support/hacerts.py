"""Certificates for the HA port's TLS tests (``haTlsEnable``): a private CA with a master
and a slave certificate, and a rogue CA with a certificate of its own, written as PEM
files. Made with ``cryptography``; small EC keys, valid for a day."""

import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["make_certificates"]


def _name(common_name):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(subject, key, issuer, issuer_key, ca):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    return builder.sign(issuer_key, hashes.SHA256())


def _write(directory, name, certificate, key):
    paths = {}
    cert_path = directory / (name + ".pem")
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    paths["cert"] = str(cert_path)
    if key is not None:
        key_path = directory / (name + ".key")
        key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                               serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        paths["key"] = str(key_path)
    return paths


def make_certificates(directory):
    """``{"ca": {...}, "master": {...}, "slave": {...}, "rogue": {...}}``: each the paths of
    its ``cert`` (and ``key``); "rogue" is signed by a CA of its own."""
    out = {}
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("rmqproto HA test CA", ca_key, "rmqproto HA test CA", ca_key, True)
    out["ca"] = _write(directory, "ca", ca, None)
    for name in ("master", "slave"):
        key = ec.generate_private_key(ec.SECP256R1())
        out[name] = _write(directory, name,
                           _certificate(name, key, "rmqproto HA test CA", ca_key, False), key)
    rogue_ca_key = ec.generate_private_key(ec.SECP256R1())
    key = ec.generate_private_key(ec.SECP256R1())
    out["rogue"] = _write(directory, "rogue",
                          _certificate("slave", key, "rogue CA", rogue_ca_key, False), key)
    return out
