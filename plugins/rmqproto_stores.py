"""The message stores rmqproto ships: ``default`` (RocketMQ's on-disk format; on a DLedger
commit log when ``enableDLegerCommitLog`` is true, as Java's ``DefaultMessageStore`` chooses)."""

from zope.interface import provider

from rmqproto.pluggable import IMessageStoreFactory


@provider(IMessageStoreFactory)
class DefaultStore:
    """Commit log, consume queues and index in RocketMQ's own files (``DefaultMessageStore``)."""

    name = "default"
    description = "RocketMQ's on-disk format: commit log, consume queues, index"

    @staticmethod
    def create(config, reactor):
        if config.get("enableDLegerCommitLog"):
            from rmqproto.store.dledger import DLedgerMessageStore

            return DLedgerMessageStore(config, reactor)
        from rmqproto.store.defaultstore import DefaultMessageStore

        return DefaultMessageStore(config, reactor)
