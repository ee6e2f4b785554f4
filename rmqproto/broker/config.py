"""The broker's settings: ``BrokerConfig`` and ``NettyServerConfig`` property names and defaults,
merged with the store's ``MessageStoreConfig`` (Java ``BrokerStartup``).

One Java ``broker.conf`` sets all of them; :func:`apply_startup_rules` then applies what
Java's ``BrokerStartup`` forces after reading the file (master id 0, HA port = listenPort + 1).
"""

import os
import socket

from rmqproto.config import ConfigError, Setting, Settings, at_least, in_range
from rmqproto.broker.dledgerconfig import NO_BROKER_ID, check_dledger_settings, is_dledger
from rmqproto.broker.topicconfig import MAX_QUEUE_NUMS
from rmqproto.metrics.endpoint import metrics_setting
from rmqproto.remoting.serversettings import SERVER_SETTINGS
from rmqproto.remoting.tls import TLS_CLIENT_SETTINGS, TLS_SERVER_SETTINGS
from rmqproto.store.config import STORE_SETTINGS

__all__ = ["BROKER_SETTINGS", "JAVA_ONLY_SETTINGS", "SETTINGS", "MASTER_ID", "local_address", "apply_startup_rules",
           "broker_addr", "vip_port", "ha_server_addr", "store_host", "namesrv_addresses", "is_slave"]

#: ``MixAll.MASTER_ID``.
MASTER_ID = 0


def local_address():
    """The address Java's ``RemotingUtil.getLocalAddress`` would pick: the host's outward
    IPv4 address, or the loopback address when there is none (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: only selects a route
            return probe.getsockname()[0]
        except OSError:
            return "127.0.0.1"


_CPUS = os.cpu_count() or 1

BROKER_SETTINGS = Settings(
    # BrokerConfig
    Setting("brokerClusterName", "DefaultCluster", "cluster this broker belongs to"),
    Setting("brokerName", socket.gethostname(), "broker name (master and slaves share it)"),
    Setting("brokerId", MASTER_ID, "0 for a master, > 0 for a slave"),
    Setting("namesrvAddr", os.environ.get("NAMESRV_ADDR", ""),
            "NameServer addresses, host:port separated by ';'"),
    Setting("brokerIP1", local_address(), "address clients and NameServers see"),
    Setting("brokerIP2", local_address(), "address of the HA service advertised to slaves"),
    Setting("brokerPermission", 6, "PermName bits of the whole broker (READ 4, WRITE 2)"),
    Setting("defaultTopicQueueNums", 8, "queues of TBW102 and of topics created from it",
            check=in_range(0, MAX_QUEUE_NUMS)),
    Setting("autoCreateTopicEnable", True, "create unknown topics from the default topic on send"),
    Setting("clusterTopicEnable", True, "the cluster-name topic is readable and writable"),
    Setting("brokerTopicEnable", True, "the broker-name topic is readable and writable"),
    Setting("autoCreateSubscriptionGroup", True, "create unknown subscription groups on use"),
    Setting("messageStorePlugIn", "", "Java store wrapper classes: not supported, use storeType"),
    Setting("msgTraceTopicName", "RMQ_SYS_TRACE_TOPIC", "topic of message traces"),
    Setting("traceTopicEnable", False, "create the trace topic at start"),
    Setting("sendMessageThreadPoolNums", min(_CPUS, 4), "Java send threads (accepted, unused)"),
    Setting("putMessageFutureThreadPoolNums", min(_CPUS, 4), "Java put threads (accepted, unused)"),
    Setting("pullMessageThreadPoolNums", 16 + _CPUS * 2, "Java pull threads (accepted, unused)"),
    Setting("queryMessageThreadPoolNums", 8 + _CPUS, "Java query threads (accepted, unused)"),
    Setting("adminBrokerThreadPoolNums", 16, "Java admin threads (accepted, unused)"),
    Setting("clientManageThreadPoolNums", 32, "Java client threads (accepted, unused)"),
    Setting("consumerManageThreadPoolNums", 32, "Java consumer threads (accepted, unused)"),
    Setting("heartbeatThreadPoolNums", min(32, _CPUS), "Java heartbeat threads (accepted, unused)"),
    Setting("flushConsumerOffsetInterval", 5000, "ms between persisting consumer offsets",
            check=at_least(1)),
    Setting("rejectTransactionMessage", False, "refuse transactional (prepared) messages"),
    Setting("sendThreadPoolQueueCapacity", 10000, "send queue capacity (reported)"),
    Setting("pullThreadPoolQueueCapacity", 100000, "pull queue capacity (reported)"),
    Setting("queryThreadPoolQueueCapacity", 20000, "query queue capacity (reported)"),
    Setting("endTransactionPoolQueueCapacity", 100000, "end-transaction queue capacity (reported)"),
    Setting("longPollingEnable", True, "hold pulls that find nothing"),
    Setting("shortPollingTimeMills", 1000, "ms a pull is held without long polling",
            check=at_least(1)),
    Setting("notifyConsumerIdsChangedEnable", True, "tell consumers when their group changes"),
    Setting("regionId", "DefaultRegion", "region id, returned as MSG_REGION on sends"),
    Setting("traceOn", True, "returned as TRACE_ON on sends"),
    Setting("registerBrokerTimeoutMills", 6000, "ms to wait for a NameServer's register answer"),
    Setting("slaveReadEnable", False, "let consumers read from slaves"),
    Setting("startAcceptSendRequestTimeStamp", 0, "ms timestamp before which sends are refused"),
    Setting("compressedRegister", False, "send REGISTER_BROKER's body compressed"),
    Setting("forceRegister", True, "register every period (else only when the data version changed)"),
    Setting("registerNameServerPeriod", 30_000, "ms between registrations (clamped to 10-60 s)"),
    Setting("transactionTimeOut", 6000, "ms before a prepared message is checked"),
    Setting("transactionCheckMax", 15, "checks of a prepared message before it is dropped"),
    Setting("transactionCheckInterval", 60_000, "ms between transaction checks"),
    Setting("aclEnable", False, "check every request against the ACL (docs/security.md)"),
    Setting("aclPlainFile", "conf/plain_acl.yml", "the ACL file, relative to rocketmqHome "
            "(Java's -Drocketmq.acl.plain.file)"),
    Setting("aclValidator", "plain", "the access validator plugin used when aclEnable=true"),
    Setting("storeReplyMessageEnable", True, "store request-reply messages"),
    Setting("enableDetailStat", True, "keep per-queue statistics (docs/broker.md, Statistics)"),
    Setting("autoDeleteUnusedStats", False, "drop a topic's or group's statistics when it is deleted"),
    Setting("enableScheduleMessageStats", True, "count delayed deliveries in the statistics"),
    Setting("rocketmqHome", os.environ.get("ROCKETMQ_HOME", ""), "RocketMQ home: ACL files are under its conf/"),
    # NettyServerConfig
    Setting("listenPort", 10911, "port of the broker's remoting service (the HA port is one more)",
            check=in_range(0, 65534)),
    Setting("bindAddress", "0.0.0.0", "address to listen on"),
    Setting("serverChannelMaxIdleTimeSeconds", 120, "seconds after which an idle connection is closed"),
    *SERVER_SETTINGS.by_name.values(),
    *TLS_SERVER_SETTINGS.by_name.values(),
    *TLS_CLIENT_SETTINGS.by_name.values(),
    metrics_setting(),  # docs/observability.md
)

def _unused(name, default, what):
    """A Java setting ``getBrokerConfig`` lists that this broker accepts and does not act on."""
    return Setting(name, default, "%s (accepted, not acted on)" % what)


#: The rest of what Java's ``getBrokerConfig`` lists (``BrokerConfig``, ``NettyServerConfig``,
#: ``NettyClientConfig``, ``MessageStoreConfig`` of 4.9.7), with Java's defaults; docs/broker.md
#: says why none of them changes what this broker does.
JAVA_ONLY_SETTINGS = Settings(
    # BrokerConfig: thread pools and queues of Java's executors
    _unused("processReplyMessageThreadPoolNums", 16 + _CPUS * 2, "reply threads"),
    _unused("endTransactionThreadPoolNums", max(8 + _CPUS * 2, min(_CPUS, 4) * 4),
            "end-transaction threads"),
    _unused("putThreadPoolQueueCapacity", 10000, "put queue capacity"),
    _unused("replyThreadPoolQueueCapacity", 10000, "reply queue capacity"),
    _unused("clientManagerThreadPoolQueueCapacity", 1000000, "client-manager queue capacity"),
    _unused("consumerManagerThreadPoolQueueCapacity", 1000000, "consumer-manager queue capacity"),
    _unused("heartbeatThreadPoolQueueCapacity", 50000, "heartbeat queue capacity"),
    _unused("waitTimeMillsInSendQueue", 200, "ms a send may wait in Java's queue"),
    _unused("waitTimeMillsInPullQueue", 5000, "ms a pull may wait in Java's queue"),
    _unused("waitTimeMillsInHeartbeatQueue", 31000, "ms a heartbeat may wait in Java's queue"),
    _unused("waitTimeMillsInTransactionQueue", 3000, "ms an end-transaction may wait in Java's queue"),
    _unused("brokerFastFailureEnable", True, "fast failure of requests queued too long"),
    # BrokerConfig: features of Java's broker this one does not have
    _unused("fetchNamesrvAddrByAddressServer", False, "NameServer addresses from an address server"),
    _unused("filterServerNums", 0, "filter servers"),
    _unused("filterDataCleanTimeSpan", 86400000, "ms before filter data is cleaned"),
    _unused("filterSupportRetry", False, "filters applied to retry topics"),
    _unused("enablePropertyFilter", False, "SQL92 property filters"),
    _unused("enableCalcFilterBitMap", False, "filter bit maps"),
    _unused("expectConsumerNumUseFilter", 32, "consumers per filter bit map"),
    _unused("maxErrorRateOfBloomFilter", 20, "bloom filter error rate, percent"),
    _unused("commercialEnable", True, "commercial statistics"),
    _unused("commercialTimerCount", 1, "commercial statistics"),
    _unused("commercialTransCount", 1, "commercial statistics"),
    _unused("commercialBigCount", 1, "commercial statistics"),
    _unused("commercialBaseCount", 1, "commercial statistics"),
    _unused("disableConsumeIfConsumerReadSlowly", False, "consumer fall-behind protection"),
    _unused("consumerFallbehindThreshold", 17179869184, "bytes a consumer may fall behind"),
    _unused("flushConsumerOffsetHistoryInterval", 60000, "ms between offset history flushes"),
    _unused("highSpeedMode", False, "Java's high-speed mode"),
    _unused("isolateLogEnable", False, "per-broker log isolation"),
    _unused("enableScheduleAsyncDeliver", False, "asynchronous delivery of delayed messages"),
    _unused("scheduleAsyncDeliverMaxPendingLimit", 2000, "pending asynchronous deliveries"),
    _unused("scheduleAsyncDeliverMaxResendNum2Blocked", 3, "resends before delivery blocks"),
    _unused("useTLS", False, "TLS to the NameServers (NettyClientConfig)"),
    # NettyServerConfig and NettyClientConfig: Netty's threads, pools and buffers
    _unused("serverWorkerThreads", 8, "Netty worker threads"),
    _unused("serverCallbackExecutorThreads", 0, "Netty callback threads"),
    _unused("serverSelectorThreads", 3, "Netty selector threads"),
    _unused("serverOnewaySemaphoreValue", 256, "oneway requests in flight"),
    _unused("serverAsyncSemaphoreValue", 64, "asynchronous requests in flight"),
    _unused("serverSocketSndBufSize", 0, "SO_SNDBUF of accepted sockets (0: the system's)"),
    _unused("serverSocketRcvBufSize", 0, "SO_RCVBUF of accepted sockets (0: the system's)"),
    _unused("writeBufferLowWaterMark", 0, "Netty write-buffer low water mark"),
    _unused("serverPooledByteBufAllocatorEnable", True, "Netty pooled buffers"),
    _unused("useEpollNativeSelector", False, "Netty's native epoll (this broker always uses epoll)"),
    _unused("clientWorkerThreads", 4, "Netty client worker threads"),
    _unused("clientCallbackExecutorThreads", _CPUS, "Netty client callback threads"),
    _unused("clientOnewaySemaphoreValue", 65535, "client oneway requests in flight"),
    _unused("clientAsyncSemaphoreValue", 65535, "client asynchronous requests in flight"),
    _unused("connectTimeoutMillis", 3000, "ms to connect to a NameServer or master"),
    _unused("channelNotActiveInterval", 60000, "ms before an inactive client channel is dropped"),
    _unused("clientChannelMaxIdleTimeSeconds", 120, "seconds before an idle client channel closes"),
    _unused("clientSocketSndBufSize", 0, "SO_SNDBUF of client sockets"),
    _unused("clientSocketRcvBufSize", 0, "SO_RCVBUF of client sockets"),
    _unused("clientPooledByteBufAllocatorEnable", False, "Netty pooled client buffers"),
    _unused("clientCloseSocketIfTimeout", True, "close a client socket after a timeout"),
    # MessageStoreConfig: Java store features and tuning this store does not have
    _unused("transientStorePoolEnable", False, "off-heap write buffers"),
    _unused("transientStorePoolSize", 5, "off-heap write buffers"),
    _unused("fastFailIfNoBufferInStorePool", False, "off-heap write buffers"),
    _unused("commitIntervalCommitLog", 200, "ms between commits of off-heap buffers"),
    _unused("commitCommitLogLeastPages", 4, "pages per commit of off-heap buffers"),
    _unused("commitCommitLogThoroughInterval", 200, "ms between thorough commits"),
    _unused("useReentrantLockWhenPutMessage", True, "Java's put lock kind"),
    _unused("warmMapedFileEnable", False, "pre-touching new segments"),
    _unused("flushLeastPagesWhenWarmMapedFile", 4096, "pages flushed while pre-touching"),
    _unused("enableConsumeQueueExt", False, "consume-queue extension files"),
    _unused("mappedFileSizeConsumeQueueExt", 50331648, "consume-queue extension files"),
    _unused("bitMapLengthConsumeQueueExt", 112, "consume-queue extension files"),
    _unused("putMsgIndexHightWater", 600000, "index dispatch high water"),
    _unused("maxDelayTime", 40, "ms of Java's put-latency statistics"),
    _unused("transferMsgByHeap", True, "pull answers copied on the heap"),
    _unused("redeleteHangedFileInterval", 120000, "ms before a hung file delete is retried"),
    _unused("diskFallRecorded", True, "consumer fall-behind statistics"),
    _unused("duplicationEnable", False, "duplication of a commit log into another"),
    _unused("debugLockEnable", False, "lock debugging"),
    _unused("enableMultiDispatch", False, "light message queues (LMQ)"),
    _unused("enableLmq", False, "light message queues (LMQ)"),
    _unused("maxLmqConsumeQueueNum", 20000, "light message queues (LMQ)"),
)

#: Every setting a ``broker.conf`` may hold: the broker's and the store's.
SETTINGS = Settings(*BROKER_SETTINGS.by_name.values(), *STORE_SETTINGS.by_name.values(),
                    *JAVA_ONLY_SETTINGS.by_name.values())


def apply_startup_rules(config):
    """What ``BrokerStartup`` forces after loading the file: masters get id 0, a slave needs
    an id > 0, a broker on a DLedger commit log starts with id -1 (its role changes set it,
    docs/broker-dledger.md), and the HA port is always listenPort + 1 (``BrokerStartup``).
    Changes ``config``; raises ConfigError for a value its setting refuses."""
    SETTINGS.validate(config)
    if config["brokerRole"] == "SLAVE":
        if config["brokerId"] <= 0:
            raise ConfigError("Slave's brokerId must be > 0")
    else:
        config["brokerId"] = MASTER_ID
    if is_dledger(config):
        check_dledger_settings(config)
        config["brokerId"] = NO_BROKER_ID
    config["haListenPort"] = config["listenPort"] + 1
    return config


def is_slave(config):
    return config["brokerRole"] == "SLAVE"


def broker_addr(config):
    """``brokerIP1:listenPort``, the address registered with the NameServers."""
    return "%s:%d" % (config["brokerIP1"], config["listenPort"])


def vip_port(config):
    """The VIP ("fast") channel's port: listenPort - 2 (``MixAll.brokerVIPChannel``)."""
    return config["listenPort"] - 2


def ha_server_addr(config):
    """``brokerIP2:haListenPort``, the HA address registered with the NameServers."""
    return "%s:%d" % (config["brokerIP2"], config["haListenPort"])


def store_host(config):
    """The store host of every record this broker writes: ``(brokerIP1, listenPort)`` (``getStoreHost``)."""
    return config["brokerIP1"], config["listenPort"]


def namesrv_addresses(config):
    """The configured NameServer addresses, in order."""
    return [a.strip() for a in (config["namesrvAddr"] or "").split(";") if a.strip()]
