"""The HA master's view of its slaves and its group transfer (``docs/ha.md``).

No exporter has these: the master's max offset, per slave connection (label ``slave``,
its ``host:port``) the ack offset, the lag in bytes and in seconds (the age of the oldest
message it has not acked) and whether it is in sync (``ReplicaTable.is_in_sync``), and the
SYNC_MASTER sends waiting for an ack and those that timed out.
"""

from rmqproto.metrics.broker import broker_labels
from rmqproto.metrics.families import counter, gauge, gauges

__all__ = ["HAMasterCollector"]

_BROKER = ["cluster", "broker", "brokerId"]
_SLAVE = _BROKER + ["slave"]
_NAN = float("nan")


class HAMasterCollector:
    """The figures of the :class:`~rmqproto.ha.master.HAMasterService` ``ha``."""

    def __init__(self, ha):
        self.ha = ha

    def collect(self):
        ha, table = self.ha, self.ha.table
        labels = broker_labels(ha.config)
        now = ha.now()
        max_offset = ha.store.get_max_phy_offset()
        yield gauge("rmqproto_ha_master_max_offset", "the master's commit-log max offset",
                    _BROKER, labels, max_offset)
        yield gauge("rmqproto_ha_push2slave_max_offset", "the largest offset any slave acked "
                    "(push2SlaveMaxOffset)", _BROKER, labels, table.push2slave_max_offset)
        yield gauge("rmqproto_ha_connections", "HA connections from slaves", _BROKER, labels,
                    len(table))
        families = {
            "ack": ("rmqproto_ha_slave_ack_offset", "the offset the slave last acked "
                    "(-1 before its first report)"),
            "lag": ("rmqproto_ha_slave_lag_bytes", "commit-log bytes the slave has not acked"),
            "age": ("rmqproto_ha_slave_lag_seconds", "age of the oldest message the slave has "
                    "not acked (0 when it has all)"),
            "sync": ("rmqproto_ha_slave_in_sync", "1 while the slave is live and less than "
                     "haSlaveFallbehindMax bytes behind"),
        }
        samples = {key: [] for key in families}
        for replica in table.replicas.values():
            values = labels + [replica.addr]
            ack = replica.slave_ack_offset
            samples["ack"].append((values, ack))
            samples["lag"].append((values, max_offset - max(ack, 0)))
            samples["age"].append((values, self._lag_seconds(ack, max_offset, now)))
            samples["sync"].append((values, int(table.is_in_sync(replica, max_offset, now))))
        for key, (name, doc) in families.items():
            yield gauges(name, doc, _SLAVE, samples[key])
        yield gauge("rmqproto_ha_group_transfer_waits", "SYNC_MASTER sends waiting for a slave's "
                    "ack", _BROKER, labels, len(ha.waits))
        yield counter("rmqproto_ha_group_transfer_timeouts", "SYNC_MASTER sends answered "
                      "FLUSH_SLAVE_TIMEOUT", _BROKER, labels, ha.transfer_timeouts)

    def _lag_seconds(self, ack, max_offset, now):
        if ack >= max_offset:
            return 0.0
        record = self.ha.store.look_message_by_offset(max(ack, 0))
        if record is None:  # a segment's blank end, or data already deleted
            return _NAN
        return max(now - record.store_timestamp, 0) / 1000.0
