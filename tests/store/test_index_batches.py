"""IndexService.build_indexes puts a batch's keys at once: the files, their
names and the full files left to flush equal what one put per key, request by request
(Java's ``buildIndex``), leaves; tiny files make the batches cross files."""

import os

from hypothesis import given, settings, strategies as st

from rmqproto.codec import message as msg
from rmqproto.codec.indexfile import build_key
from rmqproto.store.dispatch import DispatchRequest
from rmqproto.store.indexservice import IndexService

SLOTS, ENTRIES = 3, 5  # four entries a file


class _ReferenceIndex(IndexService):
    """``buildIndex`` as Java writes it: the newest file per request, one put per key."""

    def build_indexes(self, requests):
        f = None
        for request in requests:
            if not request.uniq_key and not request.keys:
                continue
            if f is None or f.index.is_write_full:
                f = self.last_file()
            if (request.commit_log_offset < f.index.end_phy_offset
                    or msg.transaction_type(request.sys_flag) == msg.TRANSACTION_ROLLBACK_TYPE):
                continue
            keys = [request.uniq_key] if request.uniq_key else []
            keys += [word for word in request.keys.split(" ") if word]
            for key in keys:
                while not f.index.put_key(build_key(request.topic, key),
                                          request.commit_log_offset, request.store_timestamp):
                    f = self.last_file()


def _request(topic, offset, timestamp, keys, uniq_key, sys_flag):
    return DispatchRequest(topic, 0, offset, 100, 0, timestamp, 0, keys, uniq_key, sys_flag, 0, {})


_requests = st.lists(st.tuples(
    st.sampled_from(["T", "U"]), st.sampled_from([1, 1, 1, 0, -2]), st.integers(0, 3000),
    st.sampled_from(["", "", "k1", "k1 k2", " k3  ", "  "]),
    st.sampled_from([None, "", "U1", "U2", "U3"]),
    st.sampled_from([0, 0, msg.TRANSACTION_ROLLBACK_TYPE, msg.TRANSACTION_PREPARED_TYPE])),
    max_size=30)


def _state(service):
    files = {}
    for name in sorted(os.listdir(service.directory)):
        with open(os.path.join(service.directory, name), "rb") as f:
            files[name] = f.read()
    return files, [f.file_name for f in service.full_files]


@settings(max_examples=150, deadline=None)
@given(_requests, st.integers(1, 7))
def test_build_indexes_in_batches_equals_key_by_key(tmp_path_factory, steps, batch):
    now = [1700000000000]
    requests, offset = [], 1000
    for topic, step, elapsed, keys, uniq_key, sys_flag in steps:
        offset = max(offset + step * 100, 0)
        now[0] += elapsed
        requests.append(_request(topic, offset, now[0], keys, uniq_key, sys_flag))
    root = tmp_path_factory.mktemp("index")
    services = [cls(str(root / name), SLOTS, ENTRIES, lambda: now[0])
                for cls, name in ((_ReferenceIndex, "one"), (IndexService, "many"))]
    one, many = services
    for start in range(0, len(requests), batch):
        now[0] += 1  # a new reactor turn: new files get new names
        one.build_indexes(requests[start:start + batch])
        many.build_indexes([tuple(r) for r in requests[start:start + batch]])  # plain tuples
    if os.path.isdir(one.directory) or os.path.isdir(many.directory):
        assert _state(many) == _state(one)
    assert many.query_offset("T", "U1", 64, 0, 1 << 62) == one.query_offset(
        "T", "U1", 64, 0, 1 << 62)
    for service in services:
        service.close()
