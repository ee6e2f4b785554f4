"""The broker's settings: ``BrokerConfig`` and ``NettyServerConfig`` property names and defaults,
merged with the store's ``MessageStoreConfig`` (reference §2.3, §4.1, §6).

One Java ``broker.conf`` sets all of them; :func:`apply_startup_rules` then applies what
Java's ``BrokerStartup`` forces after reading the file (master id 0, HA port = listenPort + 1).
"""

import os
import socket

from rmqproto.config import ConfigError, Setting, Settings, at_least, in_range
from rmqproto.broker.topicconfig import MAX_QUEUE_NUMS
from rmqproto.remoting.serversettings import SERVER_SETTINGS
from rmqproto.remoting.tls import TLS_CLIENT_SETTINGS, TLS_SERVER_SETTINGS
from rmqproto.store.config import STORE_SETTINGS

__all__ = ["BROKER_SETTINGS", "SETTINGS", "MASTER_ID", "local_address", "apply_startup_rules",
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
    Setting("aclEnable", False, "access control (not supported; must stay false)"),
    Setting("storeReplyMessageEnable", True, "store request-reply messages"),
    Setting("rocketmqHome", os.environ.get("ROCKETMQ_HOME", ""), "RocketMQ home (accepted, unused)"),
    # NettyServerConfig
    Setting("listenPort", 10911, "port of the broker's remoting service (the HA port is one more)",
            check=in_range(0, 65534)),
    Setting("bindAddress", "0.0.0.0", "address to listen on"),
    Setting("serverChannelMaxIdleTimeSeconds", 120, "seconds after which an idle connection is closed"),
    *SERVER_SETTINGS.by_name.values(),
    *TLS_SERVER_SETTINGS.by_name.values(),
    *TLS_CLIENT_SETTINGS.by_name.values(),
)

#: Every setting a ``broker.conf`` may hold: the broker's and the store's.
SETTINGS = Settings(*BROKER_SETTINGS.by_name.values(), *STORE_SETTINGS.by_name.values())


def apply_startup_rules(config):
    """What ``BrokerStartup`` forces after loading the file: masters get id 0, a slave needs
    an id > 0, and the HA port is always listenPort + 1 (reference §4.1). Changes ``config``;
    raises ConfigError for a value its setting refuses."""
    SETTINGS.validate(config)
    if config["brokerRole"] == "SLAVE":
        if config["brokerId"] <= 0:
            raise ConfigError("Slave's brokerId must be > 0")
    else:
        config["brokerId"] = MASTER_ID
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
    """The store host of every record this broker writes: ``(brokerIP1, listenPort)`` (§2.3)."""
    return config["brokerIP1"], config["listenPort"]


def namesrv_addresses(config):
    """The configured NameServer addresses, in order."""
    return [a.strip() for a in (config["namesrvAddr"] or "").split(";") if a.strip()]
