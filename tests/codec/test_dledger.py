"""DLedger 0.3.1.2 store formats against DLedgerEntryCoder, MmapFileList and IOUtils."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqproto.codec import dledger
from rmqproto.codec.dledger import DLedgerEntry
from rmqproto.codec.storefile import file_name_to_offset, offset_to_file_name
from rmqproto.errors import BadMagicError, CodecError
from support.interop import load_vectors
from support.replication import (
    fuzz_inputs, only_codec_errors, strip_none, vector_bytes, vector_cases)

INT32 = st.integers(-2 ** 31, 2 ** 31 - 1)
INT64 = st.integers(-2 ** 63, 2 ** 63 - 1)
KINDS = ["dledger_entry", "dledger_index", "dledger_blank", "dledger_file_name",
         "dledger_checkpoint", "dledger_currterm"]


def entry_fields(entry):
    """The Java bean view of an entry (``DLedgerEntry`` getters)."""
    return {"body": entry.body.hex(), "bodyCrc": entry.body_crc, "chainCrc": entry.chain_crc,
            "channel": entry.channel, "index": entry.index, "magic": entry.magic,
            "pos": entry.pos, "size": entry.size, "term": entry.term}


def entry_from_fields(fields):
    return DLedgerEntry(index=fields["index"], term=fields["term"],
                        body=bytes.fromhex(fields["body"]), pos=fields["pos"],
                        magic=fields["magic"], channel=fields["channel"],
                        chain_crc=fields["chainCrc"], body_crc=fields["bodyCrc"])


def decode_fields(kind, data):
    """Our decoding of ``data`` as ``kind``, in the Java field names."""
    if kind == "dledger_entry":
        entry = dledger.decode_entry(data)
        if dledger.BODY_OFFSET + len(entry.body) != len(data):
            raise CodecError("trailing bytes")
        return entry_fields(entry)
    if kind == "dledger_index":
        if len(data) != dledger.INDEX_UNIT_SIZE:
            raise CodecError("wrong length")
        return dledger.decode_index(data)._asdict()
    if kind == "dledger_blank":
        length = dledger.decode_blank(data)
        if length != len(data) or any(data[8:]):
            raise CodecError("blank does not fill the data")
        return {"magic": -1, "length": length}
    if kind == "dledger_file_name":
        try:
            return {"offset": file_name_to_offset(bytes(data).decode("ascii"))}
        except UnicodeDecodeError as exc:
            raise CodecError(str(exc)) from None
    if kind == "dledger_checkpoint":
        end, committed = dledger.decode_checkpoint(data)
        return {"endIndex": end, "committedIndex": committed}
    term, vote = dledger.decode_currterm(data)
    return {"currTerm": term, "voteLeader": vote}


def encode_fields(kind, f):
    """Our encoding of the Java field values ``f`` as ``kind``."""
    if kind == "dledger_entry":
        return dledger.encode_entry(entry_from_fields(f))
    if kind == "dledger_index":
        return dledger.encode_index(f["pos"], f["size"], f["magic"], f["index"], f["term"])
    if kind == "dledger_blank":
        return dledger.encode_blank(f["length"])
    if kind == "dledger_file_name":
        return offset_to_file_name(f["offset"]).encode()
    if kind == "dledger_checkpoint":
        return dledger.encode_checkpoint(f["endIndex"], f["committedIndex"])
    return dledger.encode_currterm(f["currTerm"], f.get("voteLeader"))


# ---------------------------------------------------------------- 1. checked-in vectors

@pytest.mark.parametrize("kind", KINDS)
def test_vectors_decode_and_reencode(kind):
    for vector, data in vector_cases(kind):
        assert strip_none(decode_fields(kind, data)) == vector["fields"], vector["name"]
        assert encode_fields(kind, vector["fields"]) == data, vector["name"]


def test_entry_vectors_through_declaration():
    for vector in load_vectors("dledger_entry"):
        data = bytes.fromhex(vector["hex"])
        entry = dledger.parse_entry_declared(data)
        assert entry == dledger.decode_entry(data)
        assert dledger.build_entry_declared(entry) == data


def test_constants_match_java():
    assert (dledger.POS_OFFSET, dledger.HEADER_SIZE, dledger.BODY_OFFSET) == (24, 44, 48)
    assert dledger.ENTRY_HEADER.size == dledger.BODY_OFFSET
    assert dledger.INDEX_UNIT.size == dledger.INDEX_UNIT_SIZE == 32
    assert dledger.INDEX_FILE_SIZE == 167772160


def test_java8_checkpoint_order_reads_the_same():
    text = dledger.encode_checkpoint(9, 4, keys=dledger.CHECKPOINT_KEYS_JAVA8)
    assert text == b"endIndex=9\ncommittedIndex=4\n"
    assert dledger.decode_checkpoint(text) == (9, 4)


def test_property_files_read_like_java():
    assert dledger.decode_checkpoint(b"# c\ncommittedIndex =  7  \nendIndex:3\n") == (3, 7)
    assert dledger.decode_checkpoint(b"endIndex=3\ncommittedIndex=\n") == (3, None)
    assert dledger.decode_currterm(b"") == (0, None)
    assert dledger.decode_currterm(b"currTerm=4\nvoteLeader=\n") == (4, None)
    with pytest.raises(CodecError):
        dledger.decode_currterm(b"currTerm=4x\n")


def test_store_paths():
    paths = dledger.store_paths("/data/rmq", "n1")
    assert paths["data"] == "/data/rmq/dledger-n1/data"
    assert paths["index"] == "/data/rmq/dledger-n1/index"
    assert paths["checkpoint"] == "/data/rmq/dledger-n1/checkpoint"
    assert dledger.store_paths("/r", "n0", "/elsewhere")["data"] == "/elsewhere"


# ---------------------------------------------------------------- 2. Java regenerates the same

@pytest.mark.java
@pytest.mark.parametrize("kind", KINDS)
def test_fresh_vectors_match_checked_in(fresh_vectors, kind):
    assert fresh_vectors(kind) == load_vectors(kind)


# ---------------------------------------------------------------- 3. Java decodes what we encode

def _entry(index, term, pos, body, **extra):
    entry = DLedgerEntry(index=index, term=term, pos=pos, body=body, **extra)
    entry.compute_size()
    return entry_fields(entry)


OURS = {
    "dledger_entry": [_entry(0, 1, 0, b"x"), _entry(5, 2, 4096, bytes(range(256)) * 3),
                      _entry(2 ** 40, 9, 2 ** 50, b"", channel=3, chain_crc=-2, body_crc=77)],
    "dledger_index": [{"magic": 1, "pos": 123, "size": 60, "index": 4, "term": 2},
                      {"magic": 1, "pos": -1, "size": -1, "index": -1, "term": -1}],
    "dledger_blank": [{"magic": -1, "length": 8}, {"magic": -1, "length": 100}],
    "dledger_file_name": [{"offset": 0}, {"offset": 3 * 2 ** 30}, {"offset": 2 ** 63 - 1}],
    "dledger_checkpoint": [{"endIndex": 10, "committedIndex": 8},
                           {"endIndex": -1, "committedIndex": -1}],
    "dledger_currterm": [{"currTerm": 3, "voteLeader": "n2"}, {"currTerm": 0, "voteLeader": None}],
}


@pytest.mark.java
def test_java_decodes_our_encodings(java_interop):
    for kind, cases in OURS.items():
        answers = java_interop.decode(kind, [encode_fields(kind, f) for f in cases])
        assert [a.get("fields") for a in answers] == [strip_none(f) for f in cases], kind


# ---------------------------------------------------------------- 4. properties

entries = st.builds(DLedgerEntry, index=INT64, term=INT64, body=st.binary(max_size=64),
                    pos=INT64, magic=st.just(dledger.MAGIC_1), channel=INT32, chain_crc=INT32,
                    body_crc=INT32)


@settings(max_examples=80, deadline=None)
@given(entries)
def test_entry_round_trip_and_fast_equals_declared(entry):
    data = dledger.encode_entry(entry)
    assert data == dledger.build_entry_declared(entry)
    decoded = dledger.decode_entry(data)
    assert decoded == entry == dledger.parse_entry_declared(data)
    assert dledger.encode_entry(decoded) == data


@settings(max_examples=80, deadline=None)
@given(INT32, INT64, INT32, INT64, INT64)
def test_index_round_trip_and_fast_equals_declared(magic, pos, size, index, term):
    data = dledger.encode_index(pos, size, magic, index, term)
    unit = dledger.decode_index(data)
    assert data == dledger.INDEX_UNIT.build(unit)
    assert unit == dledger.INDEX_UNIT.parse(data)
    assert dledger.encode_index(unit.pos, unit.size, unit.magic, unit.index, unit.term) == data


@settings(max_examples=50, deadline=None)
@given(st.integers(8, 4096))
def test_blank_round_trip(length):
    data = dledger.encode_blank(length)
    assert len(data) == length and dledger.is_blank(data)
    assert dledger.decode_blank(data) == length
    assert dledger.BLANK.build(dledger.BLANK.parse(data)) == data[:8]


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2 ** 63 - 1), INT64, INT64,
       st.one_of(st.none(), st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7e,
                                                  blacklist_characters="\\"), min_size=1)))
def test_files_round_trip(offset, end, committed, leader):
    assert file_name_to_offset(offset_to_file_name(offset)) == offset
    assert dledger.decode_checkpoint(dledger.encode_checkpoint(end, committed)) == (end, committed)
    term = end & (2 ** 63 - 1)
    assert dledger.decode_currterm(dledger.encode_currterm(term, leader)) == (term, leader)


def test_blank_magic_is_not_an_entry():
    with pytest.raises(BadMagicError):
        dledger.decode_entry(dledger.encode_blank(64))


# ---------------------------------------------------------------- 5. fuzz

VALID = vector_bytes(KINDS)


@settings(max_examples=150, deadline=None)
@given(fuzz_inputs(VALID))
def test_decoders_raise_only_codec_errors(data):
    for kind in KINDS:
        only_codec_errors(lambda d: decode_fields(kind, d), data)
    only_codec_errors(dledger.parse_entry_declared, data)
