"""The reput of usual records in C (``dispatch_usual_records``) leaves
exactly the consume queues, index files and checkpoint times that the request-by-request
path leaves, whatever the records: topics, tags and keys in ASCII or not, the schedule
topic, transactions, IPv6 hosts, more queues than one C batch gathers, logical offsets that
repeat or skip, and reputs in slices."""

import os

import pytest
from hypothesis import given, settings, strategies as st

from rmqproto.codec import message as msg
from rmqproto.codec.message import MessageRecord
from rmqproto.store.dispatch import SCHEDULE_TOPIC
from store_support import STORE_HOST, StoreFactory
from support.speedups import require_speedups

speedups = require_speedups()

_TOPICS = ["TopicA", "TopicB", "Töpic", SCHEDULE_TOPIC]
_TRANSACTIONS = [msg.TRANSACTION_NOT_TYPE] * 4 + [
    msg.TRANSACTION_PREPARED_TYPE, msg.TRANSACTION_COMMIT_TYPE, msg.TRANSACTION_ROLLBACK_TYPE]
_records = st.lists(st.tuples(
    st.sampled_from([0, 0, 0, 1, 2, 3]),                     # topic
    st.one_of(st.integers(0, 3), st.integers(0, 79)),         # queue id
    st.sampled_from([1, 1, 1, 1, 0, 2]),                      # logical offset step
    st.sampled_from([None, "t1", "t2", "tä"]),                # TAGS
    st.sampled_from([None, "k1", "k1 k2", " k3  ", "kö"]),    # KEYS
    st.sampled_from([None, "U", "Ü"]),                        # UNIQ_KEY (numbered)
    st.sampled_from(_TRANSACTIONS),
    st.sampled_from([None, "1", "3", "x"]),                   # DELAY
    st.booleans()),                                           # an IPv6 born host
    max_size=120)


def _log(steps):
    """The commit-log bytes of records made from ``steps``, from offset 0."""
    data = bytearray()
    next_cq = {}
    for i, (topic_at, queue_id, cq_step, tags, keys, uniq, transaction, delay,
            v6) in enumerate(steps):
        topic = _TOPICS[topic_at]
        properties = {"TAGS": tags, "KEYS": keys, "DELAY": delay,
                      "UNIQ_KEY": None if uniq is None else "%s%d" % (uniq, i)}
        cq_offset = next_cq.get((topic, queue_id), 0)
        next_cq[topic, queue_id] = max(cq_offset + cq_step, 0)
        record = MessageRecord(
            topic, b"body %d" % i, {k: v for k, v in properties.items() if v is not None},
            queue_id=queue_id, queue_offset=cq_offset, commit_log_offset=len(data),
            sys_flag=transaction, born_timestamp=1700000000000,
            born_host=("::1", 50000) if v6 else ("10.1.2.3", 50000),
            store_timestamp=1700000000000 + 7 * i, store_host=STORE_HOST)
        data += msg.encode_record(record)
    return bytes(data)


def _state(store):
    files = {}
    root = store.paths["root"]
    for directory, _, names in os.walk(root):
        for name in names:
            if name not in ("lock", "abort", "checkpoint") and "commitlog" not in directory:
                with open(os.path.join(directory, name), "rb") as f:
                    files[os.path.relpath(os.path.join(directory, name), root)] = f.read()
    checkpoint = store.checkpoint
    return files, checkpoint.physic_msg_timestamp, checkpoint.logics_msg_timestamp


def _replicated(tmp_path_factory, log, in_c, max_bytes=None):
    factory = StoreFactory(tmp_path_factory.mktemp("c" if in_c else "python"))
    store = factory.open(brokerRole="SLAVE")
    if not in_c:
        store.reput.dispatch_usual = None
    assert store.commit_log.append_data(0, log)
    while not store.reput.do_reput(max_bytes):
        pass
    assert store.dispatch_behind_bytes() == 0
    return factory, store


@settings(max_examples=120, deadline=None)
@given(_records, st.sampled_from([None, None, 1, 700]))
def test_the_c_reput_writes_what_the_python_reput_writes(tmp_path_factory, steps, max_bytes):
    log = _log(steps)
    python_factory, python_store = _replicated(tmp_path_factory, log, False)
    c_factory, c_store = _replicated(tmp_path_factory, log, True, max_bytes)
    assert _state(c_store) == _state(python_store)
    python_factory.close_all()
    c_factory.close_all()


def test_the_usual_records_take_the_c_path(tmp_path_factory):
    steps = [(0, i % 3, 1, "t1", "k1 k2", "U", 0, None, False) for i in range(90)]
    factory, store = _replicated(tmp_path_factory, b"", True)
    taken = []

    def counted(buffer, position, stop_at):
        end = usual(buffer, position, stop_at)
        taken.append(end - position)
        return end

    usual, store.reput.dispatch_usual = store.reput.dispatch_usual, counted
    log = _log(steps)
    assert store.commit_log.append_data(0, log)
    assert store.reput.do_reput()
    assert sum(taken) == len(log)  # every record in C
    assert store.get_max_offset_in_queue("TopicA", 2) == 30
    assert len(store.query_message("TopicA", "k2", 100, 0, 1 << 62).messages) == 64
    factory.close_all()


def test_a_master_with_dispatch_listeners_hands_them_every_request(tmp_path_factory):
    factory = StoreFactory(tmp_path_factory.mktemp("master"))
    store = factory.open()
    seen = []
    store.dispatch_listeners.append(seen.extend)
    log = _log([(0, 1, 1, "t1", None, "U", 0, None, False) for _ in range(5)])
    assert store.commit_log.append_data(0, log)
    assert store.reput.do_reput()
    assert [request[6] for request in seen] == [0, 1, 2, 3, 4]
    factory.close_all()


@pytest.mark.parametrize("args, error", [
    ((b"", 0, 10, 10, "SCHEDULE", None, 12), TypeError),   # the topic as str
    ((b"", 0, 10, 10, b"S", None), TypeError),             # six arguments
    ((None, 0, 10, 10, b"S", None, 12), TypeError),        # no buffer
])
def test_dispatch_usual_records_refuses_wrong_arguments(args, error):
    with pytest.raises(error):
        speedups.dispatch_usual_records(*args)


def test_dispatch_usual_records_passes_on_what_the_callback_raises():
    log = _log([(0, 0, 1, None, "k1", None, 0, None, False)])

    def broken():
        raise OSError("no space")

    with pytest.raises(OSError):
        speedups.dispatch_usual_records(log, 0, len(log), 10, b"S", broken, 12)
