"""Our broker's pull path in one process, without sockets: the CPU one PULL_MESSAGE of up to
32 messages costs from its decoded frame to its encoded answer.

The broker of ``sendpath.py`` (a real :class:`BrokerController` and store on a fake clock) is
filled with batch sends, then answers the pulls ``loadclient.py``'s consumer sends: each
queue read from offset 0 on, 32 messages a pull, every answer FOUND. ``--python`` runs the
store's unit loop in Python (:func:`~rmqproto.store.transfer.python_transfer_units`) instead
of its C twin, to compare the two.

    python benchmarks/pullpath.py [--messages 100000] [--body-size 128] [--python]
    python benchmarks/pullpath.py --instructions     # instructions a pull, under callgrind
"""

import argparse
import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import OtherLoad, exit_on_sigterm  # noqa: E402
from loadclient import PULL_BATCH, PULL_SYS_FLAG  # noqa: E402
from sendpath import (QUEUES, TOPIC, _frame, check, count_instructions,  # noqa: E402
                      request_frames, run, temporary_broker)
from rmqproto.codec import headers as h  # noqa: E402
from rmqproto.codec.codes import RequestCode, ResponseCode  # noqa: E402
from rmqproto.codec.frame import decode_frame  # noqa: E402
from rmqproto.store import defaultstore, transfer  # noqa: E402

SEND_BATCH = 32


def pull_frames(messages):
    """The pulls that read the first ``messages`` once (the batches of 32 the sends spread
    over the queues in turn)."""
    frames = []
    per_queue = messages // SEND_BATCH // QUEUES * SEND_BATCH
    for queue_id in range(QUEUES):
        for offset in range(0, per_queue, PULL_BATCH):
            header = h.PullMessageRequestHeader(
                consumer_group="bench_consumer", topic=TOPIC, queue_id=queue_id,
                queue_offset=offset, max_msg_nums=PULL_BATCH, sys_flag=PULL_SYS_FLAG,
                commit_offset=0, suspend_timeout_millis=15_000, subscription="*",
                sub_version=0, expression_type="TAG")
            frames.append(_frame(RequestCode.PULL_MESSAGE, header.to_ext_fields()))
    return frames


def check_pulls(frames, answers):
    found = [a for a in answers if decode_frame(a[4:]).code == ResponseCode.SUCCESS]
    if len(found) != len(frames):
        raise RuntimeError("%d of %d pulls found nothing or went unanswered"
                           % (len(frames) - len(found), len(frames)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=100_000, help="messages to pull")
    parser.add_argument("--body-size", type=int, default=128)
    parser.add_argument("--python", action="store_true",
                        help="the store's unit loop in Python, not C")
    parser.add_argument("--instructions", action="store_true",
                        help="count the instructions a pull executes, under callgrind")
    parser.add_argument("--counted", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    pulls = len(pull_frames(args.messages))
    if args.instructions:
        print("%d pulls of %d × %d B: %s instructions a pull" % (
            pulls, PULL_BATCH, args.body_size,
            "{:,.0f}".format(count_instructions(argv, pulls, __file__))))
        return
    exit_on_sigterm()
    if args.python:
        defaultstore.transfer_units = transfer.python_transfer_units
    with temporary_broker("pullpath-") as controller:
        sends = request_frames(args.messages // SEND_BATCH, args.body_size, SEND_BATCH)
        check(sends, run(sends, controller)[1])
        runner = partial(run, counted=args.counted)
        frames = pull_frames(args.messages)
        check_pulls(frames, run(frames, controller)[1])  # warm-up
        with OtherLoad() as other:
            seconds, answers = runner(frames, controller)
        check_pulls(frames, answers)
        per_pull_us = seconds / len(frames) * 1e6
        print("%d pulls of %d × %d B: %.1f µs of CPU a pull (%.2f µs a message), %s messages/s "
              "on one core; other load %.2f cores" % (
                  len(frames), PULL_BATCH, args.body_size, per_pull_us, per_pull_us / PULL_BATCH,
                  "{:,.0f}".format(len(frames) * PULL_BATCH / seconds), other.cores))


if __name__ == "__main__":
    main()
