"""Codecs for every RocketMQ wire and store format, declared with construct.

Each module owns one format family and cites the section of the protocol reference
it implements. Decoders raise only :class:`rmqproto.errors.CodecError` subclasses.
"""
