"""The settings every remoting server shares, with ``NettyServerConfig``'s names and defaults.

``serverSocketBacklog`` is the listen backlog of every port (``NettySystemConfig.socketBacklog``,
1024; Twisted's own default is 50). ``writeBufferHighWaterMark`` is how many unsent bytes a
connection may hold before it stops being read (0, Java's default, means Netty's 64 KiB);
``totalWriteBufferHighWaterMark`` (ours: Java has no total) is how many unsent bytes the
connections of the stopped peers may hold together before every connection is stopped as soon
as anything of its own waits to be sent. See docs/remoting.md, "Flow control".
"""

from rmqproto.config import Setting, Settings, at_least

__all__ = ["SERVER_SETTINGS", "NETTY_HIGH_WATER_MARK", "server_setting", "high_water_mark"]

#: Netty's ``WriteBufferWaterMark.DEFAULT`` high mark, used when the setting is 0.
NETTY_HIGH_WATER_MARK = 64 * 1024

SERVER_SETTINGS = Settings(
    Setting("serverSocketBacklog", 1024, "listen backlog of every port of this server",
            check=at_least(1)),
    Setting("writeBufferHighWaterMark", 0, "unsent bytes after which a connection is no longer "
            "read until they are sent (0: 65536)", check=at_least(0)),
    Setting("totalWriteBufferHighWaterMark", 256 * 1024 * 1024,
            "unsent bytes of stopped connections after which any connection with something "
            "unsent is stopped", check=at_least(1)),
)


def server_setting(config, name):
    """``config[name]``, or the setting's default when ``config`` lacks it."""
    value = config.get(name)
    return SERVER_SETTINGS.by_name[name].default if value is None else value


def high_water_mark(config):
    """The per-connection limit of unsent bytes that ``config`` sets."""
    return server_setting(config, "writeBufferHighWaterMark") or NETTY_HIGH_WATER_MARK
