"""The message stores rmqproto ships: ``default`` (RocketMQ's on-disk format)."""

from zope.interface import provider

from rmqproto.pluggable import IMessageStoreFactory


@provider(IMessageStoreFactory)
class DefaultStore:
    """Commit log, consume queues and index in RocketMQ's own files (``DefaultMessageStore``)."""

    name = "default"
    description = "RocketMQ's on-disk format: commit log, consume queues, index"

    @staticmethod
    def create(config, reactor):
        from rmqproto.store.defaultstore import DefaultMessageStore

        return DefaultMessageStore(config, reactor)
