"""The single services: ``twistd rmq-nameserver`` and ``twistd rmq-master`` with
``--metricsPort`` serve their own ``/metrics``, each its own figures only."""

from support.daemons import Daemon, start_nameserver
from support.javapeers import broker_port
from support.processes import free_port, wait_for_port
from support.scrape import scrape, value
from support.syncclient import wait_until


def test_nameserver_and_master_serve_their_own_metrics(tmp_path):
    namesrv_metrics, master_metrics = free_port(), free_port()
    namesrv, namesrv_addr = start_nameserver(tmp_path, "--metricsPort", namesrv_metrics)
    master = None
    try:
        wait_for_port(namesrv_metrics, 30, namesrv)
        port = broker_port()
        master = Daemon(tmp_path, "rmq-master", "--listenPort", port, "--bindAddress",
                        "127.0.0.1", "--brokerIP1", "127.0.0.1", "--brokerName", "broker-m",
                        "--namesrvAddr", namesrv_addr, "--storePathRootDir", tmp_path / "store",
                        "--mappedFileSizeCommitLog", 1 << 20, "--metricsPort", master_metrics,
                        port=port)
        wait_for_port(master_metrics, 30, master)
        wait_until(lambda: value(scrape(namesrv_metrics), "rmqproto_namesrv_brokers") == 1)
        samples = scrape(master_metrics)
        assert value(samples, "rocketmq_brokeruntime_commitlog_maxoffset", broker="broker-m",
                     brokerId="0") == 0
        assert value(samples, "rmqproto_ha_connections") == 0
        assert "rmqproto_namesrv_brokers" not in samples  # each process describes itself
    finally:
        for daemon in (master, namesrv):
            if daemon is not None:
                daemon.stop()
