"""DLedger: the Raft commit log of RocketMQ (``docs/dledger.md``)."""
