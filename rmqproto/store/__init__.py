"""The message store: commit log, consume queues, index, flushing, recovery, retention (reference §3).

The broker talks to a store only through :class:`~rmqproto.store.interfaces.IMessageStore`,
so other stores can be plugged in.
"""
