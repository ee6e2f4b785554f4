"""``twistd -n rmq-dledger`` groups as separate processes: a leader is elected, appends made
over DLedger's RPC are replicated, a killed leader is replaced, and every member's data and
index files end the same bytes up to the committed entry."""

import pytest

from support.dledgergroup import Group

SMALL = dict(mappedFileSizeForEntryData=64 * 1024, mappedFileSizeForEntryIndex=32 * 1024,
             heartBeatTimeIntervalMs=300, maxHeartBeatLeak=3, checkPointInterval=200)


@pytest.fixture
def group(tmp_path):
    group = Group(tmp_path, **SMALL)
    group.start_all()
    yield group
    group.stop()


def same_files_up_to(group, members, kind, end):
    """Every member's concatenated ``kind`` files agree on their first ``end`` bytes."""
    contents = []
    for member in members:
        files = group.files(member, kind)
        contents.append(b"".join(files[name] for name in sorted(files))[:end])
    return all(c == contents[0] for c in contents)


def test_a_group_elects_replicates_and_survives_its_leader(group):
    first = group.wait_leader()
    indexes = [group.append_ok(b"before %d" % i) for i in range(40)]
    assert indexes == list(range(40))
    group.kill(first)
    survivors = [m for m in group.ids if m != first]
    second = group.wait_leader(survivors)
    assert second != first
    indexes += [group.append_ok(b"after %d" % i) for i in range(40)]
    assert indexes == list(range(80))
    group.start(first)  # the old leader comes back as a follower and catches up
    group.wait_leader()
    last = group.append_ok(b"last")
    group.stop()  # a clean stop writes every checkpoint
    committed = [group.committed(member) for member in group.ids]
    assert min(committed) >= last - 1
    end = 32 * (min(committed) + 1)
    assert same_files_up_to(group, group.ids, "index", end)
    assert same_files_up_to(group, group.ids, "data", 64 * 1024 * (len(group.files(first, "data")) - 1))
