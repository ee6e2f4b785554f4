"""TLS with client certificates on the HA connections (``haTlsEnable``; docs/security.md,
"HA port").

Both ends present a certificate (``haTlsCertPath``, ``haTlsKeyPath``) and accept only a
peer whose certificate chains to ``haTlsTrustCertPath``; names are not checked (slaves
reach a master by whatever address the NameServer or ``haMasterAddress`` gives: the
private CA is the identity). A Java slave speaks plain TCP, which the master accepts only
from ``haSlaveAllowList``.
"""

from twisted.internet import ssl
from twisted.protocols.tls import TLSMemoryBIOFactory

from rmqproto.config import ConfigError

__all__ = ["TLS_RECORD_HANDSHAKE", "tls_options", "tls_factory"]

#: The first byte of a TLS ClientHello (a handshake record). A plain slave's first byte is
#: the top byte of its 8-byte offset report, 0 for any offset below 2**56.
TLS_RECORD_HANDSHAKE = b"\x16"


_FILES = ("haTlsCertPath", "haTlsKeyPath", "haTlsTrustCertPath")


def _read(config, name):
    path = config[name]
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise ConfigError("%s: cannot read %s: %s" % (name, path, exc.strerror)) from None


def tls_options(config):
    """The TLS options of either end from ``config``: this broker's certificate and key,
    peers verified against the trusted CA (a server requires a client certificate).
    Raises ConfigError when a file is missing or not PEM."""
    for name in _FILES:
        if not config.get(name):
            raise ConfigError("haTlsEnable needs %s" % name)
    try:
        own = ssl.PrivateCertificate.loadPEM(_read(config, "haTlsCertPath")
                                             + b"\n" + _read(config, "haTlsKeyPath"))
        trusted = ssl.Certificate.loadPEM(_read(config, "haTlsTrustCertPath"))
    except ConfigError:
        raise
    except Exception as exc:  # pyOpenSSL's errors on bad PEM
        raise ConfigError("HA TLS certificate or key cannot be loaded: %s" % exc) from None
    return ssl.CertificateOptions(privateKey=own.privateKey.original, certificate=own.original,
                                  trustRoot=ssl.trustRootFromCertificates([trusted]))


def tls_factory(options, is_client, factory, reactor):
    """``factory`` wrapped in TLS with ``options`` (:func:`tls_options`); ``reactor`` times
    the flushes of small writes."""
    return TLSMemoryBIOFactory(options, is_client, factory, clock=reactor)
