"""Running construct declarations so that bad input surfaces only as ``CodecError``."""

import construct as cs

from rmqproto.errors import CodecError, TruncatedError


def parse_or_raise(declaration, data, **context):
    """``declaration.parse(data)``, with every construct failure turned into ``CodecError``."""
    try:
        return declaration.parse(data, **context)
    except cs.StreamError as exc:
        raise TruncatedError(str(exc)) from None
    except (cs.ConstructError, UnicodeDecodeError, ValueError, OverflowError) as exc:
        raise CodecError("%s: %s" % (type(exc).__name__, exc)) from None


def build_or_raise(declaration, value, **context):
    """``declaration.build(value)``, with every construct failure turned into ``CodecError``."""
    try:
        return declaration.build(value, **context)
    except (cs.ConstructError, UnicodeEncodeError, ValueError, OverflowError, KeyError,
            TypeError, AttributeError) as exc:
        raise CodecError("%s: %s" % (type(exc).__name__, exc)) from None
