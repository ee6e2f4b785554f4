"""The two clusters the client's end-to-end tests run against: our NameServer and two
masters, and the Java 4.9.7 NameServer and two masters."""

from contextlib import contextmanager

import pytest

from broker.brokerkit import start_broker
from rmqproto.codec.bodies.route import TopicRouteData
from rmqproto.codec.codes import RequestCode, ResponseCode
from support.daemons import start_nameserver
from support.interop import java_available
from support.javapeers import JavaPeers, broker_port, free_port
from support.syncclient import call, create_topic, wait_until

BROKERS = ("broker-a", "broker-b")


class OurCluster:
    """Our NameServer and two masters (``twistd rmq-nameserver`` / ``rmq-master``)."""

    def __init__(self, workdir, peers, **settings):
        self.workdir, self.peers, self.settings = workdir, peers, settings
        self.namesrv, self.namesrv_addr = start_nameserver(workdir)
        self.brokers, self.addresses = {}, {}
        for name in BROKERS:
            self.start(name)

    def start(self, name):
        (self.workdir / name).mkdir(exist_ok=True)
        port = {"listenPort": self.addresses[name].rsplit(":", 1)[1]} if name in self.addresses else {}
        self.brokers[name], self.addresses[name] = start_broker(
            self.workdir / name, self.namesrv_addr, brokerName=name, **port, **self.settings)

    def kill(self, name):
        self.brokers[name].kill()

    def stop(self):
        for broker in self.brokers.values():
            broker.stop()
        self.namesrv.stop()


class JavaCluster:
    """The Java 4.9.7 NameServer and two masters."""

    def __init__(self, workdir, peers, **settings):
        self.peers, self.settings = peers, settings
        port = free_port()
        peers.namesrv(port)
        self.namesrv_addr = "127.0.0.1:%d" % port
        self.brokers, self.addresses = {}, {}
        for name in BROKERS:
            self.addresses[name] = "127.0.0.1:%d" % broker_port()
            self.start(name)

    def start(self, name):
        self.brokers[name] = self.peers.broker(
            name, brokerName=name, namesrvAddr=self.namesrv_addr,
            listenPort=self.addresses[name].rsplit(":", 1)[1], **self.settings)

    def kill(self, name):
        self.brokers[name].kill()

    def stop(self):
        pass  # the peers stop every Java process


def route_brokers(cluster, topic):
    answer = call(cluster.namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    if answer.code != ResponseCode.SUCCESS:
        return set()
    return {q.broker_name for q in TopicRouteData.from_json(answer.body).queue_datas}


def open_cluster(kind, workdir, peers, topics, **settings):
    """An :class:`OurCluster` (``kind`` "ours") or :class:`JavaCluster` ("java"), its
    brokers with ``settings`` (Java property names), with each of ``topics`` created with
    4 queues on both masters, once the NameServer routes them (and the auto-create topic)
    to both."""
    cluster = (OurCluster if kind == "ours" else JavaCluster)(workdir, peers, **settings)
    try:
        for topic in topics:
            for address in cluster.addresses.values():
                create_topic(address, topic, queues=4)
            wait_until(lambda: route_brokers(cluster, topic) == set(BROKERS))
        wait_until(lambda: route_brokers(cluster, "TBW102") == set(BROKERS))
    except BaseException:
        cluster.stop()
        raise
    return cluster


@contextmanager
def cluster_for(kind, tmp_path_factory, topics, **settings):
    """The body of a module fixture: :func:`open_cluster` of ``kind`` in a fresh directory,
    every process stopped at the end (skipped without Java, which fails a CI run)."""
    if not java_available():
        pytest.skip("Java 17 and Maven are not installed")
    workdir = tmp_path_factory.mktemp("client-" + kind)
    peers = JavaPeers(workdir)
    cluster = None
    try:
        cluster = open_cluster(kind, workdir, peers, topics, **settings)
        yield cluster
    finally:
        if cluster is not None:
            cluster.stop()
        peers.stop_all()
