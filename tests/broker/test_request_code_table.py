"""docs/broker.md's "Request codes" table against the code: one row for every 4.9.7 request
code and every RocketMQ 5 code we serve, and the rows marked served by the broker or the
NameServer are exactly the codes their dispatchers register.
"""

import re
from pathlib import Path

from brokerkit import make_controller
from rmqproto.codec.codes import RequestCode, RequestCodeV5
from rmqproto.namesrv.kvconfig import KVConfig
from rmqproto.namesrv.processor import NameServerProcessor
from rmqproto.namesrv.routeinfo import RouteInfoManager
from rmqproto.remoting import RequestDispatcher

DOC = Path(__file__).resolve().parents[2] / "docs" / "broker.md"
ROW = re.compile(r"^\| (\d+) \| (\w+) \| (broker|NameServer|client|no) \| (.*) \|$")


def table():
    """``{code: (name, served by, notes)}`` from the doc's table."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Request codes\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if re.match(r"^\| \d", line)]
    rows = {}
    for line in lines:
        match = ROW.match(line)
        assert match, "malformed row: %s" % line
        code = int(match.group(1))
        assert code not in rows, "two rows for %d" % code
        rows[code] = match.group(2, 3, 4)
    return rows


def served_by(rows, where):
    return {code for code, (_, by, _) in rows.items() if by == where}


def test_every_code_has_one_row_with_its_name():
    rows = table()
    codes = {int(m): m.name for m in list(RequestCode) + list(RequestCodeV5)}
    assert {code: row[0] for code, row in rows.items()} == codes


def test_codes_not_served_say_why():
    rows = table()
    assert [code for code, (_, by, notes) in rows.items()
            if by in ("no", "client") and not notes.strip()] == []


def test_broker_rows_are_the_codes_a_broker_controller_registers(tmp_path):
    registered = make_controller(tmp_path).dispatcher.codes()
    marked = served_by(table(), "broker")
    assert registered - marked == set(), "served, but not marked 'broker' in docs/broker.md"
    assert marked - registered == set(), "marked 'broker', but not served"


def test_nameserver_rows_are_the_codes_the_nameserver_registers():
    dispatcher = RequestDispatcher()
    NameServerProcessor(RouteInfoManager(), KVConfig(), {}, None, None).register_with(dispatcher)
    assert served_by(table(), "NameServer") == dispatcher.codes()
