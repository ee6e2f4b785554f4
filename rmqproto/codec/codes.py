"""Request, response, language and version codes of RocketMQ 4.9.8 (Java ``RequestCode``, ``ResponseCode``, …).

Every enum here is an ``IntEnum``: members compare equal to the plain ``int`` on the
wire, and code that meets a value we do not know keeps the ``int`` (see :func:`coerce`),
so a server can still answer ``REQUEST_CODE_NOT_SUPPORTED`` for it.
"""

import enum

__all__ = [
    "RequestCode", "RequestCodeV5", "ResponseCode", "LanguageCode", "SerializeType", "MQVersion",
    "CURRENT_VERSION", "VERSION_NAMES", "coerce", "version_desc",
]


def coerce(enum_class, value):
    """``enum_class(value)`` when ``value`` is one of its codes, else ``value`` unchanged."""
    try:
        return enum_class(value)
    except ValueError:
        return value


class RequestCode(enum.IntEnum):
    """``RequestCode`` of RMQ4 4.9.8, all of them."""

    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_MESSAGE = 12
    QUERY_BROKER_OFFSET = 13
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    UPDATE_AND_CREATE_TOPIC = 17
    GET_ALL_TOPIC_CONFIG = 21
    GET_TOPIC_CONFIG_LIST = 22
    GET_TOPIC_NAME_LIST = 23
    UPDATE_BROKER_CONFIG = 25
    GET_BROKER_CONFIG = 26
    TRIGGER_DELETE_FILES = 27
    GET_BROKER_RUNTIME_INFO = 28
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_EARLIEST_MSG_STORETIME = 32
    VIEW_MESSAGE_BY_ID = 33
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CONSUMER_SEND_MSG_BACK = 36
    END_TRANSACTION = 37
    GET_CONSUMER_LIST_BY_GROUP = 38
    CHECK_TRANSACTION_STATE = 39
    NOTIFY_CONSUMER_IDS_CHANGED = 40
    LOCK_BATCH_MQ = 41
    UNLOCK_BATCH_MQ = 42
    GET_ALL_CONSUMER_OFFSET = 43
    GET_ALL_DELAY_OFFSET = 45
    CHECK_CLIENT_CONFIG = 46
    UPDATE_AND_CREATE_ACL_CONFIG = 50
    DELETE_ACL_CONFIG = 51
    GET_BROKER_CLUSTER_ACL_INFO = 52
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG = 53
    GET_BROKER_CLUSTER_ACL_CONFIG = 54
    PUT_KV_CONFIG = 100
    GET_KV_CONFIG = 101
    DELETE_KV_CONFIG = 102
    REGISTER_BROKER = 103
    UNREGISTER_BROKER = 104
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_TOPIC_STATS_INFO = 202
    GET_CONSUMER_CONNECTION_LIST = 203
    GET_PRODUCER_CONNECTION_LIST = 204
    WIPE_WRITE_PERM_OF_BROKER = 205
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_SUBSCRIPTIONGROUP = 207
    GET_CONSUME_STATS = 208
    SUSPEND_CONSUMER = 209
    RESUME_CONSUMER = 210
    RESET_CONSUMER_OFFSET_IN_CONSUMER = 211
    RESET_CONSUMER_OFFSET_IN_BROKER = 212
    ADJUST_CONSUMER_THREAD_POOL = 213
    WHO_CONSUME_THE_MESSAGE = 214
    DELETE_TOPIC_IN_BROKER = 215
    DELETE_TOPIC_IN_NAMESRV = 216
    GET_KVLIST_BY_NAMESPACE = 219
    RESET_CONSUMER_CLIENT_OFFSET = 220
    GET_CONSUMER_STATUS_FROM_CLIENT = 221
    INVOKE_BROKER_TO_RESET_OFFSET = 222
    INVOKE_BROKER_TO_GET_CONSUMER_STATUS = 223
    QUERY_TOPIC_CONSUME_BY_WHO = 300
    GET_TOPICS_BY_CLUSTER = 224
    REGISTER_FILTER_SERVER = 301
    REGISTER_MESSAGE_FILTER_CLASS = 302
    QUERY_CONSUME_TIME_SPAN = 303
    GET_SYSTEM_TOPIC_LIST_FROM_NS = 304
    GET_SYSTEM_TOPIC_LIST_FROM_BROKER = 305
    CLEAN_EXPIRED_CONSUMEQUEUE = 306
    GET_CONSUMER_RUNNING_INFO = 307
    QUERY_CORRECTION_OFFSET = 308
    CONSUME_MESSAGE_DIRECTLY = 309
    SEND_MESSAGE_V2 = 310
    GET_UNIT_TOPIC_LIST = 311
    GET_HAS_UNIT_SUB_TOPIC_LIST = 312
    GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313
    CLONE_GROUP_OFFSET = 314
    VIEW_BROKER_STATS_DATA = 315
    CLEAN_UNUSED_TOPIC = 316
    GET_BROKER_CONSUME_STATS = 317
    UPDATE_NAMESRV_CONFIG = 318
    GET_NAMESRV_CONFIG = 319
    SEND_BATCH_MESSAGE = 320
    QUERY_CONSUME_QUEUE = 321
    QUERY_DATA_VERSION = 322
    RESUME_CHECK_HALF_MESSAGE = 323
    SEND_REPLY_MESSAGE = 324
    SEND_REPLY_MESSAGE_V2 = 325
    PUSH_REPLY_MESSAGE_TO_CLIENT = 326
    ADD_WRITE_PERM_OF_BROKER = 327
    GET_ALL_PRODUCER_INFO = 328
    DELETE_EXPIRED_COMMITLOG = 329


class RequestCodeV5(enum.IntEnum):
    """The codes of RocketMQ 5.3's ``RequestCode`` beyond 4.9.8 that a 4.9-style broker serves
    (docs/broker.md, "Request codes"): current tools and clients send them."""

    GET_TOPIC_CONFIG = 351
    LITE_PULL_MESSAGE = 361
    GET_BROKER_HA_STATUS = 907


class ResponseCode(enum.IntEnum):
    """``RemotingSysResponseCode`` (0-4) and ``ResponseCode`` of RMQ4 4.9.8."""

    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    TRANSACTION_FAILED = 4
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    VERSION_NOT_SUPPORTED = 15
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    TOPIC_EXIST_ALREADY = 18
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    FILTER_DATA_NOT_EXIST = 27
    FILTER_DATA_NOT_LATEST = 28
    TRANSACTION_SHOULD_COMMIT = 200
    TRANSACTION_SHOULD_ROLLBACK = 201
    TRANSACTION_STATE_UNKNOW = 202
    TRANSACTION_STATE_GROUP_WRONG = 203
    NO_BUYER_ID = 204
    NOT_IN_CURRENT_UNIT = 205
    CONSUMER_NOT_ONLINE = 206
    CONSUME_MSG_TIMEOUT = 207
    NO_MESSAGE = 208
    UPDATE_AND_CREATE_ACL_CONFIG_FAILED = 209
    DELETE_ACL_CONFIG_FAILED = 210
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED = 211
    FLOW_CONTROL = 215


class LanguageCode(enum.IntEnum):
    """``LanguageCode``: the JSON header carries the name, the binary one the code.

    ``NODE_JS`` exists only in RMQ5; a 4.9.8 peer decodes it as ``null``.
    """

    JAVA = 0
    CPP = 1
    DOTNET = 2
    PYTHON = 3
    DELPHI = 4
    ERLANG = 5
    RUBY = 6
    OTHER = 7
    HTTP = 8
    GO = 9
    PHP = 10
    OMS = 11
    RUST = 12
    NODE_JS = 13


class SerializeType(enum.IntEnum):
    """Header encodings: the high byte of the frame's header-length word (``markProtocolType``)."""

    JSON = 0
    ROCKETMQ = 1


def _version_names():
    """The constants of ``MQVersion.Version`` in declaration order (their ordinals are the index).

    4.9.8 declares the 3.0.0 pre-releases, then a ``_SNAPSHOT`` and a release for 3.0.1-3.0.15,
    3.1.0-3.2.9, 3.3.1-3.9.9 (no x.y.0 from 3.3 on), 4.0.0-5.9.9, and finally ``HIGHER_VERSION``.
    """
    names = ["V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1"]
    names += ["V3_0_0_BETA%d" % n for n in range(1, 6)]
    for n in range(6, 10):
        names += ["V3_0_0_BETA%d_SNAPSHOT" % n, "V3_0_0_BETA%d" % n]
    names.append("V3_0_0_FINAL")
    releases = [(3, 0, p) for p in range(1, 16)]
    releases += [(3, minor, p) for minor in (1, 2) for p in range(10)]
    releases += [(3, minor, p) for minor in range(3, 10) for p in range(1, 10)]
    releases += [(major, minor, p) for major in (4, 5) for minor in range(10) for p in range(10)]
    for release in releases:
        name = "V%d_%d_%d" % release
        names += [name + "_SNAPSHOT", name]
    names.append("HIGHER_VERSION")
    return tuple(names)


#: ``MQVersion.Version`` names; ``VERSION_NAMES[ordinal]`` is the name of a ``version`` value.
VERSION_NAMES = _version_names()

#: ``MQVersion.Version`` as an ``IntEnum``: ``MQVersion.V4_9_8 == 409``.
MQVersion = enum.IntEnum("MQVersion", [(name, i) for i, name in enumerate(VERSION_NAMES)],
                         module=__name__)
MQVersion.__doc__ = "``MQVersion.Version``: member value = ordinal = the ``version`` header field."

#: What a 4.9.8 broker, NameServer or client puts in ``version``.
CURRENT_VERSION = int(MQVersion.V4_9_8)


def version_desc(value):
    """``MQVersion.getVersionDesc``: the name of ordinal ``value``; past the end, the last name."""
    if value < 0:
        raise ValueError("version ordinal must not be negative: %r" % (value,))
    return VERSION_NAMES[min(value, len(VERSION_NAMES) - 1)]
