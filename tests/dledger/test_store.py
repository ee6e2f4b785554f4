"""DLedger's file store against DLedgerMmapFileStore's rules, and directories shared with Java's."""

import json
import os
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqproto.codec import dledger as codec
from rmqproto.codec.dledger_rpc import DLedgerResponseCode as Code
from rmqproto.dledger.log import ILedger, LedgerError
from rmqproto.dledger.store import DLedgerStore, StoreSettings, TermFile
from support.interop import JAVA_FLAGS

DATA_SIZE = 1024   # small segments: blanks and segment changes come often
INDEX_SIZE = 32 * 8


def open_store(base, self_id="n0", data_size=DATA_SIZE, index_size=INDEX_SIZE):
    return DLedgerStore(StoreSettings(str(base), self_id, mapped_file_size_for_entry_data=data_size,
                                      mapped_file_size_for_entry_index=index_size)).open()


def bodies(count, seed=0):
    return [bytes([(seed + i) % 251]) * (10 + (i * 37 + seed) % 200) for i in range(count)]


def entries_of(store):
    return [store.get(i) for i in range(max(store.begin_index, 0), store.end_index + 1)]


def test_appends_fill_segments_and_close_them_with_a_blank(tmp_path):
    store = open_store(tmp_path)
    written = [store.append_as_leader(body, term=1) for body in bodies(30)]
    assert [e.index for e in written] == list(range(30))
    for entry in written:
        start = entry.pos % DATA_SIZE
        assert start + entry.size + codec.MIN_BLANK_LEN <= DATA_SIZE  # room for a blank after it
    assert len(store.data.files) > 3
    for mapped in store.data.files[:-1]:  # every full segment ends with a blank
        tail = store.data.files.index(mapped)
        last = max((e for e in written if e.pos // DATA_SIZE == tail), key=lambda e: e.pos)
        blank_at = last.pos % DATA_SIZE + last.size
        assert codec.decode_blank(mapped.mm, blank_at) == DATA_SIZE - blank_at
    assert [e.body for e in entries_of(store)] == bodies(30)
    store.close()


def test_reopen_recovers_the_log_and_the_committed_index(tmp_path):
    store = open_store(tmp_path)
    for body in bodies(25):
        store.append_as_leader(body, term=2)
    store.update_committed_index(20)
    committed_pos = store.committed_pos
    store.close()
    again = open_store(tmp_path)
    assert (again.begin_index, again.end_index, again.end_term) == (0, 24, 2)
    assert (again.committed_index, again.committed_pos) == (20, committed_pos)
    assert [e.body for e in entries_of(again)] == bodies(25)
    assert again.append_as_leader(b"next", term=3).index == 25
    again.close()


def test_a_torn_last_entry_is_cut_and_never_served(tmp_path):
    store = open_store(tmp_path)
    written = [store.append_as_leader(body, term=1) for body in bodies(12)]
    last = written[-1]
    mapped = store.data.files[-1]
    cut = last.pos % DATA_SIZE + codec.BODY_OFFSET + 3
    store.close()
    with open(mapped.path, "r+b") as fh:  # kill -9 in the middle of the body
        fh.seek(cut)
        fh.write(bytes(DATA_SIZE - cut))
        fh.seek(last.pos % DATA_SIZE + 4)  # and its size no longer matches the body length
        fh.write((last.size + 1000).to_bytes(4, "big"))
    again = open_store(tmp_path)
    assert again.end_index == 10
    with pytest.raises(LedgerError) as raised:
        again.get(11)
    assert raised.value.code == Code.INDEX_OUT_OF_RANGE
    assert again.append_as_leader(b"after", term=1).pos == last.pos  # written over the torn one
    again.close()


def test_a_disagreeing_index_is_rebuilt_from_the_data(tmp_path):
    store = open_store(tmp_path)
    for body in bodies(20):
        store.append_as_leader(body, term=1)
    store.close()
    index_file = sorted(os.listdir(tmp_path / "dledger-n0" / "index"))[-1]
    with open(tmp_path / "dledger-n0" / "index" / index_file, "r+b") as fh:
        fh.write(b"\x07" * 64)  # garbage over the first units of the last index segment
    again = open_store(tmp_path)
    assert again.end_index == 19
    assert [e.body for e in entries_of(again)] == bodies(20)
    again.close()


def test_follower_appends_check_index_and_position(tmp_path):
    leader = open_store(tmp_path / "leader")
    follower = open_store(tmp_path / "follower", "n1")
    entries = [leader.append_as_leader(body, term=1) for body in bodies(15)]
    for entry in entries[:10]:
        follower.append_as_follower(entry)
    with pytest.raises(LedgerError) as raised:
        follower.append_as_follower(entries[11])
    assert raised.value.code == Code.INCONSISTENT_INDEX
    moved = codec.DLedgerEntry(index=10, term=1, body=entries[10].body, pos=entries[10].pos + 8)
    with pytest.raises(LedgerError) as raised:
        follower.append_as_follower(moved)
    assert raised.value.code == Code.DISK_ERROR
    for entry in entries[10:]:
        follower.append_as_follower(entry)
    follower.close()
    leader.close()
    for name in ("data", "index"):
        assert _files(tmp_path / "leader" / "dledger-n0" / name) == \
            _files(tmp_path / "follower" / "dledger-n1" / name)


def test_entries_just_appended_are_served_as_the_files_hold_them(tmp_path):
    store = open_store(tmp_path)
    store.append_hooks.append(lambda pos, body: body[:-1] + b"!")  # what is stored differs
    written = [store.append_as_leader(body, term=1) for body in bodies(12)]
    for entry in written:
        on_disk = codec.decode_entry(store.read(*store.entry_pos_and_size(entry.index)))
        assert store.get(entry.index) == on_disk and on_disk.body.endswith(b"!")
    store.truncate(written[5])
    assert store.end_index == 5
    with pytest.raises(LedgerError):
        store.get(6)
    replaced = store.append_as_leader(b"another", term=2)
    assert store.get(6) == replaced and store.get(6).body == b"anothe!"
    store.close()


def test_truncate_replaces_a_diverged_tail(tmp_path):
    leader = open_store(tmp_path / "leader")
    follower = open_store(tmp_path / "follower", "n1")
    common = [leader.append_as_leader(body, term=1) for body in bodies(8)]
    for entry in common:
        follower.append_as_follower(entry)
    for body in bodies(9, seed=100):  # the old leader's entries no quorum has
        follower.append_as_leader(body, term=2)
    follower.update_committed_index(follower.end_index)  # even a wrong commit is cut back
    newer = [leader.append_as_leader(body, term=3) for body in bodies(5, seed=7)]
    assert follower.truncate(newer[0]) == 8
    assert follower.end_index == follower.committed_index == 8
    for entry in newer[1:]:
        follower.append_as_follower(entry)
    assert entries_of(follower) == entries_of(leader)
    assert follower.truncate(newer[-1]) == newer[-1].index  # the same entry: nothing to rewrite
    follower.close()
    leader.close()
    again = open_store(tmp_path / "follower", "n1")
    assert [e.term for e in entries_of(again)] == [1] * 8 + [3] * 5
    again.close()


def test_a_far_behind_follower_starts_again_at_the_leaders_entry(tmp_path):
    leader = open_store(tmp_path / "leader")
    for body in bodies(40):
        leader.append_as_leader(body, term=1)
    follower = open_store(tmp_path / "follower", "n1")
    follower.append_as_follower(leader.get(0))
    follower.truncate(leader.get(30))
    assert (follower.begin_index, follower.end_index) == (30, 30)
    for index in range(31, 40):
        follower.append_as_follower(leader.get(index))
    assert [e.body for e in entries_of(follower)] == bodies(40)[30:]
    follower.close()
    leader.close()
    again = open_store(tmp_path / "follower", "n1")  # its first segment starts with zeros
    assert (again.begin_index, again.end_index) == (30, 39)
    assert [e.body for e in entries_of(again)] == bodies(40)[30:]
    again.close()


def test_reads_outside_the_log_say_why(tmp_path):
    store = open_store(tmp_path)
    for body in bodies(3):
        store.append_as_leader(body, term=1)
    for index, code in ((-1, Code.INDEX_OUT_OF_RANGE), (3, Code.INDEX_OUT_OF_RANGE)):
        with pytest.raises(LedgerError) as raised:
            store.get(index)
        assert raised.value.code == code
    with pytest.raises(LedgerError) as raised:
        store.append_as_leader(bytes(DATA_SIZE), term=1)
    assert raised.value.code == Code.DISK_ERROR
    assert store.end_index == 2
    store.close()


def test_the_committed_index_only_moves_forward_within_the_log(tmp_path):
    store = open_store(tmp_path)
    assert store.update_committed_index(5) == -1  # an empty log commits nothing
    for body in bodies(6):
        store.append_as_leader(body, term=1)
    assert store.update_committed_index(9) == 5
    assert store.update_committed_index(3) == 5
    pos, size = store.entry_pos_and_size(5)
    assert store.committed_pos == pos + size
    store.close()


def test_retention_deletes_old_committed_segments_and_moves_the_begin_index(tmp_path):
    store = open_store(tmp_path)
    for body in bodies(40):
        store.append_as_leader(body, term=1)
    segments = len(store.data.files)
    store.update_committed_index(20)
    now = max(m.last_modified_ms for m in store.data.files) + 10_000
    assert store.delete_expired_files(now, reserved_ms=60_000) == 0
    deleted = store.delete_expired_files(now, reserved_ms=1000)
    assert 0 < deleted < segments - 1  # only segments whose entries are all committed
    assert store.begin_index > 0
    begin = store.begin_index
    with pytest.raises(LedgerError) as raised:
        store.get(begin - 1)
    assert raised.value.code == Code.INDEX_LESS_THAN_LOCAL_BEGIN
    assert store.get(begin).index == begin
    store.close()
    again = open_store(tmp_path)
    assert (again.begin_index, again.end_index) == (begin, 39)
    again.close()


def test_term_file_round_trip(tmp_path):
    terms = TermFile(str(tmp_path / "currterm"))
    assert terms.load() == (0, None)
    terms.save(7, "n2")
    terms.save(8, None)
    assert terms.load() == (8, None)
    assert codec.decode_currterm((tmp_path / "currterm.bak").read_bytes()) == (7, "n2")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["append", "truncate", "reopen", "commit"]),
                          st.integers(0, 300), st.integers(0, 50)), max_size=40))
def test_random_operations_keep_the_store_equal_to_a_list(tmp_path_factory, operations):
    base = tmp_path_factory.mktemp("random")
    store = open_store(base)
    model, term = [], 1
    for action, size, where in operations:
        if action == "append":
            term += size % 3 == 0
            model.append(store.append_as_leader(bytes([size % 256]) * size, term))
        elif action == "truncate" and model:
            keep = model[where % len(model)]
            store.truncate(codec.DLedgerEntry(index=keep.index, term=keep.term, body=keep.body,
                                              pos=keep.pos))
            del model[keep.index + 1:]
        elif action == "commit":
            store.update_committed_index(where)
        else:
            store.close()
            store = open_store(base)
        assert store.end_index == len(model) - 1
        assert store.committed_index <= store.end_index
    assert [(e.index, e.term, e.body) for e in entries_of(store)] == \
        [(e.index, e.term, e.body) for e in model]
    store.close()


def _files(directory):
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))}


# ---------------------------------------------------------------- Java's DLedgerMmapFileStore

def _java_store(java_interop, mode, base, self_id, request=None):
    out = subprocess.run(
        ["java", *JAVA_FLAGS, "-cp", java_interop.classpath, "rmqproto.interop.DLedgerStoreServe",
         mode, str(base), self_id, str(DATA_SIZE), str(INDEX_SIZE)],
        input=json.dumps(request or {}).encode(), capture_output=True, check=False, timeout=120)
    assert out.returncode == 0, out.stderr.decode(errors="replace")[-3000:]
    return json.loads(out.stdout.decode().strip().splitlines()[-1])


def _ours(store):
    return {"begin": store.begin_index, "end": store.end_index,
            "endTerm": store.end_term, "committed": store.committed_index,
            "committedPos": store.committed_pos, "writePos": store.end_pos,
            "entries": [{"index": e.index, "term": e.term, "pos": e.pos, "size": e.size,
                         "body": e.body.hex()} for e in entries_of(store)]}


LOG = [(1 + i // 15, body) for i, body in enumerate(bodies(45, seed=3))]


@pytest.mark.java
def test_java_and_we_write_byte_identical_directories(java_interop, tmp_path):
    java = _java_store(java_interop, "write", tmp_path / "java", "n0", {
        "entries": [{"term": term, "body": body.hex()} for term, body in LOG], "committed": 40})
    store = open_store(tmp_path / "ours")
    for term, body in LOG:
        store.append_as_leader(body, term)
    store.update_committed_index(40)
    assert _ours(store) == java
    store.close()
    for name in ("data", "index"):
        assert _files(tmp_path / "ours" / "dledger-n0" / name) == \
            _files(tmp_path / "java" / "dledger-n0" / name)
    assert codec.decode_checkpoint((tmp_path / "ours" / "dledger-n0" / "checkpoint").read_bytes()) \
        == codec.decode_checkpoint((tmp_path / "java" / "dledger-n0" / "checkpoint").read_bytes())


@pytest.mark.java
def test_each_side_recovers_what_the_other_wrote(java_interop, tmp_path):
    java = _java_store(java_interop, "write", tmp_path / "java", "n0", {
        "entries": [{"term": term, "body": body.hex()} for term, body in LOG], "committed": 30})
    ours = open_store(tmp_path / "java")
    assert _ours(ours) == java
    ours.append_as_leader(b"written by us", term=4)  # and we go on where Java stopped
    ours.update_committed_index(45)
    expected = _ours(ours)
    ours.close()
    assert _java_store(java_interop, "read", tmp_path / "java", "n0") == expected


def test_the_store_is_a_ledger_the_raft_core_can_drive(tmp_path):
    from zope.interface.verify import verifyObject
    store = open_store(tmp_path)
    assert verifyObject(ILedger, store)
    for body in bodies(5):
        store.append_as_leader(body, term=1)
    store.committed_index = 3  # as the core sets it
    pos, size = store.entry_pos_and_size(3)
    assert store.committed_pos == pos + size
    store.close()
    assert open_store(tmp_path).committed_index == 3


def test_a_group_on_file_stores_survives_a_leader_restart_with_identical_files(tmp_path):
    """The Raft core over three file stores: a leader that crashes, is reopened from its files
    and rejoins; afterwards every node's data and index files are the same bytes."""
    from support.raftsim import Network

    ids = ("n0", "n1", "n2")
    net = Network(ids, seed=5, ledgers={m: open_store(tmp_path, m) for m in ids})
    assert net.run_until(lambda: net.leader() is not None, 20000)
    first = net.leader()
    tokens = [net.propose(first, body) for body in bodies(30)]
    assert net.run_until(lambda: all(t in net.results for t in tokens), 5000)
    net.crash(first)
    net.ledgers[first].close()
    net.ledgers[first] = open_store(tmp_path, first)  # what kill -9 and a restart read back
    assert net.run_until(lambda: net.leader() not in (None, first), 20000)
    net.restart(first)
    assert net.run_until(lambda: net.leader() is not None, 20000)
    second = net.leader()
    tokens = [net.propose(second, body) for body in bodies(20, seed=9)]
    assert net.run_until(lambda: all(t in net.results for t in tokens), 5000)
    end = net.nodes[second].ledger.end_index
    assert net.run_until(lambda: all(n.ledger.end_index == n.committed_index == end
                                     for n in net.nodes.values()), 5000)
    assert net.logs_agree()
    for member in ids:
        net.ledgers[member].close()
    for name in ("data", "index"):
        files = [_files(tmp_path / ("dledger-" + m) / name) for m in ids]
        assert files[0] == files[1] == files[2]


def test_a_full_disk_refuses_appends_with_disk_full(tmp_path):
    store = open_store(tmp_path)
    store.append_as_leader(b"one", term=1)
    store.disk_full = True
    for append in (lambda: store.append_as_leader(b"two", term=1),
                   lambda: store.append_as_follower(codec.DLedgerEntry(index=1, term=1, body=b"x",
                                                                       pos=store.end_pos))):
        with pytest.raises(LedgerError) as raised:
            append()
        assert raised.value.code == Code.DISK_FULL
    store.disk_full = False
    assert store.append_as_leader(b"two", term=1).index == 1
    store.close()
