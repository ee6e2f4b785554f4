"""Memory over time: short-lived peers against a live ``twistd`` process, and what it keeps.

Each scenario starts the process as an operator would, then lets peers come and go, each
on its own connection, and every ``--every`` peers prints the process's ``RssAnon`` (its
anonymous resident memory), its open descriptors and, with ``--tracemalloc``, the Python
heap as ``tracemalloc`` traces it (the process then runs under a wrapper that snapshots on
SIGUSR1 and writes, at the end, the allocation sites that grew most since the first report;
``RssAnon`` then includes tracemalloc's own tables, so read it from a run without it).

- ``broker``: ``twistd rmq-master`` (ASYNC_MASTER). Each client sends HEART_BEAT (a producer
  and a consumer group), a SEND_MESSAGE_V2, a PULL_MESSAGE and an UPDATE_CONSUMER_OFFSET;
  every third also parks a long poll that expires, every seventh leaves one parked at
  close; half send UNREGISTER_CLIENT, the rest just close.
- ``nameserver``: ``twistd rmq-nameserver``. Each broker, with its own name, address and
  topic, registers, looks its topic and a missing one up; half unregister, the rest close.
- ``ha``: ``twistd rmq-master`` as SYNC_MASTER. Each connection to the HA port reports
  offset 0 and reads what comes; every other one then reports an offset beyond the
  master's (closed by the master); every hundredth a send waits for a slave meanwhile.

    python benchmarks/churn.py broker [--peers 9000] [--every 600] [--tracemalloc]
    python benchmarks/churn.py nameserver --peers 3000
    python benchmarks/churn.py ha --peers 2400
"""

import argparse
import gc
import os
import signal
import socket
import struct
import sys
import tempfile
import time
import tracemalloc
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

import broker_bench  # noqa: E402
import support.daemons  # noqa: E402
from loadclient import SendRequests  # noqa: E402
from rmqproto.codec import headers as h  # noqa: E402
from rmqproto.codec.bodies.client import (  # noqa: E402
    ConsumeType, ConsumerData, HeartbeatData, MessageModel, ProducerData, SubscriptionData)
from rmqproto.codec.bodies.topic import (  # noqa: E402
    RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper)
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R  # noqa: E402
from rmqproto.codec.frame import RemotingCommand, encode_frame  # noqa: E402
from support.javapeers import broker_port  # noqa: E402
from support.syncclient import SyncClient, call  # noqa: E402

TOPIC = "ChurnTopic"
#: Where the traced process writes its reports (set for it by :func:`main`).
TRACE_FILE = "RMQ_CHURN_TRACE_FILE"
_TRACED_TWISTD = ("import sys; sys.path.insert(0, %r); import churn; churn.traced_twistd()"
                  % str(HERE))


def traced_twistd():
    """Run twistd with ``tracemalloc`` on: each SIGUSR1 appends ``traced <bytes>`` (after a
    collection) to the file named by :data:`TRACE_FILE`, and SIGUSR2 the 12 allocation sites
    that grew most since the first SIGUSR1."""
    tracemalloc.start(20)
    path = os.environ[TRACE_FILE]
    first = []

    def snapshot():
        gc.collect()
        return tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__)])

    def report(*_):
        current = snapshot()
        if not first:
            first.append(current)
        with open(path, "a") as out:
            out.write("traced %d\n" % tracemalloc.get_traced_memory()[0])

    def growth(*_):
        with open(path, "a") as out:
            for stat in snapshot().compare_to(first[0], "traceback")[:12]:
                newest = stat.traceback[-1]
                out.write("%s:%d: %+.1f KiB in %+d blocks, allocated from\n" % (
                    newest.filename, newest.lineno, stat.size_diff / 1024, stat.count_diff))
                out.writelines("    %s\n" % line for line in stat.traceback.format()[-8:])

    signal.signal(signal.SIGUSR1, report)
    signal.signal(signal.SIGUSR2, growth)
    from twisted.scripts.twistd import run
    run()


class Watched:
    """A process whose memory is reported: ``RssAnon``, descriptors, the traced heap."""

    def __init__(self, pid, trace_file=None):
        self.pid, self.trace_file = pid, trace_file

    def status(self):
        with open("/proc/%d/status" % self.pid) as status:
            anon = next(line.split()[1] for line in status if line.startswith("RssAnon"))
        line = "RssAnon %6.1f MB, %3d descriptors" % (
            int(anon) / 1024, len(os.listdir("/proc/%d/fd" % self.pid)))
        if self.trace_file is not None:
            os.kill(self.pid, signal.SIGUSR1)
            line += ", Python heap %6.1f MB" % (self._last_traced() / 1e6)
        return line

    def _last_traced(self, timeout=30.0):
        deadline = time.monotonic() + timeout
        seen = self._traced_lines()
        while time.monotonic() < deadline:
            time.sleep(0.2)
            lines = self._traced_lines()
            if len(lines) > len(seen):
                return int(lines[-1].split()[1])
        raise TimeoutError("the traced process wrote no report in %d s" % timeout)

    def _traced_lines(self):
        try:
            text = Path(self.trace_file).read_text()
        except FileNotFoundError:
            return []
        return [line for line in text.splitlines() if line.startswith("traced ")]

    def growth(self):
        """The traced process's allocation sites that grew most, or ''."""
        if self.trace_file is None:
            return ""
        before = Path(self.trace_file).read_text()
        os.kill(self.pid, signal.SIGUSR2)
        time.sleep(5)
        return Path(self.trace_file).read_text()[len(before):]


def _heartbeat(client_id, group):
    subscription = SubscriptionData.for_expression(TOPIC, "*", 1)
    return HeartbeatData(client_id, [ProducerData("churn_producer")], [ConsumerData(
        group, ConsumeType.CONSUME_PASSIVELY, MessageModel.CLUSTERING,
        subscription_data_set=[subscription])]).to_json()


def _pull(group, queue_id, offset, suspend_ms):
    return h.PullMessageRequestHeader(
        consumer_group=group, topic=TOPIC, queue_id=queue_id, queue_offset=offset,
        max_msg_nums=8, sys_flag=0x2, commit_offset=0, suspend_timeout_millis=suspend_ms,
        sub_version=1).to_ext_fields()


def _expect(answer, what, *codes):
    if answer.code not in (codes or (R.SUCCESS,)):
        raise RuntimeError("%s answered %d: %s" % (what, answer.code, answer.remark))


def broker_client(address, n, sends):
    """One broker client's life (see the module's docstring)."""
    client = SyncClient(address)
    try:
        client_id, group, queue_id = "127.0.0.1@churn%d" % n, "churn_group%d" % (n % 5), n % 4
        _expect(client.call(RC.HEART_BEAT, body=_heartbeat(client_id, group)), "HEART_BEAT")
        request = sends.next_request()
        _expect(client.call(request.code, request.ext_fields, request.body), "SEND_MESSAGE_V2")
        client.call(RC.PULL_MESSAGE, _pull(group, queue_id, max(0, n // 4 - 3), 0))
        _expect(client.call(RC.UPDATE_CONSUMER_OFFSET, h.UpdateConsumerOffsetRequestHeader(
            consumer_group=group, topic=TOPIC, queue_id=queue_id,
            commit_offset=n // 4).to_ext_fields()), "UPDATE_CONSUMER_OFFSET")
        if n % 3 == 0:  # parked, then expires
            client.call(RC.PULL_MESSAGE, _pull(group, queue_id, 10 ** 9, 20_000))
        if n % 7 == 0:  # still parked when the connection closes
            client.opaque += 1
            client.send_raw(encode_frame(RemotingCommand(
                int(RC.PULL_MESSAGE), opaque=client.opaque, version=409,
                ext_fields=_pull(group, queue_id, 10 ** 9, 30_000))))
        if n % 2 == 0:
            _expect(client.call(RC.UNREGISTER_CLIENT, h.UnregisterClientRequestHeader(
                client_id=client_id, producer_group="churn_producer",
                consumer_group=group).to_ext_fields()), "UNREGISTER_CLIENT")
    finally:
        client.close()


def nameserver_client(address, n):
    """One broker's life at the NameServer (see the module's docstring)."""
    client = SyncClient(address)
    try:
        name, cluster = "churn-broker-%d" % n, "C%d" % (n % 3)
        broker_addr = "127.0.0.1:%d" % (20000 + n)
        body = RegisterBrokerBody(topic_config_serialize_wrapper=TopicConfigSerializeWrapper(
            topic_config_table={"T%d" % n: TopicConfig(topic_name="T%d" % n),
                                "Shared": TopicConfig(topic_name="Shared")})).to_json()
        header = h.RegisterBrokerRequestHeader(
            broker_name=name, broker_addr=broker_addr, cluster_name=cluster,
            ha_server_addr="127.0.0.1:1", broker_id=0, compressed=False,
            body_crc32=zlib.crc32(body) & 0x7FFFFFFF)
        _expect(client.call(RC.REGISTER_BROKER, header.to_ext_fields(), body), "REGISTER_BROKER")
        _expect(client.call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "T%d" % n}), "GET_ROUTEINFO")
        client.call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "Missing%d" % n})
        if n % 2:
            _expect(client.call(RC.UNREGISTER_BROKER, h.UnRegisterBrokerRequestHeader(
                broker_name=name, broker_addr=broker_addr, cluster_name=cluster,
                broker_id=0).to_ext_fields()), "UNREGISTER_BROKER")
    finally:
        client.close()


def ha_connection(ha_port, n, sender):
    """One HA connection's life (see the module's docstring)."""
    with socket.create_connection(("127.0.0.1", ha_port)) as ha:
        ha.sendall(struct.pack(">q", 0))
        ha.settimeout(0.02)
        try:
            ha.recv(65536)
        except socket.timeout:
            pass
        if n % 2:
            ha.sendall(struct.pack(">q", 1 << 40))
        if n % 100 == 0:
            sender()


def _start_master(work, namesrv, stops, **settings):
    port = broker_port()
    store = work / "broker" / "store"
    (work / "broker").mkdir()
    settings = dict(broker_bench.BROKER_SETTINGS, brokerName="churn", listenPort=port,
                    namesrvAddr=namesrv, storePathRootDir=store,
                    storePathCommitLog=store / "commitlog", **settings)
    process = broker_bench.start_twistd("rmq-master", settings, work / "broker", stops=stops)
    address = "127.0.0.1:%d" % port
    _expect(call(address, RC.UPDATE_AND_CREATE_TOPIC, h.CreateTopicRequestHeader(
        topic=TOPIC, default_topic="TBW102", read_queue_nums=4, write_queue_nums=4, perm=6,
        topic_filter_type="SINGLE_TAG").to_ext_fields()), "UPDATE_AND_CREATE_TOPIC")
    return process, address, port


def run(scenario, peers, every, work, trace_file):
    """Run ``scenario`` for ``peers`` peers, printing the watched process every ``every``."""
    stops = []
    try:
        (work / "namesrv").mkdir()
        nameserver, namesrv = support.daemons.start_nameserver(work / "namesrv")
        stops.append(nameserver.stop)
        if scenario == "nameserver":
            pid = nameserver.popen.pid

            def peer(n):
                nameserver_client(namesrv, n)
        else:
            role = "SYNC_MASTER" if scenario == "ha" else "ASYNC_MASTER"
            process, address, port = _start_master(work, namesrv, stops, brokerRole=role)
            pid = process.popen.pid
            sends = SendRequests(TOPIC, 4, 128, 1)
            if scenario == "broker":
                def peer(n):
                    broker_client(address, n, sends)
            else:
                sender = SyncClient(address, timeout=30)
                stops.append(sender.close)

                def send():
                    request = sends.next_request()
                    _expect(sender.call(request.code, request.ext_fields, request.body),
                            "SEND_MESSAGE_V2", R.SLAVE_NOT_AVAILABLE, R.FLUSH_SLAVE_TIMEOUT)

                def peer(n):
                    ha_connection(port + 1, n, send)
        watched = Watched(pid, trace_file)
        print("%6d peers: %s" % (0, watched.status()), flush=True)
        for n in range(1, peers + 1):
            peer(n)
            if n % every == 0 or n == peers:
                time.sleep(0.5)  # let closes and unregistrations land
                print("%6d peers: %s" % (n, watched.status()), flush=True)
        print(watched.growth(), end="", flush=True)
    finally:
        for stop in reversed(stops):
            stop()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenario", choices=("broker", "nameserver", "ha"))
    parser.add_argument("--peers", type=int, default=3000,
                        help="clients, brokers or HA connections")
    parser.add_argument("--every", type=int, default=600, help="peers between two reports")
    parser.add_argument("--tracemalloc", action="store_true",
                        help="trace the process's Python heap (slower, more memory)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rmq-churn-") as work:
        work = Path(work)
        trace_file = None
        if args.tracemalloc:
            trace_file = work / "trace.txt"
            os.environ[TRACE_FILE] = str(trace_file)
            support.daemons._TWISTD = broker_bench._TWISTD = _TRACED_TWISTD
        run(args.scenario, args.peers, args.every, work, trace_file)


if __name__ == "__main__":
    main()
