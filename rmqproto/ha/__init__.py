"""Classic master/slave replication (Java ``HAService``, ``HAConnection``; ``docs/ha.md``).

A master runs :class:`~rmqproto.ha.master.HAMasterService` (the HA listener on
``haListenPort`` and the SYNC_MASTER replica waits); a slave runs
:class:`~rmqproto.ha.slave.HASlaveService` (the HA client and the metadata sync).
:func:`ha_service` picks the one a broker's ``brokerRole`` calls for.
"""

from rmqproto.broker.config import is_slave

__all__ = ["ha_service"]


def ha_service(controller):
    """The HA service of the broker ``controller``: a Twisted service, started once the
    store is loaded and stopped before the store shuts down."""
    if is_slave(controller.config):
        from rmqproto.ha.slave import HASlaveService
        return HASlaveService(controller)
    from rmqproto.ha.master import HAMasterService
    return HAMasterService(controller)
