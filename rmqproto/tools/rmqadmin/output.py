"""What an ``rmqadmin`` command answers, printed as readable text or as JSON (``--json``).

A command returns a :class:`Table` (rows under named columns), a :class:`Record` (names
and values) or :class:`Sections` of either (one a broker, say). The JSON form holds the
same facts: a table is a list of objects keyed by its column names, a record an object,
sections an object of those. The text shows a ``…Timestamp`` (ms since the epoch) as local
time, ``yyyy-MM-dd HH:mm:ss,SSS`` as ``mqadmin`` does (``UtilAll.timeMillisToHumanString2``);
the JSON keeps the milliseconds.
"""

import datetime
import json


class Table:
    """Rows of values under ``columns`` (camelCase names, which are also the JSON keys)."""

    def __init__(self, columns, rows=()):
        self.columns = list(columns)
        self.rows = [list(row) for row in rows]

    def add(self, *row):
        self.rows.append(list(row))

    def to_json(self):
        return [dict(zip(self.columns, row)) for row in self.rows]

    def lines(self):
        cells = [self.columns] + [[_text(value, name) for name, value in zip(self.columns, row)]
                                  for row in self.rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.columns))]
        return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
                for row in cells]


class Record:
    """Named values in the order given, printed ``name  : value``."""

    def __init__(self, items=(), **named):
        self.items = dict(items, **named)

    def to_json(self):
        return dict(self.items)

    def lines(self):
        width = max((len(name) for name in self.items), default=0)
        return ["%s : %s" % (name.ljust(width), _text(value, name))
                for name, value in self.items.items()]


class Sections:
    """Named parts, each a :class:`Table` or :class:`Record`, printed under ``== name ==``."""

    def __init__(self, parts=(), **named):
        self.parts = dict(parts, **named)

    def to_json(self):
        return {name: part.to_json() for name, part in self.parts.items()}

    def lines(self):
        out = []
        for name, part in self.parts.items():
            if out:
                out.append("")
            out.append("== %s ==" % name)
            out.extend(part.lines())
        return out


def _text(value, name):
    if value is None:
        return "-"
    if name.endswith("Timestamp") and type(value) is int and value > 0:
        moment = datetime.datetime.fromtimestamp(value / 1000)
        return moment.strftime("%Y-%m-%d %H:%M:%S,") + "%03d" % (value % 1000)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "%.2f" % value
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def render(answer, as_json):
    """The text to print for ``answer``."""
    if as_json:
        return json.dumps(answer.to_json(), indent=2, sort_keys=False, default=str)
    return "\n".join(answer.lines())
