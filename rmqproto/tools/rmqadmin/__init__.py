"""``rmqadmin``: a command line for RocketMQ operators, on the Python client (docs/client.md).

    rmqadmin clusterList -n 127.0.0.1:9876
    rmqadmin topicStatus -n 127.0.0.1:9876 -t MyTopic --json

Commands and flags are ``mqadmin``'s where it has them (``-n``, ``-t``, ``-b``, ``-c``, ``-g``,
``-k``, ``-i``, ``-o``, ``-s`` …); the NameServers come from ``-n`` or ``NAMESRV_ADDR``.
Answers are readable tables, or JSON with ``--json``. Exit status: 0 on success, 1 when a
server cannot be reached or refuses (one line on stderr), 2 on bad arguments.
"""

import argparse
import os
import sys

from rmqproto.client.errors import BrokerError, ClientError
from rmqproto.tools.rmqadmin.commands import COMMANDS
from rmqproto.tools.rmqadmin.output import render
from rmqproto.tools.rmqadmin.session import AdminSession

__all__ = ["main", "build_parser"]


def build_parser():
    """The argument parser: one sub-command each of :data:`COMMANDS`."""
    parser = argparse.ArgumentParser(
        prog="rmqadmin", description="RocketMQ's mqadmin commands for operators, on the Python "
        "client: tables, or JSON with --json (docs/client.md).")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_, help_text, arguments) in COMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("-n", "--namesrvAddr", default=os.environ.get("NAMESRV_ADDR"),
                         help="NameServer addresses, host:port;host:port (default: $NAMESRV_ADDR)")
        sub.add_argument("--json", action="store_true", help="print JSON instead of a table")
        for flags, settings in arguments:
            sub.add_argument(*flags, **settings)
    return parser


def _check(parser, args):
    """What argparse cannot say: a NameServer is needed, ``-b`` or ``-c`` where one is."""
    if not args.namesrvAddr:
        parser.error("no NameServer: give -n host:port or set NAMESRV_ADDR")
    if "brokerAddr" in vars(args) and "clusterName" in vars(args):
        if bool(args.brokerAddr) == bool(args.clusterName):
            parser.error("%s needs exactly one of -b (a broker's address) and -c (a cluster)"
                         % args.command)


def main(argv=None, out=None):
    """Run one command; its exit status (see the module docstring)."""
    out = out or sys.stdout
    parser = build_parser()
    args = parser.parse_args(argv)
    _check(parser, args)
    function = COMMANDS[args.command][0]
    try:
        with AdminSession(namesrvAddr=args.namesrvAddr) as session:
            answer = function(session, args)
    except ClientError as exc:
        if isinstance(exc, BrokerError) and exc.broker_address is None:  # a NameServer's answer
            exc = "CODE: %d DESC: %s" % (exc.code, exc.remark)
        print("rmqadmin %s: %s" % (args.command, exc), file=sys.stderr)
        return 1
    print(render(answer, args.json), file=out)
    return 0
