"""DLedger 0.3.1.2 RPC bodies against fastjson's JSON.toJSONBytes / JSON.parseObject."""

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqproto.codec import dledger_rpc as rpc
from rmqproto.codec import fastjson
from rmqproto.codec.dledger import DLedgerEntry
from support.interop import load_vectors
from support.replication import (
    fuzz_inputs, only_codec_errors, strip_none, vector_bytes, vector_cases)

CLASSES = {
    "vote_request": rpc.VoteRequest, "vote_response": rpc.VoteResponse,
    "heartbeat_request": rpc.HeartBeatRequest, "heartbeat_response": rpc.HeartBeatResponse,
    "push_request": rpc.PushEntryRequest, "push_response": rpc.PushEntryResponse,
    "append_request": rpc.AppendEntryRequest,
    "batch_append_request": rpc.BatchAppendEntryRequest,
    "append_response": rpc.AppendEntryResponse, "get_request": rpc.GetEntriesRequest,
    "get_response": rpc.GetEntriesResponse, "metadata_request": rpc.MetadataRequest,
    "metadata_response": rpc.MetadataResponse, "pull_request": rpc.PullEntriesRequest,
    "pull_response": rpc.PullEntriesResponse,
    "leadership_transfer_request": rpc.LeadershipTransferRequest,
    "leadership_transfer_response": rpc.LeadershipTransferResponse,
}
KINDS = {"dledger_rpc_" + name: cls for name, cls in CLASSES.items()}


# ---------------------------------------------------------------- 1. checked-in vectors

@pytest.mark.parametrize("kind", KINDS)
def test_vectors_decode_and_reencode(kind):
    for vector, data in vector_cases(kind):
        message = KINDS[kind].from_json(data)
        assert strip_none(message.to_fields()) == vector["fields"], vector["name"]
        assert message.to_json() == data, vector["name"]


def test_codes_and_enums_match_reference():
    assert rpc.DLedgerRequestCode.PUSH == 51004 and rpc.DLedgerRequestCode.METADATA == 50000
    assert rpc.DLedgerResponseCode.PUSH_REQUEST_IS_FULL == 421
    assert rpc.DLedgerResponseCode.of(999) is rpc.DLedgerResponseCode.UNKNOWN
    assert [r.name for r in rpc.VoteResult][-1] == "REJECT_TAKING_LEADERSHIP"
    assert [r.value for r in rpc.VoteResult] == list(range(12))
    assert [p.name for p in rpc.ParseResult] == [
        "WAIT_TO_REVOTE", "REVOTE_IMMEDIATELY", "PASSED", "WAIT_TO_VOTE_NEXT"]
    assert set(rpc.RPC_TYPES) == set(rpc.DLedgerRequestCode) - {rpc.DLedgerRequestCode.UNKNOWN}


def test_push_request_derived_getters():
    entries = [DLedgerEntry(index=i, term=1, body=b"ab") for i in (4, 5)]
    for entry in entries:
        entry.compute_size()
    batch = rpc.PushEntryRequest(batch_entry=entries)
    doc = json.loads(batch.to_json())
    assert (doc["batch"], doc["count"], doc["firstEntryIndex"], doc["lastEntryIndex"],
            doc["totalSize"]) == (True, 2, 4, 5, 100)
    single = json.loads(rpc.PushEntryRequest(entry=entries[0]).to_json())
    assert (single["batch"], single["count"], single["totalSize"]) == (False, 1, 0)


def test_decoding_follows_fastjson_leniency():
    vote = rpc.VoteResponse.from_json(b'{"voteResult":1,"unknownKey":[1,{}],"term":3}')
    assert vote.vote_result is rpc.VoteResult.ACCEPT and vote.code == 200 and vote.term == 3
    append = rpc.AppendEntryRequest.from_json(b'{"body":[1,2,-1]}')
    assert append.body == b"\x01\x02\xff"
    push = rpc.PushEntryRequest.from_json(b'{"totalSize":77,"count":9,"batchEntry":null}')
    assert push.batch_entry == [] and push.total_size == 0


# ---------------------------------------------------------------- 2. Java regenerates the same

@pytest.mark.java
@pytest.mark.parametrize("kind", KINDS)
def test_fresh_vectors_match_checked_in(fresh_vectors, kind):
    assert fresh_vectors(kind) == load_vectors(kind)


# ---------------------------------------------------------------- 3. Java decodes what we encode

def _filled(cls, rnd):
    """A message with every field set to a varied value (deterministic for a given ``rnd``)."""
    def entry():
        e = DLedgerEntry(index=rnd.randrange(2 ** 40), term=rnd.randrange(100),
                         body=rnd.randbytes(rnd.randrange(20)), pos=rnd.randrange(2 ** 40),
                         magic=1, channel=rnd.randrange(-5, 5), body_crc=rnd.randrange(2 ** 31))
        e.compute_size()
        return e

    values = {"group": "grp-\u00e9\"\\", "remote_id": "n%d" % rnd.randrange(10),
              "local_id": "n\u2028", "leader_id": "n0", "term": rnd.randrange(-1, 2 ** 62),
              "code": rnd.choice(list(rpc.DLedgerResponseCode)).value}
    extra = {
        "ledger_end_index": rnd.randrange(2 ** 62), "ledger_end_term": rnd.randrange(99),
        "vote_result": rnd.choice(list(rpc.VoteResult)),
        "commit_index": rnd.randrange(2 ** 50), "type": rnd.choice(list(rpc.PushEntryType)),
        "entry": entry(), "batch_entry": [entry() for _ in range(3)],
        "index": rnd.randrange(2 ** 50), "begin_index": rnd.randrange(2 ** 50),
        "end_index": rnd.randrange(2 ** 50), "count": rnd.randrange(2 ** 31),
        "body": rnd.randbytes(37), "batch_msgs": [rnd.randbytes(n) for n in (0, 1, 2, 3, 64)],
        "pos": rnd.randrange(2 ** 50), "max_size": rnd.randrange(2 ** 31),
        "index_list": [rnd.randrange(2 ** 63) for _ in range(4)], "entries": [entry()],
        "peers": {"n%d" % i: "10.1.%d.1:4091%d" % (i, i) for i in range(20)},
        "node_id": "n7", "transfer_id": "n0", "transferee_id": "n2",
        "take_leadership_ledger_index": rnd.randrange(2 ** 40),
    }
    attrs = {f.attr for f in cls.FIELDS}
    values.update({k: v for k, v in extra.items() if k in attrs})
    return cls(**values)


@pytest.mark.java
@pytest.mark.parametrize("kind", KINDS)
def test_java_decodes_our_encodings(java_interop, kind):
    cls = KINDS[kind]
    rnd = random.Random(kind)
    messages = [cls(), _filled(cls, rnd), _filled(cls, rnd)]
    messages += [cls.from_json(bytes.fromhex(v["hex"])) for v in load_vectors(kind)]
    answers = java_interop.decode(kind, [m.to_json() for m in messages])
    for message, answer in zip(messages, answers):
        expected = strip_none(message.to_fields())
        for key in cls.EXTENSIONS:  # ours alone: Java's class ignores them
            expected.pop(key, None)
        if cls is rpc.PushEntryRequest:
            expected["totalSize"] = 0  # Java has no setter: a decoded request says 0
        assert answer.get("fields") == expected, (message, answer)


# ---------------------------------------------------------------- 4. properties

INT32 = st.integers(-2 ** 31, 2 ** 31 - 1)
INT64 = st.integers(-2 ** 63, 2 ** 63 - 1)
TEXT = st.text(max_size=12)

json_entries = st.builds(DLedgerEntry, index=INT64, term=INT64,
                         body=st.one_of(st.none(), st.binary(max_size=24)), pos=INT64,
                         magic=INT32, size=INT32, channel=INT32, chain_crc=INT32,
                         body_crc=INT32)


def _strategy(kind, nullable=True):
    """A strategy for one field kind of :mod:`rmqproto.codec.dledger_rpc`; ``nullable=False``
    never draws ``None`` (generated without filtering, which Hypothesis would reject as slow)."""
    maybe = (lambda values: st.one_of(st.none(), values)) if nullable else (lambda values: values)
    if isinstance(kind, rpc._Integer):
        ints = st.integers(kind.low, kind.high)
        return maybe(ints) if kind.nullable else ints
    if isinstance(kind, rpc._String):
        return maybe(TEXT)
    if isinstance(kind, rpc._Enum):
        return st.sampled_from(list(kind.enum_type))
    if isinstance(kind, rpc._Bytes):
        return maybe(st.binary(max_size=24))
    if isinstance(kind, rpc._EntryKind):
        return maybe(json_entries)
    if isinstance(kind, rpc._StringMap):
        return maybe(st.dictionaries(TEXT, TEXT, max_size=14))
    if isinstance(kind, rpc._List):
        items = st.lists(_strategy(kind.item, nullable=False), max_size=4)
        return maybe(items) if kind.nullable else items
    raise AssertionError(kind)


def _field_strategy(field):
    # null is left out of the JSON, so it reads back as the Java default: draw no null there
    return _strategy(field.kind, nullable=field.default is None)


def messages(cls):
    return st.fixed_dictionaries({f.attr: _field_strategy(f) for f in cls.FIELDS}).map(
        lambda values: cls(**values))


@settings(max_examples=25, deadline=None)
@pytest.mark.parametrize("cls", list(CLASSES.values()), ids=list(CLASSES))
@given(data=st.data())
def test_round_trip(cls, data):
    message = data.draw(messages(cls))
    encoded = message.to_json()
    decoded = cls.from_json(encoded)
    assert decoded == message
    assert decoded.to_json() == encoded
    json.loads(encoded)  # standard JSON whenever map keys are strings


@settings(max_examples=25, deadline=None)
@pytest.mark.parametrize("cls", list(CLASSES.values()), ids=list(CLASSES))
@given(data=st.data())
def test_the_orjson_path_writes_fastjsons_bytes(cls, data):
    """``to_json`` (orjson when it agrees) against the declared writer, fastjson's, for any
    field values, text with every escape included."""
    message = data.draw(messages(cls))
    view = rpc._bean_view(cls.FIELDS, message, "to_json")
    view.update(message.derived())
    assert message.to_json() == fastjson.dumps(fastjson.bean(**view))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=0x2100), max_size=8) | st.sampled_from(
    ["\x00", "\x1f", "\x7f", "\x80", "\x9f", "\u2028", "\u2029", "\"\\/\b\f\n\r\t"]))
def test_orjson_is_used_only_where_it_agrees_with_fastjson(text):
    bean = {"group": text, "peers": {text: text}, "list": [text, 1, True]}
    assert rpc.dumps(bean) == fastjson.dumps(bean)


# ---------------------------------------------------------------- 5. fuzz

VALID = vector_bytes(KINDS)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.floats(), TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(
                                ["term", "code", "entry", "batchEntry", "body", "peers",
                                 "voteResult", "type", "index", "entries", "batchMsgs",
                                 "indexList", "group", "magic", "size"]), inner, max_size=4)),
    max_leaves=8)


@settings(max_examples=100, deadline=None)
@given(fuzz_inputs(VALID))
def test_decoders_raise_only_codec_errors(data):
    for cls in CLASSES.values():
        only_codec_errors(cls.from_json, data)


@settings(max_examples=100, deadline=None)
@given(json_values)
def test_wrongly_typed_json_raises_only_codec_errors(value):
    data = json.dumps(value).encode()
    for cls in CLASSES.values():
        only_codec_errors(cls.from_json, data)
