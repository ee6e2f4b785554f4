"""``benchmarks/slave_bench.py``: the prepared log is cut into one transfer per record, and
the scripted master keeps the asked number of records in flight and counts acks by the
slave's reports; against a slave thread in this process (no timing is asserted)."""

import socket
import struct
import sys
import threading
from pathlib import Path

import pytest

from rmqproto.codec.ha import TransferReader, encode_slave_report
from rmqproto.codec.message import iter_records

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import slave_bench  # noqa: E402


def test_one_record_transfers_cover_the_log_record_by_record():
    log = slave_bench.commit_log(20, body_size=64)
    ends, transfers = slave_bench.one_record_transfers(log)
    records = list(iter_records(log))
    assert len(ends) == len(transfers) == len(records) == 20
    assert ends[-1] == len(log)
    reader = TransferReader()
    pieces = [piece for transfer in transfers for piece in reader.feed(transfer)]
    assert all(piece.complete for piece in pieces)
    assert [piece.offset + len(piece.data) for piece in pieces] == ends
    assert b"".join(piece.data for piece in pieces) == log


class _Slave(threading.Thread):
    """Reports 0, then after each read the end of what it holds."""

    def __init__(self, address):
        super().__init__(daemon=True)
        host, port = address.split(":")
        self.sock = socket.create_connection((host, int(port)))
        self.held = 0

    def run(self):
        reader = TransferReader()
        self.sock.sendall(encode_slave_report(0))
        with self.sock:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return
                for piece in reader.feed(data):
                    self.held = piece.offset + len(piece.data)
                self.sock.sendall(encode_slave_report(self.held))


def _transfers(count, size=100):
    ends = [size * (i + 1) for i in range(count)]
    chunks = [struct.pack(">qi", size * i, size) + bytes(size) for i in range(count)]
    return ends, chunks


def test_scripted_master_drives_until_every_record_is_acked():
    ends, chunks = _transfers(50)
    master = slave_bench.ScriptedMaster(ends, chunks)
    slave = _Slave(master.address)
    slave.start()
    try:
        master.accept(timeout=10)
        master.drive(4, 10)
        assert master.sent == master.acked == 10
        master.drive(1, 40)
        assert master.sent == master.acked == 50
        assert slave.held == ends[-1]
    finally:
        master.close()
        slave.join(10)


def test_scripted_master_refuses_more_records_than_prepared():
    ends, chunks = _transfers(3)
    master = slave_bench.ScriptedMaster(ends, chunks)
    try:
        with pytest.raises(RuntimeError, match="only 3 records"):
            master.drive(1, 4)
    finally:
        master.close()
