"""The C record of a sent message (``send_record``) against the Python one it fronts,
``python_send_record`` of the send processor: random properties strings (``WAIT`` and
``TRAN_MSG`` in every case, non-ASCII values and names, more names than the C loop
orders), ASCII and other topics, IPv4 and IPv6 hosts, a connection without a born host,
missing optional header fields and wrong types. Records (their properties in order),
``WAIT`` and errors must be the same. ``tests/broker`` checks the records against Java's.
Then the send request's frame and header decoded in C, whose look-ups try the keys in
the order Java writes them first, against Python with the keys in any order."""

import pytest
from hypothesis import given, settings, strategies as st

from rmqproto.broker.processors.send import python_send_record
from rmqproto.codec import frame as F, headers as H
from rmqproto.codec.message import MessageRecord
from rmqproto.codec.native import speedups
from rmqproto.errors import CodecError
from support.speedups import require_speedups
from test_speedups_requests import _frame_outcome, _json_frame, _outcome as _header_outcome
from test_speedups_requests import assert_no_leak

require_speedups()

PLAN = (MessageRecord, python_send_record)

_NAMES = st.sampled_from(["WAIT", "TRAN_MSG", "CLUSTER", "TAGS", "KEYS", "UNIQ_KEY", "DELAY",
                          "a", "é", "\U0001F600", "\udc80", ""]) | st.text(max_size=6)
_FLAGS = st.sampled_from(["true", "TRUE", "tRuE", "false", "", "truee", "ｔｒｕｅ",
                          "TRUE\u0131", "\u0130"]) | st.text(max_size=4)
_TEXTS = st.none() | st.lists(st.tuples(_NAMES, _FLAGS | st.text(max_size=8)), max_size=20).map(
    lambda pairs: "\x02".join(n + "\x01" + v for n, v in pairs)) | st.text(
        st.sampled_from("ab\x01\x02"), max_size=12)
_HOSTS = st.sampled_from([("127.0.0.1", 0), ("10.0.0.7", 10911), ("::1", 5), ("fe80::1%2", 7)])
_TOPICS = st.sampled_from(["T", "BenchSend", "x" * 127, "x" * 128, "töpic", "%RETRY%g"])


def _outcome(build, *args):
    try:
        made = build(PLAN, *args)
    except (CodecError, TypeError, AttributeError) as exc:
        return type(exc)
    if made is None:
        return None
    record, wait = made
    return record.fields(), list(record.properties.items()), type(record), wait


def _same(*args):
    ours = _outcome(speedups.send_record, *args)
    assert ours == _outcome(python_send_record, *args)
    return ours


@settings(max_examples=800)
@given(st.tuples(
    _TOPICS, st.binary(max_size=8), _TEXTS, st.sampled_from(["DefaultCluster", "c", None]),
    st.integers(-1, 8), st.integers(-2 ** 31, 2 ** 31 - 1), st.integers(0, 0x7FF) | st.integers(),
    st.integers(0, 2 ** 62), st.none() | _HOSTS, _HOSTS, st.none() | st.integers(0, 16)))
def test_c_send_record_equals_python_send_record(args):
    _same(*args)


def _args(**changed):
    args = dict(topic="T", body=b"body", text="TAGS\x01a\x02WAIT\x01false", cluster="C",
                queue_id=3, flag=0, sys_flag=0, born_timestamp=1, born_host=("10.0.0.7", 1),
                store_host=("10.0.0.8", 10911), reconsume_times=None)
    args.update(changed)
    return list(args.values())


def test_the_usual_message():
    fields, properties, _, wait = _same(*_args())
    assert properties == [("CLUSTER", "C"), ("TAGS", "a")]
    assert wait is False
    assert fields["reconsume_times"] == 0 and fields["body_crc"] == 0


def test_wait_is_dropped_from_text_of_any_width():
    for text in ["WAIT\x01true\x02K\x01\U0001F600", "WAIT\x01true\x02K\x01\u20ac"]:
        assert "WAIT" not in dict(_same(*_args(text=text))[1])


def test_ipv6_hosts_set_their_sys_flag_bits():
    assert _same(*_args(born_host=("::1", 1), sys_flag=0x30 | 2))[0]["sys_flag"] == 0x12
    assert _same(*_args(store_host=("::1", 1)))[0]["sys_flag"] == 0x20


def test_a_prepared_transaction_message_is_the_callers():
    assert _same(*_args(text="TRAN_MSG\x01TRUE")) is None
    assert _same(*_args(text="TRAN_MSG\x01false")) is not None


def test_more_names_than_the_c_loop_orders():
    text = "\x02".join("k%d\x01v" % i for i in range(100))
    assert len(_same(*_args(text=text))[1]) == 101


def test_what_the_c_loop_leaves_to_python():
    for changed in [dict(topic="töpic"), dict(topic=None), dict(text=7), dict(text=b"a\x01b"),
                    dict(sys_flag=2 ** 70), dict(sys_flag=None), dict(born_host=()),
                    dict(born_host=["::1", 1]), dict(store_host=None),
                    dict(reconsume_times=False), dict(reconsume_times="1"),
                    dict(text="WAIT\x01tru\u00e9")]:
        _same(*_args(**changed))


def test_a_record_type_with_its_own_setattr_gets_every_field_through_it():
    class Watched(MessageRecord):
        __slots__ = ()
        seen = []

        def __setattr__(self, name, value):
            self.seen.append(name)
            super().__setattr__(name, value)

    made = speedups.send_record((Watched, python_send_record), *_args())
    assert type(made[0]) is Watched
    assert sorted(Watched.seen) == sorted(MessageRecord.__slots__)
    Watched.seen.clear()
    python = python_send_record((Watched, python_send_record), *_args())
    assert made[0].fields() == python[0].fields()


def test_a_bad_plan_raises():
    with pytest.raises(TypeError):
        speedups.send_record((dict, python_send_record), *_args())
    with pytest.raises(TypeError):
        speedups.send_record(PLAN, *_args()[:-1])


def test_no_leak():
    texts = [None, "TAGS\x01a\x02WAIT\x01false", "TRAN_MSG\x01true",
             "\x02".join("k%d\x01v" % i for i in range(100))]

    def run():
        for _ in range(200):
            for text in texts:
                speedups.send_record(PLAN, *_args(text=text))
            speedups.send_record(PLAN, *_args(born_host=None, topic="töpic"))
            with pytest.raises(TypeError):
                speedups.send_record(PLAN, *_args(text=7))

    assert_no_leak(run)


class Key(str):
    """A str subclass: the C look-ups leave its keys to the dict."""


_V2 = H.SendMessageRequestHeaderV2
_EXT = {"a": "pg", "b": "T", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1795329689160",
        "h": "0", "i": "WAIT\x01true", "j": "0", "k": "false", "m": "false"}


@settings(max_examples=300)
@given(st.permutations(sorted(_EXT)), st.sets(st.sampled_from(sorted(_EXT))),
       st.sampled_from([str, Key]))
def test_send_header_and_frame_with_their_keys_in_any_order(order, dropped, key_type):
    ext = {key_type(key): _EXT[key] for key in order if key not in dropped}
    for ext_fields in (ext, dict(sorted(ext.items()))):
        assert _header_outcome(_V2.v1_from_ext_fields, ext_fields) == _header_outcome(
            _V2.python_v1_from_ext_fields, ext_fields)
    header = {"code": 310, "extFields": {str(key): value for key, value in ext.items()},
              "flag": 0, "language": "JAVA", "opaque": 7, "serializeTypeCurrentRPC": "JSON",
              "version": 399}
    for keys in (sorted(header), sorted(header, reverse=True)):
        frame = _json_frame({key: header[key] for key in keys}, b"body")
        decoded = _frame_outcome(F.decode_frame, frame)
        assert decoded == _frame_outcome(F.python_decode_frame, frame)
        assert decoded[0] == (int, 310)  # a frame both decode, not an error both raise
