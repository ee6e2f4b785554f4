"""Classic and auto-switch HA stream headers against the Java layouts (``HAConnection``, RMQ5 ``AutoSwitchHAConnection``)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqproto.codec import ha
from rmqproto.errors import CodecError
from support.interop import load_vectors
from support.replication import (
    fuzz_inputs, only_codec_errors, snake, strip_none, vector_bytes, vector_cases)

INT16 = st.integers(-2 ** 15, 2 ** 15 - 1)
INT32 = st.integers(-2 ** 31, 2 ** 31 - 1)
INT64 = st.integers(-2 ** 63, 2 ** 63 - 1)
STATE = st.sampled_from(list(ha.HAConnectionState)).map(int)

#: Fixed-layout kinds: vector kind → layout.
LAYOUTS = {
    "ha_slave_report": ha.SLAVE_REPORT,
    "ha_autoswitch_slave_handshake": ha.AUTO_SWITCH_SLAVE_HANDSHAKE,
    "ha_autoswitch_slave_report": ha.AUTO_SWITCH_SLAVE_REPORT,
}
KINDS = list(LAYOUTS) + ["ha_transfer", "ha_autoswitch_master_handshake",
                         "ha_autoswitch_master_transfer"]


# ---------------------------------------------------------------- field views

def transfer_fields(data):
    offset, body = ha.decode_transfer(data)
    return {"offset": offset, "bodySize": len(body), "body": body.hex()}


def handshake_fields(data):
    header, epochs = ha.decode_master_handshake(data)
    return {"state": header.state, "bodySize": header.body_size, "maxOffset": header.max_offset,
            "lastEpoch": header.last_epoch,
            "epochs": [{"epoch": e.epoch, "startOffset": e.start_offset} for e in epochs]}


def auto_transfer_fields(data):
    header = ha.AUTO_SWITCH_MASTER_TRANSFER.unpack(data)
    body = bytes(data[ha.AUTO_SWITCH_MASTER_TRANSFER.size:])
    if len(body) != header.body_size:
        raise ha.BadTransferHeaderError("body size mismatch")
    fields = {_camel(k): v for k, v in header._asdict().items()}
    fields["body"] = body.hex()
    return fields


def _camel(name):
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def decode_fields(kind, data):
    """Our decoding of ``data`` as ``kind``, in the Java field names."""
    if kind in LAYOUTS:
        if len(data) != LAYOUTS[kind].size:
            raise CodecError("wrong length")
        return {_camel(k): v for k, v in LAYOUTS[kind].unpack(data)._asdict().items()}
    return {"ha_transfer": transfer_fields, "ha_autoswitch_master_handshake": handshake_fields,
            "ha_autoswitch_master_transfer": auto_transfer_fields}[kind](data)


def encode_fields(kind, fields):
    """Our encoding of the Java field values ``fields`` as ``kind``."""
    if kind in LAYOUTS:
        return LAYOUTS[kind].pack(**{snake(k): v for k, v in fields.items()})
    if kind == "ha_transfer":
        return ha.encode_transfer(fields["offset"], bytes.fromhex(fields["body"]))
    if kind == "ha_autoswitch_master_handshake":
        return ha.encode_master_handshake(
            fields["state"], fields["maxOffset"], fields["lastEpoch"],
            [(e["epoch"], e["startOffset"]) for e in fields["epochs"]])
    body = bytes.fromhex(fields["body"])
    return ha.AUTO_SWITCH_MASTER_TRANSFER.pack(
        fields["state"], len(body), fields["offset"], fields["epoch"],
        fields["epochStartOffset"], fields["confirmOffset"]) + body


# ---------------------------------------------------------------- 1. checked-in vectors

@pytest.mark.parametrize("kind", KINDS)
def test_vectors_decode_and_reencode(kind):
    for vector, data in vector_cases(kind):
        assert decode_fields(kind, data) == vector["fields"], vector["name"]
        assert encode_fields(kind, vector["fields"]) == data, vector["name"]


@pytest.mark.parametrize("kind", list(LAYOUTS))
def test_vectors_through_declarations(kind):
    layout = LAYOUTS[kind]
    for vector in load_vectors(kind):
        data = bytes.fromhex(vector["hex"])
        record = layout.parse(data)
        assert layout.build(record) == data
        assert record == layout.unpack(data)


def test_transfer_header_constant_sizes():
    assert ha.TRANSFER_HEADER.size == 12
    assert ha.AUTO_SWITCH_SLAVE_HANDSHAKE.size == 16
    assert ha.AUTO_SWITCH_MASTER_HANDSHAKE.size == 20
    assert ha.AUTO_SWITCH_MASTER_TRANSFER.size == 36


# ---------------------------------------------------------------- 2. Java regenerates the same

@pytest.mark.java
@pytest.mark.parametrize("kind", KINDS)
def test_fresh_vectors_match_checked_in(fresh_vectors, kind):
    assert fresh_vectors(kind) == load_vectors(kind)


# ---------------------------------------------------------------- 3. Java decodes what we encode

OURS = {
    "ha_slave_report": [{"maxOffset": v} for v in (0, 7, 2 ** 40 + 3, -1, 2 ** 63 - 1)],
    "ha_transfer": [{"offset": 0, "bodySize": 0, "body": ""},
                    {"offset": 2 ** 33, "bodySize": 3, "body": "00ff10"},
                    {"offset": 123, "bodySize": 300, "body": bytes(range(256)).hex() + "ab" * 44}],
    "ha_autoswitch_slave_handshake": [
        {"state": 1, "isSyncFromLastFile": 1, "isAsyncLearner": 0, "brokerId": 9},
        {"state": 1, "isSyncFromLastFile": -1, "isAsyncLearner": 2 ** 15 - 1, "brokerId": -5}],
    "ha_autoswitch_slave_report": [{"state": 2, "maxOffset": 5 * 2 ** 30},
                                   {"state": 3, "maxOffset": -1}],
    "ha_autoswitch_master_handshake": [
        {"state": 1, "bodySize": 24, "maxOffset": 99, "lastEpoch": 2,
         "epochs": [{"epoch": 1, "startOffset": 0}, {"epoch": 2, "startOffset": 50}]}],
    "ha_autoswitch_master_transfer": [
        {"state": 2, "bodySize": 2, "offset": 1024, "epoch": 4, "epochStartOffset": 512,
         "confirmOffset": 1000, "body": "beef"}],
}


@pytest.mark.java
def test_java_decodes_our_encodings(java_interop):
    for kind, cases in OURS.items():
        answers = java_interop.decode(kind, [encode_fields(kind, f) for f in cases])
        assert [a.get("fields") for a in answers] == [strip_none(f) for f in cases], kind


# ---------------------------------------------------------------- 4. properties

@settings(max_examples=60, deadline=None)
@given(st.data())
def test_fast_paths_equal_declarations(data):
    layouts = [ha.SLAVE_REPORT, ha.TRANSFER_HEADER, ha.AUTO_SWITCH_SLAVE_HANDSHAKE,
               ha.AUTO_SWITCH_SLAVE_REPORT, ha.AUTO_SWITCH_MASTER_HANDSHAKE,
               ha.AUTO_SWITCH_EPOCH_ENTRY, ha.AUTO_SWITCH_MASTER_TRANSFER]
    widths = {"h": INT16, "i": INT32, "q": INT64}
    for layout in layouts:
        codes = layout.format[1:]
        values = [data.draw(widths[c]) for c in codes]
        record = layout.record(*values)
        packed = layout.pack(*values)
        assert packed == layout.build(record)
        assert layout.unpack(packed) == record == layout.parse(packed)
        assert layout.pack(*layout.unpack(packed)) == packed


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2 ** 62), st.binary(max_size=40)), max_size=6),
       st.lists(st.integers(1, 30), min_size=1, max_size=10))
def test_transfer_reader_any_chunking(transfers, cuts):
    stream = b"".join(ha.encode_transfer(offset, body) for offset, body in transfers)
    reader = ha.TransferReader()
    pieces = []
    position = 0
    for cut in cuts * (len(stream) // max(sum(cuts), 1) + 1):
        pieces += reader.feed(stream[position:position + cut])
        position += cut
        if position >= len(stream):
            break
    pieces += reader.feed(stream[position:])
    assert not reader.in_body
    rebuilt = []
    for piece in pieces:
        if rebuilt and not rebuilt[-1][2]:
            assert piece.offset == rebuilt[-1][0] + len(rebuilt[-1][1])
            rebuilt[-1] = (rebuilt[-1][0], rebuilt[-1][1] + piece.data, piece.complete)
        else:
            rebuilt.append((piece.offset, piece.data, piece.complete))
    assert [(o, b) for o, b, _ in rebuilt] == transfers
    assert all(done for _, _, done in rebuilt)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2 ** 63 - 1), min_size=1, max_size=8),
       st.lists(st.integers(1, 13), min_size=1, max_size=8))
def test_slave_report_reader_keeps_newest(offsets, cuts):
    stream = b"".join(ha.encode_slave_report(o) for o in offsets)
    reader = ha.SlaveReportReader()
    position = 0
    seen = []
    while position < len(stream):
        for cut in cuts:
            latest = reader.feed(stream[position:position + cut])
            position += cut
            if latest is not None:
                seen.append(latest)
    assert reader.latest == offsets[-1]
    assert set(seen) <= set(offsets)


def test_slave_report_reader_waits_for_complete_group():
    reader = ha.SlaveReportReader()
    report = ha.encode_slave_report(4096)
    assert reader.feed(report[:5]) is None and reader.latest is None
    assert reader.feed(report[5:] + ha.encode_slave_report(8192)[:3]) == 4096
    assert reader.feed(ha.encode_slave_report(8192)[3:]) == 8192


def test_heartbeat_is_one_empty_complete_piece():
    assert ha.TransferReader().feed(ha.encode_transfer(77)) == [ha.TransferPiece(77, b"", True)]


# ---------------------------------------------------------------- 5. fuzz

VALID = vector_bytes(KINDS)


@settings(max_examples=150, deadline=None)
@given(fuzz_inputs(VALID))
def test_decoders_raise_only_codec_errors(data):
    for kind in KINDS:
        only_codec_errors(lambda d: decode_fields(kind, d), data)
    only_codec_errors(ha.decode_slave_report, data)
    only_codec_errors(ha.TransferReader().feed, data)
    only_codec_errors(ha.SlaveReportReader().feed, data)


def test_negative_body_size_rejected():
    header = ha.TRANSFER_HEADER.pack(0, -1)
    with pytest.raises(ha.BadTransferHeaderError):
        ha.TransferReader().feed(header)
    with pytest.raises(ha.BadTransferHeaderError):
        ha.decode_transfer(header)


def test_out_of_range_values_raise_codec_error():
    with pytest.raises(CodecError):
        ha.encode_slave_report(2 ** 63)
