"""``rmqadmin`` run in-process, and ``mqadmin`` (4.9.8)'s answers parsed into facts, for the
tests that compare the two on one cluster: a master and its slave (``broker-a`` of
``DefaultCluster``), ours from ``twistd rmq-local`` or the Java 4.9.7 ones."""

import io
import json
import re
import shutil
import signal
from pathlib import Path

from rmqproto.codec.bodies.route import TopicRouteData
from rmqproto.tools.rmqadmin import main
from support.daemons import Daemon
from support.javapeers import broker_port
from support.processes import free_port, wait_for_port

BROKER, CLUSTER = "broker-a", "DefaultCluster"
#: Where mqadmin's queryMsgById / queryMsgByOffset write each body shown (``printMsg``).
MQADMIN_BODIES = Path("/tmp/rocketmq/msgbodys")


def rmqadmin(namesrv_addr, *args):
    """``rmqadmin ARGS -n namesrv_addr --json`` in this process: its decoded answer (it must succeed)."""
    out = io.StringIO()
    assert main([str(a) for a in args] + ["-n", namesrv_addr, "--json"], out=out) == 0, args
    return json.loads(out.getvalue())


def rmqadmin_error(namesrv_addr, capsys, *args):
    """``rmqadmin ARGS -n namesrv_addr``, which must fail with exit status 1: its one line on stderr."""
    capsys.readouterr()
    assert main([str(a) for a in args] + ["-n", namesrv_addr], out=io.StringIO()) == 1, args
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


class LocalCluster:
    """``twistd -n rmq-local``: our NameServer, a SYNC_MASTER and its slave."""

    kind = "ours"

    def __init__(self, workdir):
        base = free_port(14)  # master +2 (HA +3), NameServer +6, slave +12 (HA +13)
        ports = dict(listenPort=base + 2, namesrvPort=base + 6, metricsPort=0)
        conf = workdir / "broker.conf"
        conf.write_text("mappedFileSizeCommitLog=%d\nmappedFileSizeConsumeQueue=6000\n" % (4 << 20))
        self.daemon = Daemon(workdir, "rmq-local", "--dataDir", workdir / "data", "-c", conf,
                             *("--%s=%d" % item for item in ports.items()), port=ports["namesrvPort"])
        self.namesrv_addr = "127.0.0.1:%d" % ports["namesrvPort"]
        self.master = "127.0.0.1:%d" % ports["listenPort"]
        self.slave = "127.0.0.1:%d" % (ports["listenPort"] + 10)
        for address in (self.master, self.slave):
            wait_for_port(int(address.rsplit(":", 1)[1]), 30, self.daemon)
        self.data = workdir / "data"

    def stop(self):
        assert self.daemon.stop() in (0, -signal.SIGTERM), self.daemon.output()[-3000:]
        shutil.rmtree(self.data, ignore_errors=True)


class JavaCluster:
    """The Java 4.9.7 NameServer, an ASYNC_MASTER and its slave."""

    kind = "java"

    def __init__(self, peers):
        port = free_port()
        peers.namesrv(port)
        self.namesrv_addr = "127.0.0.1:%d" % port
        self.master = "127.0.0.1:%d" % broker_port()
        self.slave = "127.0.0.1:%d" % broker_port()
        for broker_id, role, address in ((0, "ASYNC_MASTER", self.master), (1, "SLAVE", self.slave)):
            peers.broker("%s-%d" % (BROKER, broker_id), brokerName=BROKER, brokerId=broker_id,
                         brokerRole=role, namesrvAddr=self.namesrv_addr,
                         listenPort=address.rsplit(":", 1)[1])

    def stop(self):
        pass  # the peers stop every Java process


# ---------------------------------------------------------------- mqadmin's answers as facts

def mqadmin_batch(peers, namesrv_addr, commands):
    """Run mqadmin 4.9.8 ``commands`` (name -> argument list) in one JVM (``MQAdminBatch``);
    name -> its output."""
    args = [str(a) for command in commands.values()
            for a in ("--next", *command, "-n", namesrv_addr)][1:]
    result = peers.run_client("rmqproto.peers.MQAdminBatch", *args, timeout=180)
    parts = re.split(r"^=== mqadmin .*$", result.stdout + result.stderr, flags=re.M)
    assert len(parts) == len(commands) + 1, result.stdout + result.stderr
    return dict(zip(commands, parts[1:]))


def remove_bodies(msg_ids):
    """Remove the body files mqadmin wrote for the messages ``msg_ids`` (their ``UNIQ_KEY``)."""
    for msg_id in msg_ids:
        (MQADMIN_BODIES / msg_id).unlink(missing_ok=True)


def rows(text, header):
    """The whitespace-split lines after the line starting with ``header`` up to a blank line."""
    lines = text.strip().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header)) + 1
    found = []
    for line in lines[start:]:
        if not line.strip():
            break
        found.append(line.split())
    return found


def key_values(text, separator):
    """``key<padding><separator>value`` lines (brokerStatus ``: ``, getBrokerConfig ``=  ``)."""
    pattern = re.compile(r"^(\S+?)\s*%s(.*?)\s*$" % re.escape(separator), re.M)
    return {key: value.strip() for key, value in pattern.findall(text)}


def route(text):
    """topicRoute's JSON (fastjson's pretty form, unquoted broker ids)."""
    return TopicRouteData.from_json(text[text.index("{"):text.rindex("}") + 1].encode())


_MESSAGE_FIELDS = {"OffsetID": "offsetMsgId", "Topic": "topic", "Tags": "tags", "Keys": "keys",
                   "Queue ID": "queueId", "Queue Offset": "queueOffset",
                   "CommitLog Offset": "commitLogOffset", "Reconsume Times": "reconsumeTimes",
                   "Born Host": "bornHost", "Store Host": "storeHost", "System Flag": "sysFlag",
                   "Properties": "properties"}


def message(text):
    """queryMsgById / queryMsgByOffset's ``printMsg`` as rmqadmin's field names and values
    (properties as a dict, the pull's MIN_OFFSET / MAX_OFFSET left out)."""
    found = {}
    for label, value in re.findall(r"^([A-Za-z ]+):\s+(.*?)\s*$", text, re.M):
        name = _MESSAGE_FIELDS.get(label)
        if name is None:
            continue
        if name in ("tags", "keys"):
            value = value[1:-1]
        elif name == "properties":
            value = dict(item.split("=", 1) for item in value[1:-1].split(", "))
            for extra in ("MIN_OFFSET", "MAX_OFFSET"):
                value.pop(extra, None)
        elif name in ("queueId", "queueOffset", "commitLogOffset", "reconsumeTimes", "sysFlag"):
            value = int(value)
        found[name] = value
    return found


def consumed(text):
    """consumeMessage's ``MSGID: id MessageExt [... queueOffset=n, ...] BODY: body`` lines:
    ``[(msgId, queueOffset, body)]``."""
    return [(msg_id, int(offset), body) for msg_id, offset, body in re.findall(
        r"^MSGID: (\S+) MessageExt \[.*?queueOffset=(\d+),.*\] BODY: (.*)$", text, re.M)]
