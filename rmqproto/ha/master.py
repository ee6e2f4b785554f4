"""The master's HA service (reference §4.2, §4.3)."""

from twisted.application import service

__all__ = ["HAMasterService"]


class HAMasterService(service.MultiService):
    """HA listener and replica waits of the master ``controller``."""

    def __init__(self, controller):
        super().__init__()
        self.controller = controller
