"""rmqproto: a wire-compatible implementation of Apache RocketMQ's replication core."""

__version__ = "0.1.0"
