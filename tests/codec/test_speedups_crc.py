"""The C ``crc32`` (``rmqproto/codec/speedups/crc32.c``) against ``zlib.crc32``, its Python
twin: every length across the 16- and 64-byte steps of the folding, unaligned views,
continued values, the kinds of buffer the store passes, and the errors."""

import mmap
import os
import platform
import threading
import zlib

import pytest
from hypothesis import given, settings, strategies as st

from rmqproto.codec import javalang
from rmqproto.codec.native import speedups
from support.speedups import require_speedups

require_speedups()

VALUES = (0, 1, 0x7FFFFFFF, 0xFFFFFFFF, 0xDEADBEEF)


def _cpu_has_pclmul():
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            return "pclmulqdq" in info.read().split()
    except OSError:
        return False


@pytest.mark.skipif(platform.machine() != "x86_64" or not _cpu_has_pclmul(),
                    reason="the folding path needs an x86-64 CPU with PCLMULQDQ")
def test_folds_where_the_cpu_can():
    """On this CPU the tests below take the folding path, not only the byte table."""
    assert speedups.crc32_folds() is True


@pytest.mark.parametrize("offset", [0, 1, 7, 15])
def test_every_length_and_alignment(offset):
    data = os.urandom(700)
    view = memoryview(data)
    for length in range(0, 700 - offset):
        piece = view[offset:offset + length]
        for value in VALUES:
            assert speedups.crc32(piece, value) == zlib.crc32(piece, value), (length, value)


@pytest.mark.parametrize("length", [4095, 4096, 65536 + 13, 1 << 20])
def test_long_buffers(length):
    data = os.urandom(length)
    assert speedups.crc32(data) == zlib.crc32(data)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=2000), st.integers(min_value=0, max_value=0xFFFFFFFF),
       st.integers(min_value=0, max_value=2000))
def test_continued_in_two_pieces(data, value, cut):
    """Any cut continues exactly, as zlib's does: the folding keeps no state of its own."""
    first = speedups.crc32(data[:cut], value)
    assert speedups.crc32(data[cut:], first) == zlib.crc32(data, value)


def test_buffers_the_store_passes():
    data = os.urandom(3000)
    with mmap.mmap(-1, len(data)) as mapped:
        mapped[:] = data
        for buffer in (bytes(data), bytearray(data), memoryview(data)[5:], mapped):
            assert speedups.crc32(buffer) == zlib.crc32(buffer)


def test_values_are_masked_to_32_bits_as_zlib_does():
    for value in (-1, 1 << 40, -(1 << 33) + 5):
        assert speedups.crc32(b"abc", value) == zlib.crc32(b"abc", value)


@pytest.mark.parametrize("args", [(), ("text",), (b"x", 1, 2), (b"x", "1"), (None,)])
def test_bad_arguments_raise_type_error(args):
    with pytest.raises(TypeError):
        zlib.crc32(*args)
    with pytest.raises(TypeError):
        speedups.crc32(*args)


def test_masked_crc32_uses_it():
    """The store's body CRC (``UtilAll.crc32``) goes through the C function."""
    assert javalang._crc32 is speedups.crc32
    body = os.urandom(1024)
    assert javalang.masked_crc32(body) == zlib.crc32(body) & 0x7FFFFFFF


def test_other_threads_run_during_a_long_buffer():
    """Above 64 KiB the GIL is released, as zlib does above 5 KiB: this thread runs while
    another computes the CRC of a mapping, and finds the mapping exported (a resize to its
    own size is refused) until the CRC is done."""
    size = 128 << 20
    with mmap.mmap(-1, size) as mapped:
        mapped.write(os.urandom(1 << 20) * 128)
        expected = zlib.crc32(mapped)
        results = []
        worker = threading.Thread(target=lambda: results.append(speedups.crc32(mapped)))
        saw_export = False
        worker.start()
        while worker.is_alive() and not saw_export:
            try:
                mapped.resize(size)  # one call: refused only while the CRC holds the buffer
            except BufferError:
                saw_export = True
        worker.join()
    assert saw_export
    assert results == [expected]
