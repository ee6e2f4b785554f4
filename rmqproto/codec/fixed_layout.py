"""Fixed-size big-endian records declared once, with a construct spec and a ``struct`` fast path.

Several replication formats (the HA headers of ``HAConnection``, the DLedger entry
header and index unit of ``DLedgerEntryCoder``) are flat runs of Java ``int``/``long``/``short`` values
written with ``ByteBuffer``. :class:`FixedLayout` declares such a record from one field
list: :attr:`FixedLayout.declaration` is the construct ``Struct`` (the specification) and
:meth:`~FixedLayout.pack` / :meth:`~FixedLayout.unpack` are the ``struct`` fast paths
the tests prove equal to it.
"""

import struct
from collections import namedtuple

import construct as cs

from rmqproto.codec.construct_util import build_or_raise, parse_or_raise
from rmqproto.errors import CodecError, TruncatedError

__all__ = ["FixedLayout", "INT16", "INT32", "INT64"]

#: Java ``short``, ``int`` and ``long`` as (construct type, ``struct`` code) pairs.
INT16 = (cs.Int16sb, "h")
INT32 = (cs.Int32sb, "i")
INT64 = (cs.Int64sb, "q")


class FixedLayout:
    """A record of fixed-width big-endian integers.

    ``FixedLayout("TransferHeader", ("offset", INT64), ("body_size", INT32))`` gives a
    namedtuple type :attr:`record`, the construct :attr:`declaration`, and :attr:`size`.
    """

    def __init__(self, name, *fields):
        names = [field_name for field_name, _ in fields]
        self.record = namedtuple(name, names)
        self.declaration = cs.Struct(*(field_name / kind[0] for field_name, kind in fields))
        #: the ``struct.Struct``: its ``unpack_from`` gives the bare values, for hot paths
        #: where a namedtuple per record costs too much
        self.struct = struct.Struct(">" + "".join(kind[1] for _, kind in fields))
        self.size = self.struct.size
        self.format = self.struct.format  #: the ``struct`` format, e.g. ``">qi"``

    def pack(self, *values, **fields):
        """The record's bytes (fast path); out-of-range values raise ``CodecError``."""
        if fields:
            values = self.record(*values, **fields)
        try:
            return self.struct.pack(*values)
        except struct.error as exc:
            raise CodecError("%s: %s" % (self.record.__name__, exc)) from None

    def unpack(self, data, offset=0):
        """The record at ``data[offset:]`` (fast path); short input raises ``TruncatedError``."""
        if len(data) - offset < self.size:
            raise TruncatedError("%s needs %d bytes, %d available" % (
                self.record.__name__, self.size, max(len(data) - offset, 0)))
        return self.record._make(self.struct.unpack_from(data, offset))

    def build(self, record):
        """The record's bytes through the construct declaration."""
        return build_or_raise(self.declaration, record._asdict())

    def parse(self, data):
        """The record at the start of ``data`` through the construct declaration."""
        parsed = parse_or_raise(self.declaration, data)
        return self.record(**{name: parsed[name] for name in self.record._fields})
