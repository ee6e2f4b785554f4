"""Codec hot paths, ours against RocketMQ 4.9.8's own classes, in one run.

Each operation runs in a single-threaded timed loop over the same input as the Java
``CodecBench`` (``benchmarks/java``): a SEND_MESSAGE_V2 request frame with a 1 KiB body,
the broker's commit-log record of the same message, and consume-queue units. Before
measuring, the inputs are checked to be byte-identical to the ones Java builds.

    python benchmarks/codec_bench.py [--seconds 2] [--repeat 2] [--markdown out.md] [--no-java]
    python benchmarks/codec_bench.py --profile frame_decode_header

Targets (per core): 150,000 frame decodes/s and 150,000 record encodes/s. The "other
load" column is the CPU (in cores) other processes used meanwhile: well above zero means
the figure was disturbed.
"""

import argparse
import cProfile
import json
import pstats
import sys
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (  # noqa: E402
    OtherLoad, exit_on_sigterm, format_table, java_classpath, log, machine, rate, ratio, run_java)
from rmqproto.codec import consumequeue, message  # noqa: E402
from rmqproto.codec.codes import RequestCode  # noqa: E402
from rmqproto.codec.frame import RemotingCommand, decode_frame, encode_frame  # noqa: E402
from rmqproto.codec.headers import SendMessageRequestHeaderV2  # noqa: E402
from rmqproto.codec.javalang import masked_crc32  # noqa: E402

JAVA_MAIN = "org.apache.rocketmq.store.CodecBench"

#: The properties of the benchmark message, in the order CodecBench puts them.
PROPERTIES = {
    message.PROPERTY_KEYS: "order-42",
    message.PROPERTY_TAGS: "TagA",
    message.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: "7F00000100002A9F0000000000000001",
    message.PROPERTY_WAIT_STORE_MSG_OK: "true",
}
TOPIC = "BenchmarkTopic"
UNIT = (123456789, 1100, 987654321)

#: ops/s each operation must reach on one core.
TARGETS = {"frame_decode": 150_000, "record_encode": 150_000}


def send_frame(body_size):
    """The SEND_MESSAGE_V2 request CodecBench decodes, without its length prefix."""
    header = SendMessageRequestHeaderV2(
        producer_group="benchmark_producer_group", topic=TOPIC, default_topic="TBW102",
        default_topic_queue_nums=4, queue_id=3, sys_flag=0, born_timestamp=1700000000000,
        flag=0, properties=message.properties_to_string(PROPERTIES), reconsume_times=0,
        unit_mode=False, batch=False)
    cmd = RemotingCommand(RequestCode.SEND_MESSAGE_V2, ext_fields=header.to_ext_fields(),
                          body=bytes(body_size), version=409)
    return encode_frame(cmd)[4:]


def broker_record(body_size):
    """The record the broker encodes for that message (offsets still zero, as Java's encoder leaves them)."""
    return message.MessageRecord(
        TOPIC, bytes(body_size), dict(PROPERTIES), queue_id=3, born_timestamp=1700000000000,
        store_timestamp=1700000000001, born_host=("127.0.0.1", 50000),
        store_host=("127.0.0.1", 10911))


def operations(body_size, stored_record):
    """``{name: (statement, namespace)}``: each statement is one operation, as in CodecBench.

    Statements are compiled by :mod:`timeit` straight into the timing loop, so no extra
    Python call wraps them. ``stored_record`` is the record bytes to decode (Java's own).
    """
    frame = send_frame(body_size)
    record = broker_record(body_size)
    unit = consumequeue.encode_unit(UNIT)
    namespace = dict(decode_frame=decode_frame, V2=SendMessageRequestHeaderV2, frame=frame,
                     record=record, crc=masked_crc32, encode_record=message.encode_record,
                     decode_record=message.decode_record, stored=stored_record,
                     encode_unit=consumequeue.encode_unit, decode_unit=consumequeue.decode_unit,
                     UNIT=UNIT, unit=unit)
    statements = {
        "frame_decode": "decode_frame(frame)",
        "frame_decode_header": "V2.from_ext_fields(decode_frame(frame).ext_fields)",
        # like Java: set the body CRC on the message, then encode it
        "record_encode": "record.body_crc = crc(record.body); encode_record(record)",
        "record_decode": "decode_record(stored)",
        "cq_unit_encode": "encode_unit(UNIT)",
        "cq_unit_decode": "decode_unit(unit)",
    }
    return {name: (stmt, namespace) for name, stmt in statements.items()}


def measure(statement, namespace, seconds, batch=1000):
    """Operations per second of ``statement`` run for about ``seconds``."""
    timer = timeit.Timer(statement, globals=namespace)
    timer.timeit(batch)  # warm caches
    count, elapsed = 0, 0.0
    while elapsed < seconds:
        elapsed += timer.timeit(batch)
        count += batch
    return count / elapsed


def java_inputs(classpath, body_size):
    """The frame and records CodecBench builds, as bytes."""
    out = json.loads(run_java(classpath, JAVA_MAIN, "inputs", body_size, timeout=120))
    return {key: bytes.fromhex(value) for key, value in out.items()}


def check_same_inputs(java, body_size):
    """Fail unless our encoders produce exactly the bytes the Java side uses."""
    if send_frame(body_size) != java["frame"]:
        raise SystemExit("our SEND_MESSAGE_V2 frame differs from CodecBench's")
    record = broker_record(body_size)
    if message.encode_record(record) != java["encoded_record"]:
        raise SystemExit("our record encoding differs from CommitLog.MessageExtEncoder's")
    decoded = message.decode_record(java["stored_record"])
    if (decoded.topic, decoded.body, decoded.properties) != (TOPIC, record.body, PROPERTIES):
        raise SystemExit("Java's stored record decodes to another message")


def profile(name, body_size, stored_record, seconds):
    """Print where the time of one operation goes (cProfile, cumulative)."""
    statement, namespace = operations(body_size, stored_record)[name]
    code = compile("for _ in range(n):\n    %s\n" % statement.replace("; ", "\n    "),
                   name, "exec")
    count = max(1000, int(measure(statement, namespace, 0.3) * seconds))
    profiler = cProfile.Profile()
    profiler.runctx(code, dict(namespace, n=count), {})
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def run(seconds, body_size, repeat, with_java):
    """``{side: {operation: (ops/s, other load)}}`` for side ``ours`` and, with Java, ``java``.

    Ours and Java take turns ``repeat`` times; the best rate of each operation is kept,
    with the background load (cores used by other processes) measured during that run.
    """
    stored = message.encode_record(broker_record(body_size))
    classpath = None
    if with_java:
        classpath = java_classpath()
        inputs = java_inputs(classpath, body_size)
        check_same_inputs(inputs, body_size)
        stored = inputs["stored_record"]
    best = {"ours": {}, "java": {}} if with_java else {"ours": {}}
    ops = operations(body_size, stored)
    for _ in range(repeat):
        for name, (statement, namespace) in ops.items():
            with OtherLoad() as other:
                value = measure(statement, namespace, seconds)
            _keep_best(best["ours"], name, value, other.cores)
            log("ours %-20s %14s ops/s  (other load %.2f)" % (name, rate(value), other.cores))
        if with_java:
            # CodecBench warms each operation up for 0.5 s, then measures it for `seconds`
            with OtherLoad() as other:
                out = json.loads(run_java(classpath, JAVA_MAIN, seconds, body_size,
                                          timeout=60 + 3 * len(ops) * (seconds + 1)))
            for name, value in out.items():
                _keep_best(best["java"], name, value, other.cores)
                log("java %-20s %14s ops/s  (other load %.2f)" % (name, rate(value), other.cores))
    return best


def _keep_best(figures, name, value, other):
    if name not in figures or value > figures[name][0]:
        figures[name] = (value, other)


def table(results, markdown=False):
    ours, java = results["ours"], results.get("java", {})
    rows = []
    for name, (value, other) in ours.items():
        theirs, their_other = java.get(name, (None, 0.0))
        target = TARGETS.get(name)
        verdict = "" if target is None else ("%s (%s)" % (
            rate(target), "met" if value >= target else "MISSED"))
        rows.append([name, rate(value), "%.2f" % (1e6 / value), rate(theirs),
                     ratio(value, theirs), verdict, "%.2f" % max(other, their_other)])
    return format_table(["operation", "ours ops/s", "ours µs/op", "Java ops/s", "ours/Java",
                         "target", "other load"], rows, markdown)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="measuring time per operation")
    parser.add_argument("--body-size", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=2,
                        help="turns of ours and Java; the best rate of each is reported")
    parser.add_argument("--no-java", action="store_true", help="measure ours only")
    parser.add_argument("--markdown", type=Path, help="also write the table there as markdown")
    parser.add_argument("--json", type=Path, help="also write the raw figures there")
    parser.add_argument("--profile", metavar="OPERATION",
                        help="profile one operation instead of benchmarking")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    started = time.monotonic()
    if args.profile:
        stored = message.encode_record(broker_record(args.body_size))
        profile(args.profile, args.body_size, stored, args.seconds)
        return
    results = run(args.seconds, args.body_size, args.repeat, not args.no_java)
    print(table(results))
    info = machine()
    print("\n%(cpus)d CPUs, %(cpu)s; %(python)s; %(java)s" % info)
    log("took %.0f s" % (time.monotonic() - started))
    if args.markdown:
        args.markdown.write_text(table(results, markdown=True) + "\n")
    if args.json:
        args.json.write_text(json.dumps(dict(results, machine=info), indent=2) + "\n")


if __name__ == "__main__":
    main()
