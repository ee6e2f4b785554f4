"""The records a slave checks before acking (``rmqproto/ha/framing.py``): whole, cut and
blank-ended segments pass, and what is refused says why. Its C twin is compared with it in
tests/codec/test_speedups_framing.py."""

import pytest

from rmqproto.codec.message import encode_blank
from rmqproto.ha.framing import check_records

from support.recordstream import record, records, segment

FILE = 4096


def walk(data, pos=0, end=None, offset=0, crc=True):
    return check_records(data, pos, len(data) if end is None else end, offset, FILE, crc)


def test_whole_records_pass_and_a_cut_one_waits():
    data = records(5)
    size = len(record(b"\0" * 100))
    assert walk(data) == (len(data), None)
    assert walk(data, end=len(data) - 1) == (4 * size, None)
    assert walk(data, end=3) == (0, None)
    assert walk(b"") == (0, None)


def test_a_blank_takes_the_rest_of_its_file_once_all_of_it_is_there():
    data = segment(FILE)
    assert walk(data) == (FILE, None)
    assert walk(data, end=FILE - 1)[1] is None and walk(data, end=FILE - 1)[0] < FILE
    # the next segment's records follow
    both = data + records(2)
    assert walk(both) == (len(both), None)


@pytest.mark.parametrize("bad, why", [
    (b"\0" * 100, "magic code"),
    (encode_blank(100), "a blank of 100 bytes where 3696 are left"),
    (record()[:4] + b"\x12\x34\x56\x78" + record()[8:], "magic code 0x12345678"),
    ((80).to_bytes(4, "big") + record()[4:], "TOTALSIZE 80 outside"),
    ((5000).to_bytes(4, "big") + record()[4:], "TOTALSIZE 5000 outside"),
    (record()[:-3] + b"!" + record()[-2:], None),  # a topic byte: framing and CRC hold
])
def test_what_is_refused(bad, why):
    good = records(2)
    stop, reason = walk(good + bad + records(1))
    if why is None:
        assert (stop, reason) == (len(good) + len(bad) + len(records(1)), None)
    else:
        assert stop == len(good) and why in reason


def test_a_changed_body_byte_fails_the_crc_only_when_asked():
    one = bytearray(record(b"0123456789"))
    one[-20] ^= 1  # inside the body: TOTALSIZE .. lengths unchanged
    data = records(1) + bytes(one)
    assert walk(data, crc=False) == (len(data), None)
    stop, why = walk(data)
    assert stop == len(records(1)) and "BODYCRC" in why


def test_a_record_whose_lengths_disagree_with_totalsize_is_refused():
    one = bytearray(record(b"0123456789"))
    one[87] = 11  # body length 10 -> 11
    stop, why = walk(bytes(one))
    assert stop == 0 and why == "topic length 84 does not fit the record"
