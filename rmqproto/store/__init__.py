"""The message store: commit log, consume queues, index, flushing, recovery, retention (``docs/store.md``).

The broker talks to a store only through :class:`~rmqproto.store.interfaces.IMessageStore`,
so other stores can be plugged in.
"""
