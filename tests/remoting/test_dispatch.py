"""The processor table and the generic server behaviour (``NettyRemotingAbstract#processRequestCommand``), without any I/O."""

from twisted.internet.defer import Deferred

from rmqproto.codec.frame import (
    FLAG_ONEWAY, FLAG_RESPONSE, SERIALIZE_JSON, SERIALIZE_ROCKETMQ, JsonResponseTemplate,
    decode_frame)
from rmqproto.codec.codes import CURRENT_VERSION, ResponseCode as R
from rmqproto.remoting.dispatch import RequestContext, RequestDispatcher, exception_remark


from conftest import request

CONTEXT = RequestContext(None, "10.0.0.1:1234")


def test_context_parses_its_peer_once():
    context = RequestContext(None, "10.0.0.1:1234")
    assert context.address == ("10.0.0.1", 1234)
    assert context.address is context.address
    assert RequestContext(None, "unix-socket").address is None


def answer(frame):
    return decode_frame(frame[4:])


def echo(req, context):
    return req.response(R.SUCCESS, remark=context.peer, ext_fields=req.ext_fields, body=req.body)


def test_dispatch_by_code_fills_in_the_response_fields():
    dispatcher = RequestDispatcher()
    dispatcher.register(105, echo)
    for serialize_type in (SERIALIZE_JSON, SERIALIZE_ROCKETMQ):
        req = request(105, opaque=77, ext_fields={"topic": "T"}, body=b"xy",
                      language="PYTHON", version=3, serialize_type=serialize_type)
        resp = answer(dispatcher.dispatch(req, CONTEXT))
        assert (resp.code, resp.opaque, resp.flag, resp.serialize_type) == (
            R.SUCCESS, 77, FLAG_RESPONSE, serialize_type)
        assert (resp.language, resp.version) == ("JAVA", CURRENT_VERSION)
        assert (resp.ext_fields, resp.body, resp.remark) == ({"topic": "T"}, b"xy", "10.0.0.1:1234")


def test_configured_version_and_default_processor():
    dispatcher = RequestDispatcher(version=479)
    dispatcher.register_default(echo)
    assert answer(dispatcher.dispatch(request(9999, opaque=1), CONTEXT)).version == 479


def test_unknown_code_is_not_supported_with_java_remark():
    resp = answer(RequestDispatcher().dispatch(request(4242, opaque=5), CONTEXT))
    assert (resp.code, resp.opaque, resp.flag) == (R.REQUEST_CODE_NOT_SUPPORTED, 5, FLAG_RESPONSE)
    assert resp.remark == " request type 4242 not supported"


def test_processor_exception_is_system_error_with_its_text():
    def broken(req, context):
        raise KeyError("no such topic")

    dispatcher = RequestDispatcher()
    dispatcher.register(10, broken)
    resp = answer(dispatcher.dispatch(request(10, opaque=8, serialize_type=SERIALIZE_ROCKETMQ),
                                      CONTEXT))
    assert (resp.code, resp.opaque, resp.serialize_type) == (R.SYSTEM_ERROR, 8, SERIALIZE_ROCKETMQ)
    assert resp.remark.startswith("KeyError: 'no such topic', broken(test_dispatch.py:")


def test_a_frame_the_processor_wrote_is_sent_as_it_is_unless_the_request_is_oneway():
    dispatcher = RequestDispatcher(version=479)
    template = JsonResponseTemplate({"queueId": ""}, ("queueId",), dispatcher.version)
    dispatcher.register(10, lambda req, context: template.frame(R.SUCCESS, req.opaque, 3))
    frame = dispatcher.dispatch(request(10, opaque=6), CONTEXT)
    resp = answer(frame)
    assert (resp.code, resp.opaque, resp.flag, resp.version, resp.ext_fields) == (
        R.SUCCESS, 6, FLAG_RESPONSE, 479, {"queueId": "3"})
    assert dispatcher.dispatch(request(10, opaque=7, flag=FLAG_ONEWAY), CONTEXT) is None


def test_processor_returning_garbage_is_system_error():
    dispatcher = RequestDispatcher()
    dispatcher.register(10, lambda req, context: "oops")
    resp = answer(dispatcher.dispatch(request(10), CONTEXT))
    assert resp.code == R.SYSTEM_ERROR and "not a RemotingCommand" in resp.remark


def test_reject_request_is_system_busy():
    class Busy:
        def reject_request(self):
            return True

        def __call__(self, req, context):
            raise AssertionError("a rejected request must not be processed")

    dispatcher = RequestDispatcher()
    dispatcher.register(10, Busy())
    resp = answer(dispatcher.dispatch(request(10), CONTEXT))
    assert resp.code == R.SYSTEM_BUSY
    assert resp.remark == "[REJECTREQUEST]system busy, start flow control for a while"


def test_oneway_is_never_answered():
    calls = []

    def broken(req, context):
        calls.append(req.code)
        raise RuntimeError("boom")

    dispatcher = RequestDispatcher()
    dispatcher.register(1, echo)
    dispatcher.register(2, broken)
    for code in (1, 2, 3):
        assert dispatcher.dispatch(request(code, flag=FLAG_ONEWAY), CONTEXT) is None
    assert calls == [2]


def test_processor_may_answer_nothing():
    dispatcher = RequestDispatcher()
    dispatcher.register(1, lambda req, context: None)
    assert dispatcher.dispatch(request(1), CONTEXT) is None


def slow_dispatcher():
    """A dispatcher whose code 11 answers later: ``(dispatcher, {opaque: its Deferred})``."""
    later = {}

    def slow(req, context):
        later[req.opaque] = d = Deferred()
        return d

    dispatcher = RequestDispatcher()
    dispatcher.register(11, slow)
    return dispatcher, later


def test_deferred_response_and_deferred_failure():
    dispatcher, later = slow_dispatcher()
    ok = dispatcher.dispatch(request(11, opaque=1), CONTEXT)
    bad = dispatcher.dispatch(request(11, opaque=2), CONTEXT)
    results = []
    ok.addCallback(results.append)
    bad.addCallback(results.append)
    later[2].errback(ValueError("store is shutting down"))
    later[1].callback(request(0).response(R.SUCCESS, body=b"msg"))
    first, second = (answer(frame) for frame in results)
    assert (first.opaque, first.code, first.remark) == (2, R.SYSTEM_ERROR, "ValueError: store is shutting down")
    assert (second.opaque, second.code, second.body) == (1, R.SUCCESS, b"msg")


def test_a_later_answer_goes_to_write_when_one_is_given():
    """With ``write`` the dispatcher returns None and hands it each later frame: the
    answer, a failure's SYSTEM_ERROR, none for a oneway request or a None response."""
    dispatcher, later = slow_dispatcher()
    written = []
    for opaque, flag in ((1, 0), (2, 0), (3, FLAG_ONEWAY), (4, 0)):
        assert dispatcher.dispatch(request(11, opaque=opaque, flag=flag), CONTEXT,
                                   written.append) is None
    later[2].errback(ValueError("store is shutting down"))
    later[1].callback(request(0).response(R.SUCCESS, body=b"msg"))
    later[3].callback(request(0).response(R.SUCCESS))
    later[4].callback(None)
    first, second = (answer(frame) for frame in written)
    assert (first.opaque, first.code, first.remark) == (2, R.SYSTEM_ERROR, "ValueError: store is shutting down")
    assert (second.opaque, second.code, second.body) == (1, R.SUCCESS, b"msg")
    assert dispatcher.dispatch(request(12, opaque=5), CONTEXT, written.append) is not None


def test_write_answer_finishes_a_processors_later_answer_without_a_deferred():
    """What a processor that kept ``context.write`` hands in later: finished as
    :meth:`dispatch` finishes an answer, SYSTEM_ERROR when making it raises, nothing for a
    oneway request."""
    dispatcher = RequestDispatcher()
    written = []

    def broken():
        raise ValueError("no answer")

    dispatcher.write_answer(request(11, opaque=1), written.append, request(0).response,
                            R.SUCCESS, "stored")
    dispatcher.write_answer(request(11, opaque=2), written.append, broken)
    dispatcher.write_answer(request(11, opaque=3, flag=FLAG_ONEWAY), written.append,
                            request(0).response, R.SUCCESS)
    first, second = (answer(frame) for frame in written)
    assert (first.opaque, first.code, first.remark, first.version) == (
        1, R.SUCCESS, "stored", CURRENT_VERSION)
    assert (second.opaque, second.code) == (2, R.SYSTEM_ERROR)
    assert second.remark.startswith("ValueError: no answer, broken(test_dispatch.py:")


def test_write_answer_hands_a_whole_frame_over_as_it_is():
    """A processor's later answer that is a whole frame (the usual sent message's) is
    written unchanged; for a oneway request, not at all."""
    dispatcher = RequestDispatcher()
    written = []
    frame = b"\x00\x00\x00\x05whole"
    dispatcher.write_answer(request(11, opaque=1), written.append, lambda: frame)
    dispatcher.write_answer(request(11, opaque=2, flag=FLAG_ONEWAY), written.append,
                            lambda: frame)
    assert written == [frame]


def test_a_deferred_answer_that_is_no_command_is_a_system_error():
    later = Deferred()
    dispatcher = RequestDispatcher()
    dispatcher.register(11, lambda req, context: later)
    results = []
    dispatcher.dispatch(request(11, opaque=3), CONTEXT).addCallback(results.append)
    later.callback("not a command")
    (frame,) = results
    resp = answer(frame)
    assert (resp.opaque, resp.code) == (3, R.SYSTEM_ERROR)
    assert resp.remark.startswith("TypeError: processor for request code 11 returned 'not a "
                                  "command', not a RemotingCommand or a frame")


def test_exception_remark_names_module_and_innermost_frame():
    class StoreError(Exception):
        pass

    def inner():
        raise StoreError()

    try:
        inner()
    except StoreError as exc:
        remark = exception_remark(exc)
    assert remark.startswith("test_dispatch.test_exception_remark_names_module_and_innermost_frame."
                             "<locals>.StoreError, inner(test_dispatch.py:")
    assert exception_remark(ValueError("x")) == "ValueError: x"


def test_a_view_excluding_codes_refuses_them_and_sees_later_registrations():
    dispatcher = RequestDispatcher()
    dispatcher.register(11, echo)
    vip = dispatcher.excluding(11)
    dispatcher.register(105, echo)
    assert answer(vip.dispatch(request(105, opaque=1), CONTEXT)).code == R.SUCCESS
    refused = answer(vip.dispatch(request(11, opaque=2), CONTEXT))
    assert (refused.code, refused.remark) == (R.REQUEST_CODE_NOT_SUPPORTED,
                                              " request type 11 not supported")
    assert answer(dispatcher.dispatch(request(11, opaque=3), CONTEXT)).code == R.SUCCESS
