"""The admin core (:mod:`rmqproto.client.admin`) over blocking sockets: one connection per
server, every call waits for its answer."""

from rmqproto.client.admin import AdminConfig, AdminCore
from rmqproto.client.blocking import _Transport
from rmqproto.client.lookup import run


class AdminSession(_Transport):
    """``AdminSession(namesrvAddr="127.0.0.1:9876")``: :meth:`run` runs one of the core's
    operations, ``session.run(session.core.cluster_info())``; :meth:`close` closes every
    connection (or use ``with``). ``rng`` (a ``random.Random``) is the one the NameServer
    strategy draws from; tests give a seeded one."""

    def __init__(self, config=None, rng=None, **settings):
        super().__init__(AdminCore(config or AdminConfig(**settings), rng))

    def run(self, steps):
        """The return value of the core generator ``steps``, its requests made one by one."""
        return run(steps, self._perform)
