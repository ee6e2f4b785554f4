"""The JSON bodies of the NameServer and broker protocol (``docs/codecs/bodies.md``).

Every class is a dataclass with snake_case attributes and Java's JSON names on the
wire: ``obj.to_json()`` gives fastjson's exact bytes, ``Cls.from_json(data)`` reads
fastjson or standard JSON and raises only :class:`~rmqproto.errors.CodecError`.
"""

from rmqproto.codec.bodies._bean import JavaEnum, JsonBean
from rmqproto.codec.bodies.client import *  # noqa: F401,F403
from rmqproto.codec.bodies.client import __all__ as _client_all
from rmqproto.codec.bodies.ha import *  # noqa: F401,F403
from rmqproto.codec.bodies.ha import __all__ as _ha_all
from rmqproto.codec.bodies.offsets import *  # noqa: F401,F403
from rmqproto.codec.bodies.offsets import __all__ as _offsets_all
from rmqproto.codec.bodies.queue import *  # noqa: F401,F403
from rmqproto.codec.bodies.queue import __all__ as _queue_all
from rmqproto.codec.bodies.route import *  # noqa: F401,F403
from rmqproto.codec.bodies.route import __all__ as _route_all
from rmqproto.codec.bodies.stats import *  # noqa: F401,F403
from rmqproto.codec.bodies.stats import __all__ as _stats_all
from rmqproto.codec.bodies.topic import *  # noqa: F401,F403
from rmqproto.codec.bodies.topic import __all__ as _topic_all

__all__ = ["JavaEnum", "JsonBean", *_topic_all, *_route_all, *_client_all, *_offsets_all, *_queue_all, *_stats_all, *_ha_all]
