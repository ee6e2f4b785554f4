"""The ``plain`` access validator: ``plain_acl.yml`` files read, watched and edited on disk
around the pure :mod:`rmqproto.acl` (Java's ``PlainAccessValidator`` and
``AclFileWatchService``, 4.9.7).

The files are ``<rocketmqHome>/<aclPlainFile>`` (``conf/plain_acl.yml`` by default, created
empty when missing, as Java does) and every ``*.yml`` / ``*.yaml`` under
``<rocketmqHome>/conf/acl/`` but ``tools.yml``. Every :data:`WATCH_INTERVAL` seconds their
modification times are compared with the last load; a change reloads them all. A file
that does not load keeps the previous ACL in force (one log line says why); at start it
stops the broker. Edits (the admin requests) rewrite a file safely and reload at once.
"""

import os

import yaml
from twisted.internet import task
from twisted.logger import Logger
from zope.interface import implementer

from rmqproto.acl import AclConfigError, AclError
from rmqproto.acl.edits import delete_account, set_global_white, update_account
from rmqproto.acl.plain import AclFile, PlainAcl
from rmqproto.acl.request import access_request
from rmqproto.broker import configfile
from rmqproto.codec import fastjson
from rmqproto.codec.bodies.acl import GetBrokerClusterAclConfigResponseBody
from rmqproto.codec.codes import ResponseCode
from rmqproto.config import ConfigError
from rmqproto.pluggable import IAccessValidator

__all__ = ["PlainAccessValidator", "acl_paths", "access_guard", "version_json", "WATCH_INTERVAL",
           "REFUSAL_PREFIX"]

log = Logger()

#: Seconds between two looks at the files' modification times (Java looks every 5 s).
WATCH_INTERVAL = 0.5


#: What a refusal's remark starts with: the Java exception's name, as a 4.9.7 broker writes it
#: (``RemotingHelper.exceptionSimpleDesc``), so that what operators grep for still matches.
REFUSAL_PREFIX = "org.apache.rocketmq.acl.common.AclException: "


def access_guard(validator):
    """A :class:`~rmqproto.remoting.dispatch.GuardedDispatcher` guard asking ``validator``
    (an :class:`~rmqproto.pluggable.IAccessValidator`): a refused request is answered
    SYSTEM_ERROR with the reason, as a 4.9.7 broker answers it. Refusals are not logged (a
    hostile client would fill the log); the client is told why."""
    def guard(request, context):
        address = context.address
        try:
            validator.check(request, address[0] if address is not None else context.peer)
        except AclError as exc:
            return ResponseCode.SYSTEM_ERROR, REFUSAL_PREFIX + str(exc)
        return None
    return guard


def acl_paths(config):
    """``(default file, directory of more files)`` of the broker settings ``config``."""
    home = config.get("rocketmqHome") or ""
    plain = config.get("aclPlainFile") or "conf/plain_acl.yml"
    if not home and not os.path.isabs(plain):
        raise ConfigError("aclEnable=true needs rocketmqHome (or ROCKETMQ_HOME) or an absolute "
                          "aclPlainFile")
    return (os.path.abspath(os.path.join(home, plain)),
            os.path.abspath(os.path.join(home, "conf", "acl")) if home else None)


def _read_yaml(path):
    try:
        with open(path, "rb") as fh:
            return yaml.safe_load(fh)
    except FileNotFoundError:
        return None
    except yaml.YAMLError as exc:
        raise AclConfigError("%s: %s" % (path, exc)) from None


@implementer(IAccessValidator)
class PlainAccessValidator:
    """Requests checked against the ACL files of the broker settings ``config``, loaded at
    once (raises :class:`AclConfigError` or :class:`~rmqproto.config.ConfigError`)."""

    def __init__(self, config, reactor):
        self.reactor = reactor
        self.default_file, self.directory = acl_paths(config)
        self.acl = PlainAcl()
        self._stamps = None
        self._watch = task.LoopingCall(self.reload_if_changed)
        self._watch.clock = reactor
        self.load()  # a broker whose ACL does not load does not start

    # ------------------------------------------------------------ files

    def _paths(self):
        paths = []
        if self.directory is not None and os.path.isdir(self.directory):
            for root, dirs, names in os.walk(self.directory):
                dirs.sort()
                paths.extend(os.path.join(root, name) for name in sorted(names)
                             if name.endswith((".yml", ".yaml"))
                             and os.path.join(root, name) != os.path.join(self.directory,
                                                                          "tools.yml"))
        if self.default_file not in paths and os.path.exists(self.default_file):
            paths.append(self.default_file)
        return paths

    @staticmethod
    def _stamp(path):
        try:
            status = os.stat(path)
        except OSError:
            return None
        return status.st_mtime_ns, status.st_size

    def load(self):
        """Read every ACL file now; raises :class:`AclConfigError` when one does not load."""
        if not os.path.exists(self.default_file):  # as Java's assureAclConfigFilesExist
            os.makedirs(os.path.dirname(self.default_file), exist_ok=True)
            open(self.default_file, "ab").close()
            log.info("created the empty ACL file {path}", path=self.default_file)
        paths = self._paths()
        stamps = {path: self._stamp(path) for path in paths}
        self.acl = PlainAcl([AclFile(path, _read_yaml(path)) for path in paths])
        self._stamps = stamps
        log.info("ACL loaded: {accounts} account(s), {whites} global white address(es) from "
                 "{files}", accounts=len(self.acl.accounts), whites=len(self.acl.whites),
                 files=", ".join(paths))

    def reload_if_changed(self):
        """Reload when a file was added, removed or changed since the last load."""
        paths = self._paths()
        if {path: self._stamp(path) for path in paths} == self._stamps:
            return
        try:
            self.load()
        except (AclConfigError, OSError) as exc:
            log.error("ACL files not reloaded, the previous ACL stays in force: {error}",
                      error=exc)
        except Exception:  # a bug here must not end the watch
            log.failure("ACL files not reloaded, the previous ACL stays in force")
        else:
            return
        self._stamps = {path: self._stamp(path) for path in paths}  # said once per change

    def start(self):
        self._watch.start(WATCH_INTERVAL, now=False)

    def stop(self):
        if self._watch.running:
            self._watch.stop()

    # ------------------------------------------------------------ checks

    def check(self, request, host):
        self.acl.check(access_request(request, host))

    # ------------------------------------------------------------ edits

    def _edit(self, path, edit):
        data = _read_yaml(path) or {}
        if not isinstance(data, dict):
            raise AclConfigError("%s: not a YAML mapping" % path)
        data = edit(data, int(self.reactor.seconds() * 1000))
        if data is None:
            return False
        AclFile(path, data)  # what would not load is not written
        configfile.persist(path, yaml.safe_dump(data, default_flow_style=False, sort_keys=False,
                                                allow_unicode=True).encode("utf-8"))
        self.load()
        return True

    def update_access_config(self, config):
        path = self.acl.file_of(config.access_key) or self.default_file
        return self._edit(path, lambda data, now: update_account(data, config, now))

    def delete_access_config(self, access_key):
        path = self.acl.file_of(access_key)
        if path is None:
            return False
        return self._edit(path, lambda data, now: delete_account(data, access_key, now))

    def update_global_white_addrs(self, patterns, path=None):
        path = os.path.abspath(path) if path else self.default_file
        if path not in self._paths():
            raise AclConfigError("%s is not one of the broker's ACL files" % path)
        return self._edit(path, lambda data, now: set_global_white(data, patterns, now))

    # ------------------------------------------------------------ reports

    def version_info(self):
        """``(version of the default file, {path: version} of every file)`` as DataVersion."""
        versions = {acl_file.path: acl_file.data_version for acl_file in self.acl.files}
        return versions.get(self.default_file), versions

    def all_config(self):
        """GET_BROKER_CLUSTER_ACL_CONFIG's body: every account once, every white address."""
        seen, accounts, whites = set(), [], []
        for acl_file in self.acl.files:
            whites.extend(acl_file.white_patterns)
            for view in (account.view for account in acl_file.accounts):
                if view.access_key not in seen:
                    seen.add(view.access_key)
                    accounts.append(view)
        return GetBrokerClusterAclConfigResponseBody(global_white_addrs=whites,
                                                     plain_access_configs=accounts)


def version_json(versions):
    """``JSON.toJSONString`` of a ``{path: DataVersion}`` map."""
    return fastjson.dumps({path: version.to_value() for path, version in versions.items()})
