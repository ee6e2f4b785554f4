"""Helpers shared by the replication codec tests (HA stream, DLedger store and RPC)."""

import re

from hypothesis import strategies as st

from rmqproto.errors import CodecError
from support.interop import load_vectors


def vector_cases(kind):
    """``[(vector, its bytes)]`` of the checked-in vectors of ``kind`` (there must be some)."""
    vectors = load_vectors(kind)
    assert vectors, "no checked-in vectors of %s" % kind
    return [(vector, bytes.fromhex(vector["hex"])) for vector in vectors]


def vector_bytes(kinds):
    """The bytes of every checked-in vector of ``kinds``: the valid encodings fuzzing mutates."""
    return [data for kind in kinds for _, data in vector_cases(kind)]


def strip_none(value):
    """``value`` without ``None`` map entries, as fastjson writes the Java side's field maps."""
    if isinstance(value, dict):
        return {k: strip_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [strip_none(v) for v in value]
    return value


def snake(name):
    """``maxOffset`` → ``max_offset``: Java field names to the Python ones."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def mutations(valid):
    """A strategy of byte strings derived from ``valid`` encodings: flipped, cut, extended."""
    base = st.sampled_from([bytes(v) for v in valid])

    def flip(data, position, value):
        if not data:
            return bytes([value])
        position %= len(data)
        return data[:position] + bytes([value]) + data[position + 1:]

    return st.one_of(
        st.builds(flip, base, st.integers(0, 1 << 16), st.integers(0, 255)),
        st.builds(lambda d, n: d[:n % (len(d) + 1)], base, st.integers(0, 1 << 16)),
        st.builds(lambda d, extra: d + extra, base, st.binary(max_size=16)),
    )


def fuzz_inputs(valid):
    """Random bytes or mutations of ``valid`` encodings."""
    return st.one_of(st.binary(max_size=128), mutations(valid))


def only_codec_errors(decoder, data):
    """Run ``decoder(data)``; any exception other than ``CodecError`` fails the test."""
    try:
        decoder(data)
    except CodecError:
        pass
