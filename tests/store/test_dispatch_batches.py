"""Batched dispatch: a run of consume-queue units written at once and a reput
in slices leave exactly the bytes that unit-by-unit, all-at-once dispatch leaves."""

import os

from hypothesis import given, settings, strategies as st

from rmqproto.store.consumequeue import ConsumeQueue
from store_support import SMALL, StoreFactory, record

FILE_SIZE = 5 * 20  # five units per file: runs cross files


def _state(cq, root):
    files = {}
    for directory, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(directory, name), "rb") as f:
                files[name] = f.read()
    return (files, cq.max_physic_offset, cq.min_logic_offset, cq.queue.flushed_where,
            [(f.file_from_offset, f.wrote_position) for f in cq.queue.files])


# units that mostly continue the queue, sometimes skip ahead, repeat or go back
_steps = st.lists(st.tuples(st.sampled_from([1, 1, 1, 1, 0, 2, -1]), st.integers(1, 300),
                            st.sampled_from([1, 1, 1, 0, -3]), st.integers(-5, 5)),
                  min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 12), _steps, st.integers(1, 8))
def test_put_positions_equals_put_position_one_by_one(tmp_path_factory, first, steps, cut):
    units, cq_offset, offset = [], first, 1000
    for cq_step, size, offset_step, tags in steps:
        units.append((offset, size, tags, cq_offset))
        cq_offset = max(cq_offset + cq_step, 0)
        offset = max(offset + offset_step * size, 0)
    root = tmp_path_factory.mktemp("cq")
    one = ConsumeQueue("T", 0, str(root / "one"), FILE_SIZE)
    many = ConsumeQueue("T", 0, str(root / "many"), FILE_SIZE)
    for unit in units:
        one.put_position(*unit)
    for start in range(0, len(units), cut):
        many.put_positions(units[start:start + cut])
    assert _state(one, root / "one") == _state(many, root / "many")
    one.close()
    many.close()


def _fill(store, count):
    for i in range(count):
        store.put_message(record("TopicA", i % 3, bytes(200 + i % 90), TAGS="T%d" % (i % 4),
                                 KEYS="k%d o%d" % (i % 5, i), UNIQ_KEY="U%08d" % i))
        store.reactor.advance(0.001)


def _files(root):
    out = {}
    for directory, _, names in os.walk(root):
        for name in names:
            if name not in ("lock", "abort", "checkpoint") and "index" not in directory:
                with open(os.path.join(directory, name), "rb") as f:
                    out[os.path.relpath(os.path.join(directory, name), root)] = f.read()
    return out


def _index_entries(store):
    return [bytes(f.mm) for f in store.index_service.files]


def test_reput_in_slices_writes_what_one_reput_writes(tmp_path):
    master = StoreFactory(tmp_path / "master").open()
    _fill(master, 400)
    slaves = []
    for name, max_bytes in (("whole", None), ("slices", 3000), ("tiny", 1)):
        factory = StoreFactory(tmp_path / name)
        slave = factory.open(brokerRole="SLAVE")
        offset = 0
        while offset < master.get_max_phy_offset():
            data = master.get_commit_log_data(offset, 20000)
            assert slave.commit_log.append_data(offset, data)
            offset += len(data)
        while not slave.reput.do_reput(max_bytes):
            pass
        assert slave.dispatch_behind_bytes() == 0
        slaves.append((factory, slave))
    whole = _files(slaves[0][1].paths["root"])
    assert any("consumequeue" in name for name in whole)
    for factory, slave in slaves[1:]:
        assert _files(slave.paths["root"]) == whole
        assert _index_entries(slave) == _index_entries(slaves[0][1])
    for factory, _ in slaves:
        factory.close_all()
    assert SMALL["mappedFileSizeCommitLog"] < master.get_max_phy_offset()  # segments rolled
