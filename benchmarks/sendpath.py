"""Our broker's send path in one process, without sockets: the CPU one SEND_MESSAGE_V2 (or
SEND_BATCH_MESSAGE) costs from its decoded frame to its encoded answer, and where it goes.

A real :class:`BrokerController` with a real :class:`DefaultMessageStore` (ASYNC_FLUSH, the
index on, files under a temporary directory) on a fake clock answers the same requests
``loadclient.py`` sends: each frame is decoded (``decode_frame``) and dispatched, exactly
what ``RemotingProtocol.dataReceived`` does for it. What this leaves out, compared with
``broker_bench.py``'s figures, is the reactor, the sockets and the fsyncs (which the broker
runs in a thread of its own).

    python benchmarks/sendpath.py [--messages 20000] [--body-size 128] [--batch 1]
    python benchmarks/sendpath.py --profile          # cProfile: the stages and the top functions
    python benchmarks/sendpath.py --per-read 8       # through RemotingProtocol.dataReceived
    python benchmarks/sendpath.py --instructions     # instructions a send, under callgrind

With ``--per-read N`` the frames go through a :class:`RemotingProtocol` on a fake transport
instead, N length-prefixed frames a ``dataReceived`` (what one socket read brings with N
requests in flight), so the figure includes the protocol's buffering, frame splitting and
writing (one ``transport.write`` a read).

``--instructions`` runs the same under valgrind's callgrind and counts the instructions the
timed sends execute (the set-up, warm-up and request frames are not counted): a figure that
other load on the machine does not move, so two versions can be compared by one run each.
"""

import argparse
import contextlib
import cProfile
import functools
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from twisted.internet import defer
from twisted.internet.address import IPv4Address
from twisted.internet.base import DelayedCall
from twisted.internet.task import Clock

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import OtherLoad, exit_on_sigterm, log  # noqa: E402
from loadclient import SendRequests  # noqa: E402
from rmqproto.broker.config import SETTINGS, apply_startup_rules  # noqa: E402
from rmqproto.broker.controller import BrokerController  # noqa: E402
from rmqproto.codec import headers as h  # noqa: E402
from rmqproto.codec.codes import RequestCode, ResponseCode  # noqa: E402
from rmqproto.codec.frame import decode_frame, encode_frame  # noqa: E402
from rmqproto.codec.ha import TRANSFER_HEADER, encode_slave_report  # noqa: E402
from rmqproto.remoting import RequestContext  # noqa: E402
from rmqproto.store.defaultstore import DefaultMessageStore  # noqa: E402

TOPIC = "BenchSend"
QUEUES = 8

#: Stages of one send as the profile names them: (label, file suffix, function).
def native(function):
    """The (file suffix, function name) a profile gives a function of the C speedups."""
    return "~", "<built-in method rmqproto.codec._speedups.%s>" % function


STAGES = [
    ("frame decode (decode_frame)", "codec/frame.py", "decode_frame"),
    ("checks (pre_send)", "processors/send.py", "pre_send"),
    ("record building (message_record)", "processors/send.py", "message_record"),
    ("batch records (decode_batch_records)", "processors/send.py", "batch_records"),
    ("store put_message, all", "store/defaultstore.py", "put_message_at_once"),
    ("store put_messages, all", "store/defaultstore.py", "put_messages"),
    ("  message checks (check_message)", "store/commitlog.py", "check_message"),
    ("  batch checks (check_batch)", "store/commitlog.py", "check_batch"),
    ("  commit-log append (write_stored_batch)", "store/commitlog.py", "append"),
    ("  dispatch requests (requests_of_fields, C)", "store/dispatch.py", "requests_of_fields"),
    ("  consume-queue runs (consume_queue_runs, C)", *native("consume_queue_runs")),
    ("  consume-queue unit", "store/consumequeue.py", "put_position"),
    ("  consume-queue units of a batch", "store/consumequeue.py", "put_positions"),
    ("  index (build_index)", "store/indexservice.py", "build_index"),
    ("  index of a batch (build_indexes)", "store/indexservice.py", "build_indexes"),
    ("    index entries (index_entries, C)", *native("index_entries")),
    ("  dispatch listeners (long polling)", "broker/longpolling.py", "notify_dispatched"),
    ("  flush wake-up", "store/flush.py", "wakeup"),
    ("answer (_put_done: JsonResponseTemplate, the frame)", "processors/send.py", "_put_done"),
    ("response frame encode (encode_frame: binary headers, refusals)", "codec/frame.py",
     "encode_frame"),
]


class TurnClock(Clock):
    """A fake clock whose calls for now (``callLater(0, …)``) run at :meth:`turn`, as the
    reactor runs them after each round of reads, without the sorting of ``Clock``'s timers
    (a broker has some thirty), which the reactor's heap does not pay."""

    def __init__(self):
        super().__init__()
        self._due = []

    def callLater(self, delay, f, *args, **kw):
        if delay:
            return super().callLater(delay, f, *args, **kw)
        call = DelayedCall(self.seconds(), f, args, kw, self._due.remove, lambda _: None,
                           self.seconds)
        self._due.append(call)
        return call

    def listenTCP(self, port, factory, backlog=50, interface=""):
        """A port that takes no connections (the HA service's, with :class:`ScriptedSlave`)."""
        return _NoPort(port)

    def turn(self):
        """Run the calls for now, as the reactor's ``runUntilCurrent`` after a read."""
        due, self._due = self._due, []
        for call in due:
            call.called = 1
            call.func(*call.args, **call.kw)
        due.clear()  # each call's cancel is this list's remove: a cycle the reactor does not make


def make_broker(root, **settings):
    """A started controller with a real store under ``root``, on a fake clock; ``settings``
    add to or override the benchmark's broker properties."""
    clock = TurnClock()
    clock.advance(time.time())
    values, unknown = SETTINGS.resolve(dict(
        brokerName="broker-bench", brokerIP1="127.0.0.1", brokerIP2="127.0.0.1",
        namesrvAddr="", storePathRootDir=str(root), flushDiskType="ASYNC_FLUSH",
        mappedFileSizeCommitLog=1024 * 1024 * 1024, **settings))
    assert not unknown
    values = apply_startup_rules(values)
    # the broker runs fsyncs in a thread; here they are left out (the job never finishes)
    controller = BrokerController(values, clock, store=DefaultMessageStore(
        values, clock, run_blocking=lambda f, *a: defer.Deferred()))
    controller.start()
    header = h.CreateTopicRequestHeader(topic=TOPIC, default_topic="TBW102",
                                        read_queue_nums=QUEUES, write_queue_nums=QUEUES,
                                        perm=6, topic_filter_type="SINGLE_TAG")
    answer = _dispatch(controller, _frame(RequestCode.UPDATE_AND_CREATE_TOPIC,
                                          header.to_ext_fields()))
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    return controller


class _NoPort:
    """The listening port :class:`TurnClock` gives: no socket, nothing to accept."""

    def __init__(self, port):
        self.port = port

    def getHost(self):
        return IPv4Address("TCP", "127.0.0.1", self.port)

    def stopListening(self):
        return None


class _LastWrite:
    """An HA connection's transport that keeps only its last write (a whole transfer: the
    master writes each with its header)."""

    def __init__(self):
        self.last = None

    def write(self, data):
        self.last = data

    def getPeer(self):
        return IPv4Address("TCP", "127.0.0.1", 50001)

    def registerProducer(self, producer, streaming):
        pass


class ScriptedSlave:
    """The one slave of a SYNC_MASTER ``controller``, without a socket: an HA connection of
    the master's started :class:`HAMasterService` that reports 0 first, then, at each
    :meth:`ack`, the end of the last transfer it was sent (what our slave reports once it
    appended it)."""

    def __init__(self, controller):
        from rmqproto.ha.master import HAMasterService
        self.ha = HAMasterService(controller)
        self.ha.startService()
        self.connection = self.ha.factory.buildProtocol(None)
        self.transport = _LastWrite()
        self.connection.makeConnection(self.transport)
        self.connection.dataReceived(encode_slave_report(0))

    def ack(self):
        last = self.transport.last
        if last is not None:
            header = TRANSFER_HEADER.unpack(last)
            self.transport.last = None
            self.connection.dataReceived(encode_slave_report(header.offset + header.body_size))


@contextlib.contextmanager
def temporary_broker(prefix, **settings):
    """A broker of :func:`make_broker` under a new temporary directory (``prefix``), shut down
    and removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        controller = make_broker(root / "store", **settings)
        yield controller
        controller.store.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)
        log("done")


def _frame(code, ext_fields):
    from rmqproto.codec.frame import RemotingCommand
    return encode_frame(RemotingCommand(code, ext_fields=ext_fields))[4:]


def _dispatch(controller, frame, context=RequestContext(None, "127.0.0.1:50000")):
    answer = controller.dispatcher.dispatch(decode_frame(frame), context)
    results = []
    if isinstance(answer, defer.Deferred):
        answer.addCallback(results.append)
        answer = results[0]
    return decode_frame(answer[4:])


def request_frames(count, body_size, batch):
    """``count`` request frames (without their length prefix), as the load client sends them."""
    requests = SendRequests(TOPIC, QUEUES, body_size, batch)
    frames = []
    for opaque in range(count):
        request = requests.next_request()
        request.opaque = opaque
        frames.append(encode_frame(request)[4:])
    return frames


def timed(loop, counted=False):
    """Call ``loop()``; the CPU seconds it took. With ``counted`` it is called from C's
    ``functools.reduce``, so that callgrind started with ``--toggle-collect=functools_reduce``
    counts the loop and nothing around it."""
    started = time.process_time()
    if counted:
        functools.reduce(lambda _, __: loop(), [None], None)
    else:
        loop()
    return time.process_time() - started


def run(frames, controller, counted=False):
    """Decode and dispatch every frame as ``RemotingProtocol`` does; ``(CPU seconds, answers)``."""
    dispatch = controller.dispatcher.dispatch
    context = RequestContext(None, "127.0.0.1:50000")
    answers = []
    keep = answers.append
    turn = controller.reactor.turn

    def loop():
        for frame in frames:
            answer = dispatch(decode_frame(frame), context)
            if isinstance(answer, defer.Deferred):
                answer.addCallback(keep)
            else:
                keep(answer)
            turn()

    return timed(loop, counted), answers


class _Transport:
    """What ``RemotingProtocol`` needs of a TCP transport; keeps the written bytes."""

    def __init__(self):
        self.written = []
        self.write = self.written.append

    def getPeer(self):
        return IPv4Address("TCP", "127.0.0.1", 50000)

    def registerProducer(self, producer, streaming):
        """Everything is "sent" at once: the producer is never paused."""


def run_protocol(frames, controller, per_read, counted=False, slave=None):
    """Feed ``frames`` to a ``RemotingProtocol`` ``per_read`` at a time; ``(CPU seconds,
    answers)``. With a :class:`ScriptedSlave`, each read's turn is followed by the slave's
    ack of what the turn transferred, and by the turn that ack's answers make."""
    from rmqproto.codec.frame import FrameDecoder
    from rmqproto.remoting.protocol import RemotingProtocol
    protocol = RemotingProtocol(controller.dispatcher, controller.reactor)
    protocol.makeConnection(_Transport())
    reads = [b"".join(len(f).to_bytes(4, "big") + f for f in frames[i:i + per_read])
             for i in range(0, len(frames), per_read)]
    received = protocol.dataReceived
    turn = controller.reactor.turn

    def loop():
        for data in reads:
            received(data)
            turn()

    def loop_with_slave():
        ack = slave.ack
        for data in reads:
            received(data)
            turn()
            ack()
            turn()

    seconds = timed(loop if slave is None else loop_with_slave, counted)
    decoder = FrameDecoder()
    answers = [len(f).to_bytes(4, "big") + f for f in decoder.feed(b"".join(protocol.transport.written))]
    return seconds, answers


def check(frames, answers):
    failed = [a for a in answers if decode_frame(a[4:]).code != ResponseCode.SUCCESS]
    if failed or len(answers) != len(frames):
        raise RuntimeError("%d of %d sends failed or went unanswered"
                           % (len(failed) + len(frames) - len(answers), len(frames)))


def stage_table(stats, per_send_us):
    """Each of ``STAGES`` as a share of the dispatch time in ``stats`` (a ``pstats.Stats``) and
    as µs of the unprofiled ``per_send_us``."""
    def cumulative(suffix, function):
        return sum(ct for (path, _, name), (_, _, _, ct, _) in stats.stats.items()
                   if name == function and path.endswith(suffix))

    total = cumulative("remoting/dispatch.py", "dispatch") + cumulative("codec/frame.py",
                                                                        "decode_frame")
    rows = []
    for label, suffix, function in STAGES:
        share = cumulative(suffix, function) / total if total else 0.0
        if share == 0.0:
            continue  # a stage of the other kind of send
        rows.append("%-44s %5.1f %%  %6.1f µs" % (label, 100 * share, share * per_send_us))
    return "\n".join(rows)


#: What callgrind collects: only inside this C function, through which :func:`timed` runs
#: the timed sends when counted.
_COUNTED = "functools_reduce"


def count_instructions(argv, sends, script=__file__):
    """Run ``script`` (this one by default) with ``argv`` (the command line's when None),
    ``--instructions`` dropped and ``--counted`` added, under callgrind; instructions a send."""
    argv = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--instructions"]
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (Debian's package valgrind)")
    with tempfile.TemporaryDirectory(prefix="sendpath-cg-") as out:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "--collect-atstart=no",
             "--toggle-collect=" + _COUNTED, "--callgrind-out-file=%s/callgrind.out" % out,
             sys.executable, script, *argv, "--counted"],
            capture_output=True, text=True, check=False)
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if done.returncode or not found:
        raise RuntimeError("callgrind run failed (exit %d):\n%s" % (done.returncode,
                                                                     done.stderr[-2000:]))
    return int(found.group(1)) / sends


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=20_000, help="sends to time")
    parser.add_argument("--body-size", type=int, default=128)
    parser.add_argument("--batch", type=int, default=1, help="messages a send (> 1: batch)")
    parser.add_argument("--per-read", type=int, default=0,
                        help="> 0: through RemotingProtocol, this many frames a dataReceived")
    parser.add_argument("--sync-master", action="store_true",
                        help="a SYNC_MASTER with a scripted slave that acks each read's "
                             "transfer (needs --per-read)")
    parser.add_argument("--profile", action="store_true",
                        help="then run as many sends again under cProfile (CPU-time clock)")
    parser.add_argument("--instructions", action="store_true",
                        help="count the instructions a send executes, under callgrind")
    parser.add_argument("--counted", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.instructions:
        print("%d sends of %d × %d B: %s instructions a send" % (
            args.messages, args.batch, args.body_size,
            "{:,.0f}".format(count_instructions(argv, args.messages))))
        return
    if args.sync_master and args.per_read <= 0:
        parser.error("--sync-master needs --per-read")
    exit_on_sigterm()
    settings = dict(brokerRole="SYNC_MASTER") if args.sync_master else {}
    with temporary_broker("sendpath-", **settings) as controller:
        runner = run if args.per_read <= 0 else partial(
            run_protocol, per_read=args.per_read,
            slave=ScriptedSlave(controller) if args.sync_master else None)
        warmup = request_frames(2000, args.body_size, args.batch)
        check(warmup, runner(warmup, controller)[1])
        frames = request_frames(args.messages, args.body_size, args.batch)
        if args.counted:
            runner = partial(runner, counted=True)
        with OtherLoad() as other:
            seconds, answers = runner(frames, controller)
        check(frames, answers)
        sends = len(frames)
        per_send_us = seconds / sends * 1e6
        print("%d sends of %d × %d B: %.1f µs of CPU a send (%.1f µs a message), %s sends/s "
              "on one core; other load %.2f cores" % (
                  sends, args.batch, args.body_size, per_send_us, per_send_us / args.batch,
                  "{:,.0f}".format(sends / seconds), other.cores))
        if args.profile:
            # the CPU-time clock keeps other processes' use of the CPU out of the profile
            profiler = cProfile.Profile(time.process_time)
            frames = request_frames(args.messages, args.body_size, args.batch)
            profiler.enable()
            answers = runner(frames, controller)[1]
            profiler.disable()
            check(frames, answers)
            stats = pstats.Stats(profiler)
            print("\nwhere a send's time goes (cumulative share of the profiled time):")
            print(stage_table(stats, per_send_us))
            print()
            stats.sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
