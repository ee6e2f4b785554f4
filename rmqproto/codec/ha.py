"""Classic master/slave HA stream and the 5.x auto-switch HA headers (``HAConnection``; RMQ5 ``AutoSwitchHAConnection``).

The classic stream is plain TCP, not remoting:

* slave → master: 8-byte reports, each the slave's max CommitLog offset
  (:data:`SLAVE_REPORT`); the master acts on the newest complete one;
* master → slave: ``[int64 offset][int32 body size][body]`` repeated
  (:data:`TRANSFER_HEADER`); a size of 0 is a heartbeat.

:class:`SlaveReportReader` (master side) and :class:`TransferReader` (slave side) are
incremental parsers for any chunking; they do no I/O and suit a Twisted
``dataReceived``. The auto-switch (controller mode) headers are declared here for reuse.
"""

import enum
from collections import namedtuple

from rmqproto.codec.fixed_layout import INT16, INT32, INT64, FixedLayout
from rmqproto.errors import CodecError

__all__ = [
    "SLAVE_REPORT", "TRANSFER_HEADER", "encode_slave_report", "decode_slave_report",
    "encode_transfer", "decode_transfer", "TransferPiece", "BadTransferHeaderError",
    "SlaveReportReader", "TransferReader",
    "HAConnectionState", "AUTO_SWITCH_SLAVE_HANDSHAKE", "AUTO_SWITCH_SLAVE_REPORT",
    "AUTO_SWITCH_MASTER_HANDSHAKE", "AUTO_SWITCH_EPOCH_ENTRY", "AUTO_SWITCH_MASTER_TRANSFER",
    "encode_master_handshake", "decode_master_handshake",
]


class BadTransferHeaderError(CodecError):
    """An HA header announces a body size that cannot be valid (negative, or not whole entries)."""


# ---------------------------------------------------------------- classic stream (HAConnection)

#: Slave → master: the slave's max CommitLog offset.
SLAVE_REPORT = FixedLayout("SlaveReport", ("max_offset", INT64))
_REPORT = SLAVE_REPORT.struct

#: Master → slave: the CommitLog offset of the first body byte and the body size.
TRANSFER_HEADER = FixedLayout("TransferHeader", ("offset", INT64), ("body_size", INT32))
_HEADER = TRANSFER_HEADER.struct
_HEADER_SIZE = _HEADER.size


def encode_slave_report(max_offset):
    """The 8 bytes a slave sends to report ``max_offset``."""
    return SLAVE_REPORT.pack(max_offset)


def decode_slave_report(data):
    """The offset carried by exactly one 8-byte report."""
    _require_length(data, SLAVE_REPORT.size, "slave report")
    return SLAVE_REPORT.unpack(data).max_offset


def encode_transfer(offset, body=b""):
    """One master → slave transfer: header then ``body`` (empty for a heartbeat)."""
    return TRANSFER_HEADER.pack(offset, len(body)) + bytes(body)


def decode_transfer(data):
    """``(offset, body)`` from exactly one complete transfer (header and body)."""
    header = TRANSFER_HEADER.unpack(data)
    _check_body_size(header.body_size)
    _require_length(data, TRANSFER_HEADER.size + header.body_size, "transfer")
    return header.offset, bytes(data[TRANSFER_HEADER.size:])


def _require_length(data, expected, what):
    if len(data) != expected:
        raise CodecError("%s must be %d bytes, got %d" % (what, expected, len(data)))


def _check_body_size(body_size):
    if body_size < 0:
        raise BadTransferHeaderError("negative HA body size %d" % body_size)


class SlaveReportReader:
    """Master side: keeps the newest complete 8-byte report from arbitrarily chunked input.

    Like ``HAConnection.ReadSocketService`` it acts only on the last complete 8-byte
    group; a partial group waits for the rest.
    """

    def __init__(self):
        self._partial = b""
        self.latest = None  #: the newest complete report, or None before the first

    def feed(self, data):
        """Consume ``data``; the newest offset completed by it, or None."""
        if self._partial:
            data = self._partial + bytes(data)
        size = _REPORT.size
        whole = len(data) - len(data) % size
        self._partial = bytes(data[whole:])
        if not whole:
            return None
        (self.latest,) = _REPORT.unpack_from(data, whole - size)
        return self.latest


#: A run of CommitLog bytes received by the slave: ``data`` belongs at ``offset``;
#: ``complete`` is true when it ends the transfer its header announced. A heartbeat
#: is one piece with empty ``data`` and ``complete`` true.
TransferPiece = namedtuple("TransferPiece", "offset data complete")


class TransferReader:
    """Slave side: turns the master's stream into :class:`TransferPiece` values as data arrives.

    Headers and bodies may be split anywhere; a body is handed out in pieces as soon as
    its bytes arrive, each piece carrying the CommitLog offset of its first byte.
    """

    def __init__(self):
        self._header = b""
        self._offset = 0
        self._remaining = None  # body bytes still expected, None while reading a header

    @property
    def in_body(self):
        """True between a header and the end of its body."""
        return self._remaining is not None

    def pending(self):
        """Where the stream stands: ``(header, offset, remaining)``, the bytes of a header
        read so far and, inside a body, the offset of its next byte and how many are to
        come (``remaining`` 0 outside a body)."""
        return self._header, self._offset, self._remaining or 0

    def feed(self, data):
        """Consume ``data``; the list of pieces it completes or advances."""
        data = bytes(data)  # the pieces are slices of it (no copy when it is bytes already)
        pieces = []
        position, end = 0, len(data)
        while position < end:
            remaining = self._remaining
            if remaining is None:
                if self._header or end - position < _HEADER_SIZE:
                    take = min(_HEADER_SIZE - len(self._header), end - position)
                    self._header += data[position:position + take]
                    position += take
                    if len(self._header) < _HEADER_SIZE:
                        break
                    offset, body_size = _HEADER.unpack(self._header)
                    self._header = b""
                else:
                    offset, body_size = _HEADER.unpack_from(data, position)
                    position += _HEADER_SIZE
                _check_body_size(body_size)
                if body_size:
                    self._offset, self._remaining = offset, body_size
                else:
                    pieces.append(TransferPiece(offset, b"", True))
                continue
            take = min(remaining, end - position)
            pieces.append(TransferPiece(self._offset, data[position:position + take],
                                        take == remaining))
            position += take
            self._offset += take
            self._remaining = remaining - take or None
        return pieces


# ---------------------------------------------------------------- auto-switch (RMQ5)

class HAConnectionState(enum.IntEnum):
    """RMQ5 ``HAConnectionState``; headers carry the ordinal."""

    READY = 0
    HANDSHAKE = 1
    TRANSFER = 2
    SUSPEND = 3
    SHUTDOWN = 4


#: Slave → master handshake (``AutoSwitchHAClient.sendHandshakeHeader``), 16 bytes.
AUTO_SWITCH_SLAVE_HANDSHAKE = FixedLayout(
    "SlaveHandshake", ("state", INT32), ("is_sync_from_last_file", INT16),
    ("is_async_learner", INT16), ("broker_id", INT64))

#: Slave → master offset report in TRANSFER state, 12 bytes.
AUTO_SWITCH_SLAVE_REPORT = FixedLayout("AutoSwitchSlaveReport", ("state", INT32),
                                       ("max_offset", INT64))

#: Master → slave handshake header, 20 bytes, followed by ``body_size`` bytes of epoch entries.
AUTO_SWITCH_MASTER_HANDSHAKE = FixedLayout(
    "MasterHandshake", ("state", INT32), ("body_size", INT32), ("max_offset", INT64),
    ("last_epoch", INT32))

#: One epoch entry of the master handshake body, 12 bytes.
AUTO_SWITCH_EPOCH_ENTRY = FixedLayout("EpochEntry", ("epoch", INT32), ("start_offset", INT64))

#: Master → slave transfer header, 36 bytes, followed by ``body_size`` bytes of CommitLog.
AUTO_SWITCH_MASTER_TRANSFER = FixedLayout(
    "MasterTransfer", ("state", INT32), ("body_size", INT32), ("offset", INT64),
    ("epoch", INT32), ("epoch_start_offset", INT64), ("confirm_offset", INT64))


def encode_master_handshake(state, max_offset, last_epoch, epochs):
    """The master's handshake: 20-byte header then ``epochs`` (``EpochEntry`` values or pairs)."""
    body = b"".join(AUTO_SWITCH_EPOCH_ENTRY.pack(*entry) for entry in epochs)
    return AUTO_SWITCH_MASTER_HANDSHAKE.pack(state, len(body), max_offset, last_epoch) + body


def decode_master_handshake(data):
    """``(header, [EpochEntry, ...])`` from exactly one complete master handshake."""
    header = AUTO_SWITCH_MASTER_HANDSHAKE.unpack(data)
    size = header.body_size
    if size < 0 or size % AUTO_SWITCH_EPOCH_ENTRY.size:
        raise BadTransferHeaderError("handshake body size %d is not whole epoch entries" % size)
    start = AUTO_SWITCH_MASTER_HANDSHAKE.size
    _require_length(data, start + size, "master handshake")
    epochs = [AUTO_SWITCH_EPOCH_ENTRY.unpack(data, pos)
              for pos in range(start, start + size, AUTO_SWITCH_EPOCH_ENTRY.size)]
    return header, epochs
