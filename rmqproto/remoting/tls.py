"""TLS on the remoting ports, as Java's ``TlsSystemConfig`` / ``TlsHelper`` configure it.

``tls.server.mode`` says what a server does with the first byte of a connection (Java's
``NettyRemotingServer.HandshakeHandler``): a TLS handshake starts with 0x16;
``disabled`` refuses it, ``enforcing`` refuses anything else, ``permissive`` (the default)
serves both. ``tls.enable`` makes a broker's own connections (to NameServers and its master)
start TLS. The ``tls.*`` settings take Java's names and defaults, and the values in
``tls.config.file`` (when it exists) win over them, except mode and enable, as in
``TlsHelper#buildSslContext``. ``tls.test.mode.enable`` (default true) serves a self-signed
certificate made at start and checks no peer certificate. See docs/security.md.
"""

import datetime
import enum
import os

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from OpenSSL import SSL
from twisted.internet.interfaces import IOpenSSLContextFactory
from twisted.logger import Logger
from zope.interface import implementer

from rmqproto.config import ConfigError, Setting, Settings, load_properties

__all__ = ["TlsMode", "PLAIN", "TLS", "HANDSHAKE_MAGIC", "TLS_SERVER_SETTINGS",
           "TLS_CLIENT_SETTINGS", "classify", "tls_values", "server_policy", "client_policy",
           "server_context", "client_context", "self_signed"]

log = Logger()

#: The first byte of a TLS record carrying a handshake (``HandshakeHandler``'s magic code).
HANDSHAKE_MAGIC = 0x16


class TlsMode(enum.Enum):
    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"

    @classmethod
    def parse(cls, text):
        """``TlsMode.parse``: the mode named ``text``; any other text is permissive."""
        try:
            return cls(text)
        except ValueError:
            return cls.PERMISSIVE


#: :func:`classify` verdicts: serve remoting as it is, or start TLS first.
PLAIN = "plain"
TLS = "tls"

_FILE_NAMES = ("tls.test.mode.enable", "tls.server.need.client.auth", "tls.server.keyPath",
               "tls.server.keyPassword", "tls.server.certPath", "tls.server.authClient",
               "tls.server.trustCertPath", "tls.client.keyPath", "tls.client.keyPassword",
               "tls.client.certPath", "tls.client.authServer", "tls.client.trustCertPath")

_CLIENT_AUTH = ("none", "optional", "require")

TLS_SERVER_SETTINGS = Settings(
    Setting("tls.server.mode", "permissive", "TLS on the remoting ports: disabled, permissive "
            "(TLS or plain, by the first byte) or enforcing (TLS only)"),
    Setting("tls.config.file", "/etc/rocketmq/tls.properties",
            "properties file whose tls.* values (but mode and enable) win over these"),
    Setting("tls.test.mode.enable", True, "serve a self-signed certificate, check no client's"),
    Setting("tls.server.need.client.auth", "none", "client certificates: none, optional or "
            "require"),
    Setting("tls.server.keyPath", "", "PEM (PKCS#8) private key of the server"),
    Setting("tls.server.keyPassword", "", "password of tls.server.keyPath"),
    Setting("tls.server.certPath", "", "PEM certificate chain of the server"),
    Setting("tls.server.authClient", False, "check client certificates against "
            "tls.server.trustCertPath (else any is taken)"),
    Setting("tls.server.trustCertPath", "", "PEM certificates trusted to sign clients'"),
)

TLS_CLIENT_SETTINGS = Settings(
    Setting("tls.enable", False, "connect to NameServers and the master with TLS"),
    Setting("tls.client.keyPath", "", "PEM (PKCS#8) private key shown to servers"),
    Setting("tls.client.keyPassword", "", "password of tls.client.keyPath"),
    Setting("tls.client.certPath", "", "PEM certificate chain shown to servers"),
    Setting("tls.client.authServer", False, "check server certificates against "
            "tls.client.trustCertPath (else any is taken)"),
    Setting("tls.client.trustCertPath", "", "PEM certificates trusted to sign servers'"),
)

_ALL = Settings(*TLS_SERVER_SETTINGS.by_name.values(), *TLS_CLIENT_SETTINGS.by_name.values())


def classify(mode, first_byte, have_context):
    """What a server in ``mode`` does with a connection starting with ``first_byte``:
    :data:`PLAIN`, :data:`TLS`, or why it closes it (``HandshakeHandler#channelRead0``)."""
    if first_byte == HANDSHAKE_MAGIC:
        if mode is TlsMode.DISABLED:
            return "a TLS handshake while tls.server.mode is disabled"
        if not have_context:
            return "a TLS handshake, but the TLS context could not be made (see the start log)"
        return TLS
    if mode is TlsMode.ENFORCING:
        return "a plain connection while tls.server.mode is enforcing"
    return PLAIN


def tls_values(config):
    """The ``tls.*`` values of ``config`` (defaults for missing ones) with those of
    ``tls.config.file`` over them when it is a readable file."""
    values = {name: config.get(name, setting.default) for name, setting in _ALL.by_name.items()}
    path = values["tls.config.file"]
    if path and os.path.isfile(path) and os.access(path, os.R_OK):
        from_file = load_properties(path)
        for name in _FILE_NAMES:
            if name in from_file:
                values[name] = _ALL.by_name[name].parse(from_file[name])
    return values


class _Policy:
    """What :class:`~rmqproto.remoting.protocol.RemotingProtocol` asks of a TLS policy."""

    def __init__(self, server, mode, context):
        self.server = server
        self.mode = mode
        #: the context factory given to ``startTLS`` (None: TLS cannot be served)
        self.context = context

    def classify(self, first_byte):
        return classify(self.mode, first_byte, self.context is not None)


@implementer(IOpenSSLContextFactory)
class _ContextFactory:
    """One ready ``OpenSSL.SSL.Context`` as Twisted's context factory."""

    def __init__(self, context):
        self._context = context

    def getContext(self):
        return self._context


_CONTEXT_ERRORS = (OSError, SSL.Error, ConfigError, ValueError, TypeError)


def server_policy(config):
    """The TLS policy of a server's ``config``. Without a usable key and certificate it logs
    why and refuses handshakes, as Java's server does when ``buildSslContext`` fails."""
    values = tls_values(config)
    mode = TlsMode.parse(values["tls.server.mode"])
    context = None
    if mode is not TlsMode.DISABLED:
        try:
            context = _ContextFactory(server_context(values))
        except _CONTEXT_ERRORS as exc:
            log.error("TLS context for the server could not be made: {error}", error=exc)
    log.info("tls.server.mode={mode}, tls.test.mode.enable={test}", mode=mode.value,
             test=values["tls.test.mode.enable"])
    return _Policy(True, mode, context)


def client_policy(config):
    """The TLS policy of a broker's outgoing connections: None unless ``tls.enable``.
    Raises ConfigError when its context cannot be made (Java would connect in plain)."""
    values = tls_values(config)
    if not values["tls.enable"]:
        return None
    try:
        return _Policy(False, None, _ContextFactory(client_context(values)))
    except _CONTEXT_ERRORS as exc:
        raise ConfigError("tls.enable is true but the TLS context could not be made: %s"
                          % (exc,)) from None


def _accept_any(connection, certificate, errno, depth, ok):
    return True


def _accept_verified(connection, certificate, errno, depth, ok):
    return bool(ok)


def _new_context():
    context = SSL.Context(SSL.TLS_METHOD)
    context.set_min_proto_version(SSL.TLS1_2_VERSION)
    return context


def _use_key_and_chain(context, cert_path, key_path, password):
    """The PEM certificate chain and (PKCS#8, as Netty wants it) private key, maybe encrypted."""
    context.use_certificate_chain_file(cert_path)
    with open(key_path, "rb") as pem:
        context.use_privatekey(serialization.load_pem_private_key(
            pem.read(), password.encode() if password else None))
    context.check_privatekey()


def server_context(values):
    """The ``OpenSSL.SSL.Context`` a server serves with (``TlsHelper#buildSslContext(false)``);
    raises OSError / ``SSL.Error`` / ConfigError / ValueError / TypeError for unusable files,
    passwords or settings."""
    context = _new_context()
    if values["tls.test.mode.enable"]:
        certificate, key = self_signed()
        context.use_certificate(certificate)
        context.use_privatekey(key)
        return context
    if not (values["tls.server.certPath"] and values["tls.server.keyPath"]):
        raise ConfigError("tls.server.certPath and tls.server.keyPath are needed when "
                          "tls.test.mode.enable is false")
    _use_key_and_chain(context, values["tls.server.certPath"], values["tls.server.keyPath"],
                       values["tls.server.keyPassword"])
    need = values["tls.server.need.client.auth"].strip().lower()
    need = need if need in _CLIENT_AUTH else "none"  # TlsHelper#parseClientAuthMode
    if need != "none":
        mode = SSL.VERIFY_PEER
        if need == "require":
            mode |= SSL.VERIFY_FAIL_IF_NO_PEER_CERT
        if values["tls.server.authClient"]:
            if values["tls.server.trustCertPath"]:
                context.load_verify_locations(values["tls.server.trustCertPath"])
            context.set_verify(mode, _accept_verified)
        else:
            context.set_verify(mode, _accept_any)
    return context


def client_context(values):
    """The ``OpenSSL.SSL.Context`` of outgoing connections (``TlsHelper#buildSslContext(true)``):
    in test mode, or without ``tls.client.authServer``, any server certificate is taken."""
    context = _new_context()
    if values["tls.test.mode.enable"]:
        return context
    if values["tls.client.certPath"] and values["tls.client.keyPath"]:
        _use_key_and_chain(context, values["tls.client.certPath"], values["tls.client.keyPath"],
                           values["tls.client.keyPassword"])
    if values["tls.client.authServer"]:
        if values["tls.client.trustCertPath"]:
            context.load_verify_locations(values["tls.client.trustCertPath"])
        context.set_verify(SSL.VERIFY_PEER, _accept_verified)
    return context


def self_signed(now=None):
    """A certificate for ``localhost`` signed by its own new P-256 key, valid from a day
    before ``now`` for a year (Netty's ``SelfSignedCertificate``, with an EC key)."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(days=1))
                   .not_valid_after(now + datetime.timedelta(days=365))
                   .sign(key, hashes.SHA256()))
    return certificate, key
