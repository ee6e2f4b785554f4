"""``twistd rmq-slave``: the broker service as a slave (``docs/ha-slave.md``).

The same service as ``twistd rmq-master`` (:mod:`rmqproto.services.broker`) with the slave's
defaults, ``brokerRole=SLAVE`` and ``brokerId=1``; every other setting keeps Java's default
and ``-c broker.conf`` takes an existing slave configuration unchanged. It learns its
master from its NameServers (or ``haMasterAddress``), replicates the master's commit log
(:mod:`rmqproto.ha.slave`) and copies its metadata (:mod:`rmqproto.broker.slavesync`).
"""

from rmqproto.broker.config import SETTINGS
from rmqproto.config import Setting, Settings
from rmqproto.services.broker import DEFAULTS_HELP, makeService

__all__ = ["SLAVE_SETTINGS", "Options", "makeService"]

_SLAVE_DEFAULTS = {"brokerRole": "SLAVE", "brokerId": 1}


def _with_default(setting, default):
    return Setting(setting.name, default, setting.doc, setting.kind, setting.choices)


#: The broker's settings with the slave's defaults.
SLAVE_SETTINGS = Settings(*(
    _with_default(s, _SLAVE_DEFAULTS[s.name]) if s.name in _SLAVE_DEFAULTS else s
    for s in SETTINGS.by_name.values()))

Options = SLAVE_SETTINGS.options(
    "[options]", "Run an Apache RocketMQ compatible slave broker (brokerRole SLAVE, brokerId 1 "
    "by default) replicating its master; -c takes an existing broker.conf. " + DEFAULTS_HELP)
