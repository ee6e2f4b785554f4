"""Codecs for every RocketMQ wire and store format, declared with construct.

Each module owns one format family and cites the Java classes
it follows. Decoders raise only :class:`rmqproto.errors.CodecError` subclasses.
"""
