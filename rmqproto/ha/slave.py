"""The slave's HA service (reference §4.2, §4.4)."""

from twisted.application import service

__all__ = ["HASlaveService"]


class HASlaveService(service.MultiService):
    """HA client and metadata sync of the slave ``controller``."""

    def __init__(self, controller):
        super().__init__()
        self.controller = controller
