"""The C writer of a templated response frame (``response_frame``) against the Python one
it fronts, ``python_response_frame``, on random plans and values: ints of every size and
int subclasses, ASCII and other text, wrong types and counts, malformed plans. Frames and
errors must be the same. ``test_frame.py`` checks the templates against ``encode_frame``."""

import enum

import pytest
from hypothesis import given, settings, strategies as st

from rmqproto.codec import frame as F
from rmqproto.codec.native import speedups
from support.speedups import require_speedups
from test_speedups_requests import assert_no_leak

require_speedups()


class Code(enum.IntEnum):
    SUCCESS = 0
    FLUSH_DISK_TIMEOUT = 10


_VALUES = (st.integers(-2 ** 63, 2 ** 63 - 1) | st.integers() | st.sampled_from(
    [0, -1, 2 ** 63 - 1, -2 ** 63, 2 ** 63, -2 ** 63 - 1, True, False, Code.SUCCESS,
     Code.FLUSH_DISK_TIMEOUT]) | st.text(max_size=12)
    | st.text(st.characters(max_codepoint=127), max_size=40) | st.sampled_from(
        [b"7", 1.5, None, "é", "\x00", "7F000001000000000000A2B4"]))


def _outcome(write, plan, values):
    try:
        return write(plan, *values)
    except (TypeError, IndexError) as exc:
        return type(exc)


@settings(max_examples=800)
@given(st.data())
def test_c_response_frame_equals_python_response_frame(data):
    count = data.draw(st.integers(0, 18))
    parts = data.draw(st.lists(st.binary(max_size=20), min_size=count + 1, max_size=count + 1)
                      | st.lists(st.binary(max_size=4), max_size=3))
    order = tuple(data.draw(st.permutations(range(count)))) if data.draw(st.booleans()) \
        else tuple(data.draw(st.lists(st.integers(-2, count + 1) | st.just(2 ** 70),
                                      min_size=count, max_size=count)))
    values = data.draw(st.lists(_VALUES, min_size=count, max_size=count)
                       | st.lists(_VALUES, max_size=3))
    plan = (tuple(parts), order, F.python_response_frame)
    assert _outcome(speedups.response_frame, plan, values) == _outcome(
        F.python_response_frame, plan, values)


def test_parts_that_are_not_bytes_go_to_python():
    for parts in [(b"a", bytearray(b"b")), (b"a", "b"), (b"a", None)]:
        plan = (parts, (0,), F.python_response_frame)
        assert _outcome(speedups.response_frame, plan, [7]) == _outcome(
            F.python_response_frame, plan, [7])


def test_a_header_beyond_24_bits_goes_to_python():
    plan = ((b"x" * 0xFFFFFF, b""), (0,), F.python_response_frame)
    assert speedups.response_frame(plan, 12) == F.python_response_frame(plan, 12)


def test_malformed_plans_are_refused():
    for plan in [(), ((b"",), ()), ([b""], (), F.python_response_frame),
                 ((b"",), [], F.python_response_frame)]:
        with pytest.raises(TypeError):
            speedups.response_frame(plan)
    with pytest.raises(TypeError):
        speedups.response_frame()


def test_templates_write_in_c():
    template = F.JsonResponseTemplate({"msgId": "", "queueId": ""}, ("msgId", "queueId"), 399)
    assert template.frame.func is speedups.response_frame


def test_writing_does_not_leak():
    template = F.JsonResponseTemplate({"msgId": "", "queueId": "", "queueOffset": "", "r": "x"},
                                      ("msgId", "queueId", "queueOffset"), 399)
    plan = template.frame.args[0]

    def run():
        for i in range(2000):
            template.frame(Code.SUCCESS, i, "7F000001000000000000A2B4", 3, 2 ** 40 + i)
            template.frame(0, -i, "é", 3, 2 ** 64)  # to Python
            for values in ([0, 1, "a", 2], [0, 1, b"a", 2, 3]):
                try:
                    speedups.response_frame(plan, *values)
                except TypeError:
                    pass

    assert_no_leak(run)
