"""Running clusters for the ``rocketmq`` format's tests: ``twistd -n rmq-local`` and the
Java 4.9.7 NameServer with one master, both on small commit-log segments and ready to
delete every full segment when told (DELETE_EXPIRED_COMMITLOG), so that a test can make
retention delete offsets."""

import time

from rmqproto.codec.bodies.route import TopicRouteData
from rmqproto.codec.codes import RequestCode, ResponseCode
from support.daemons import Daemon
from support.javapeers import broker_port
from support.processes import free_port, wait_for_port
from support.syncclient import call, create_topic, wait_until

#: Broker settings of both clusters: 1 MiB segments, expired as soon as they are full, but
#: deleted only on DELETE_EXPIRED_COMMITLOG (``deleteWhen`` is an hour half a day away, and
#: a disk up to 95 % full is not a reason either: at the default 75 % a busy machine's disk
#: made the brokers delete expired segments on their own, in the middle of other tests).
#: The brokers' first cleaning pass comes 60 s after they start (``DefaultMessageStore``).
def retention_settings():
    return dict(mappedFileSizeCommitLog=1024 * 1024, fileReservedTime=0,
                deleteWhen="%02d" % ((time.localtime().tm_hour + 12) % 24),
                diskMaxUsedSpaceRatio=95, cleanResourceInterval=1000)


class Cluster:
    """``namesrv_addr``, ``broker_addr`` (the master) and when it started."""

    started = 0.0
    namesrv_addr = broker_addr = None

    def create_topics(self, *topics, queues=4):
        for topic in topics:
            create_topic(self.broker_addr, topic, queues=queues)
            wait_until(lambda: routed(self.namesrv_addr, topic), timeout=30)

    def delete_expired_segments(self):
        """Ask the master to delete every expired segment now (the pass after its first 60 s)."""
        answer = call(self.broker_addr, RequestCode.DELETE_EXPIRED_COMMITLOG)
        assert answer.code == ResponseCode.SUCCESS, answer.remark


def routed(namesrv_addr, topic):
    answer = call(namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    return answer.code == ResponseCode.SUCCESS and TopicRouteData.from_json(answer.body).queue_datas


class LocalCluster(Cluster):
    """``twistd -n rmq-local`` (NameServer, SYNC_MASTER and slave) on free ports."""

    kind = "ours"

    def __init__(self, workdir):
        base = free_port(14)
        ports = dict(listenPort=base + 2, namesrvPort=base + 6, metricsPort=0)
        conf = workdir / "broker.conf"
        conf.write_text("".join("%s=%s\n" % item for item in retention_settings().items()))
        self.started = time.monotonic()
        self.daemon = Daemon(workdir, "rmq-local", "--dataDir", workdir / "data", "-c", conf,
                             *("--%s=%d" % item for item in ports.items()),
                             port=ports["namesrvPort"])
        wait_for_port(ports["listenPort"], 30, self.daemon)
        self.namesrv_addr = "127.0.0.1:%d" % ports["namesrvPort"]
        self.broker_addr = "127.0.0.1:%d" % ports["listenPort"]
        wait_until(lambda: routed(self.namesrv_addr, "TBW102"), timeout=30)

    def stop(self):
        self.daemon.stop()


class JavaCluster(Cluster):
    """The Java 4.9.7 NameServer and one master (started by ``peers``)."""

    kind = "java"

    def __init__(self, peers):
        port = free_port()
        self.started = time.monotonic()
        peers.namesrv(port)
        self.namesrv_addr = "127.0.0.1:%d" % port
        self.broker_addr = "127.0.0.1:%d" % broker_port()
        peers.broker("spark", namesrvAddr=self.namesrv_addr,
                     listenPort=self.broker_addr.rsplit(":", 1)[1], **retention_settings())
        wait_until(lambda: routed(self.namesrv_addr, "TBW102"), timeout=60)

    def stop(self):
        pass  # the peers stop every Java process
