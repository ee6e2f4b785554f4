"""The unit loop of a pull in C (``transfer_units``) against its Python twin
(:func:`rmqproto.store.transfer.python_transfer_units`, ``DefaultMessageStore#getMessage``): segments, caps,
filters and damaged units on random inputs and edge cases; then that it does not leak."""

import pytest
from hypothesis import given, settings, strategies as st

from rmqproto.store import transfer
from rmqproto.store.mappedfile import MappedFile
from support.recordstrategies import INT64
from support.speedups import require_speedups
from test_speedups import _growth, _outcome

speedups = require_speedups()

_FILE_SIZE = 64


class _Segment:
    """What the loop reads of a ``MappedFile``: its offset, write position and mapping
    (bytes here, whose slices are bytes as an mmap's are)."""

    def __init__(self, file_from_offset, wrote_position, mm):
        self.file_from_offset = file_from_offset
        self.wrote_position = wrote_position
        self.mm = mm

    read = MappedFile.read


def _unit(offset, size, tags_code):
    return (offset.to_bytes(8, "big", signed=True) + size.to_bytes(4, "big", signed=True)
            + tags_code.to_bytes(8, "big", signed=True))


@st.composite
def _segments(draw):
    """Usually consecutive segments from a segment start, sometimes a gap or a stray one."""
    start = draw(st.sampled_from([0, 0, 1, 3])) * _FILE_SIZE
    files = []
    for k in range(draw(st.sampled_from([0, 1, 2, 3, 3, 4, 4]))):
        step = draw(st.sampled_from([1, 1, 1, 2]))
        start += (step - 1) * _FILE_SIZE
        from_offset = start + draw(st.sampled_from([0, 0, 0, 0, 3]))
        files.append(_Segment(from_offset, draw(st.sampled_from([_FILE_SIZE, 40])
                                                | st.integers(0, _FILE_SIZE)),
                              bytes(range(k * 50, k * 50 + _FILE_SIZE))))
        start += _FILE_SIZE
    return files


_NEAR = st.integers(-70, 8 * _FILE_SIZE)
#: Mostly offsets at or near the segments, sometimes far away.
_OFFSETS = st.one_of(_NEAR, _NEAR, _NEAR, _NEAR, st.sampled_from([0, -1, 2**63 - 1, -2**63]),
                     INT64)
_SIZES = st.one_of(st.integers(0, 12), st.integers(0, 12), st.integers(-2, 70),
                   st.sampled_from([2**31 - 1, -2**31]))


@st.composite
def _units(draw, files):
    """Units of records one after another, as a queue holds them, mostly starting in one
    of ``files``, with strays among them."""
    starts = [f.file_from_offset + draw(st.integers(0, 20)) for f in files]
    offset = draw(st.sampled_from(starts) if starts else _OFFSETS)
    units = []
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.integers(0, 5)) == 0:
            offset = draw(_OFFSETS)
        size = draw(_SIZES)
        units.append(_unit(offset, size, draw(st.one_of(st.integers(0, 5), INT64))))
        offset = max(-2**63, min(offset + size, 2**63 - 1))
    return b"".join(units)


_store = _segments().flatmap(lambda files: st.tuples(st.just(files), _units(files)))
_CAPS = st.tuples(st.integers(0, 200), st.integers(0, 6), st.integers(0, 200),
                  st.integers(0, 6))
_FILTERS = st.sampled_from([None, lambda code: code % 2 == 0, lambda code: code, bool])


def _run(fn, files, units, extra, offset, max_msg_nums, message_filter, max_offset_py,
         memory, caps):
    messages, queue_offsets = [], []
    outcome = _outcome(fn, files, _FILE_SIZE, units + extra, offset, max_msg_nums,
                       message_filter, max_offset_py, memory, caps, messages, queue_offsets)
    return outcome, messages, queue_offsets


@settings(max_examples=400, deadline=None)
@given(_store, st.sampled_from([b"", b"\x00" * 7]), st.tuples(
    st.integers(0, 1000), st.integers(0, 8), _FILTERS, st.integers(0, 6 * _FILE_SIZE),
    st.integers(0, 200), _CAPS))
def test_transfer_units_with_and_without_speedups(store, extra, pull):
    """``pull``: offset, max_msg_nums, message_filter, max_offset_py, memory, caps."""
    files, units = store
    ours = _run(transfer._c_transfer_units, files, units, extra, *pull)
    assert ours == _run(transfer.python_transfer_units, files, units, extra, *pull)
    assert all(type(data) is bytes for data in ours[1])


def _some_units():
    return b"".join(_unit(offset, 10, offset) for offset in (0, 10, 20, 64, 80))


def test_transfer_units_reads_across_segments():
    files = [_Segment(0, 64, bytes(range(64))), _Segment(64, 20, bytes(range(100, 164)))]
    messages, queue_offsets = [], []
    assert speedups.transfer_units(files, 64, _some_units(), 7, 32, None, 100, 1000,
                                   (1000, 32, 1000, 32), messages, queue_offsets) == (2, 5, 80)
    assert messages == [bytes(range(0, 10)), bytes(range(10, 20)), bytes(range(20, 30)),
                        bytes(range(100, 110))] and queue_offsets == [7, 8, 9, 10]


def test_transfer_units_skips_the_rest_of_a_gone_segment():
    """Record 64's segment is gone: the loop goes on at the next segment start, 128."""
    files = [_Segment(0, 64, bytes(64)), _Segment(128, 64, bytes(64))]
    units = b"".join(_unit(offset, 4, 0) for offset in (64, 70, 128))
    messages = []
    assert speedups.transfer_units(files, 64, units, 0, 32, None, 0, 0, (99, 9, 99, 9),
                                   messages, []) == (2, 3, 128)
    assert messages == [bytes(4)]


@pytest.mark.parametrize("args", [
    ("files", 64, b"", 0, 1, None, 0, 0, (1, 1, 1, 1), [], []),  # not lists
    ([], 64, b"", 0, 1, None, 0, 0, (1, 1, 1), [], []),  # three caps
    ([], 0, b"", 0, 1, None, 0, 0, (1, 1, 1, 1), [], []),  # no file size
    ([], 64, b"", 2**63, 1, None, 0, 0, (1, 1, 1, 1), [], []),  # beyond a long
    ([], 64, _some_units(), 2**63 - 2, 1, None, 0, 0, (1, 1, 1, 1), [], []),
    ([], 64, "units", 0, 1, None, 0, 0, (1, 1, 1, 1), [], []),  # not bytes-like
])
def test_transfer_units_declines_what_the_store_never_passes(args):
    assert speedups.transfer_units(*args) is None


def test_transfer_units_passes_on_what_the_filter_raises():
    def refuse(code):
        raise ValueError("no %d" % code)

    files = [_Segment(0, 64, bytes(64))]
    for fn in (speedups.transfer_units, transfer.python_transfer_units):
        assert _outcome(fn, files, 64, _some_units(), 0, 32, refuse, 0, 0, (1, 1, 1, 1),
                        [], []) == ("raised", ValueError, "no 0")


def _transfer_call(i):
    files = [_Segment(0, 64, bytes(64)), _Segment(64, 64, bytes(64))]
    units = _some_units() + _unit(200 + i, 3, i)
    speedups.transfer_units(files, 64, units, i, 32, lambda code: code != 10, 0, 0,
                            (1000, 32, 1000, 32), [], [])
    _outcome(speedups.transfer_units, files, 64, units, i, 32, int.bit_length, 0, 0,
             (1000, 32, 1000, 32), [], [])


def test_no_memory_grows():
    assert _growth(_transfer_call) < 16 * 1024
