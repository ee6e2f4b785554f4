"""GET_BROKER_HA_STATUS's body: replication as RocketMQ 5 reports it (``HARuntimeInfo``).

A master fills :class:`HARuntimeInfo` with one :class:`HAConnectionRuntimeInfo` per slave
connection; a slave with its :class:`HAClientRuntimeInfo`. ``mqadmin haStatus`` (5.x) prints
them. Offsets are commit-log byte offsets, times ms since the epoch.
"""

from rmqproto.codec.bodies._bean import BOOL, INT, LONG, STRING, BeanOf, JsonBean, ListOf, json_bean, member

__all__ = ["HAConnectionRuntimeInfo", "HAClientRuntimeInfo", "HARuntimeInfo"]


@json_bean
class HAConnectionRuntimeInfo(JsonBean):
    """One slave connection of a master (``HARuntimeInfo.HAConnectionRuntimeInfo``)."""

    addr: str = member(STRING, default=None)  #: the slave socket's "host:port"
    slave_ack_offset: int = member(LONG, default=0)
    diff: int = member(LONG, default=0)  #: bytes the slave's ack is behind the master
    in_sync: bool = member(BOOL, default=False)
    transferred_byte_in_second: int = member(LONG, default=0)
    transfer_from_where: int = member(LONG, default=0)  #: the next offset sent to the slave


@json_bean
class HAClientRuntimeInfo(JsonBean):
    """A slave's HA client (``HARuntimeInfo.HAClientRuntimeInfo``)."""

    master_addr: str = member(STRING, default=None)  #: the master's HA address
    transferred_byte_in_second: int = member(LONG, default=0)
    max_offset: int = member(LONG, default=0)  #: the slave's commit-log max offset
    last_read_timestamp: int = member(LONG, default=0)
    last_write_timestamp: int = member(LONG, default=0)
    master_flush_offset: int = member(LONG, default=0)


@json_bean
class HARuntimeInfo(JsonBean):
    """``DefaultHAService#getRuntimeInfo``: a master's connections or a slave's client."""

    master: bool = member(BOOL, default=False)
    master_commit_log_max_offset: int = member(LONG, default=0)
    in_sync_slave_nums: int = member(INT, default=0)
    ha_connection_info: list = member(ListOf(BeanOf(HAConnectionRuntimeInfo)), factory=list)
    ha_client_runtime_info: HAClientRuntimeInfo = member(BeanOf(HAClientRuntimeInfo),
                                                         factory=HAClientRuntimeInfo)
