"""The exception hierarchy of rmqproto: every error the library raises derives from RmqError."""


class RmqError(Exception):
    """Root of every rmqproto error."""


class CodecError(RmqError, ValueError):
    """Bytes or values that do not form a valid RocketMQ structure."""


class TruncatedError(CodecError):
    """The input ends before the structure it should hold."""


class FrameTooLargeError(CodecError):
    """A remoting frame announces more bytes than the frame limit (``NettyDecoder``)."""


class BadHeaderLengthError(CodecError):
    """A remoting frame's header length does not fit inside the frame (``RemotingCommand#decode``)."""


class MalformedHeaderError(CodecError):
    """A remoting header (JSON or binary) cannot be decoded."""


class MissingFieldError(CodecError):
    """A required (@CFNotNull) custom-header field is absent (``RemotingCommand#decodeCommandCustomHeader``)."""


class BadMagicError(CodecError):
    """A stored record carries neither of the magic codes it may have."""


class ChecksumError(CodecError):
    """A stored CRC does not match the bytes it covers."""
