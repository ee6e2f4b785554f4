"""A store made read-only under our running broker (docs/store.md, "Disk full and
read-only directories"; docs/security.md, "Disk full and read-only stores").

A read-only bind mount over a store directory leaves the files the broker has open
writable and lets it create nothing there, as a file system the kernel turned read-only
after errors would. A send is answered with an error only when nothing of it was stored
(no duplicate on the client's retry); one topic's consume queue that cannot be written
fails no other topic's sends and is written up to date once it can be; a config file that
cannot be saved is a log line.
"""

import signal

from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from support.mounts import read_only
from support.storefaults import Processes, check_answers
from support.syncclient import call, wait_until

SEGMENT = 1 << 20
BODY = 60 << 10


def max_offset(address, topic):
    answer = call(address, RC.GET_MAX_OFFSET, {"topic": topic, "queueId": "0"})
    return int(answer.ext_fields["offset"]) if answer.code == R.SUCCESS else 0


def clean_output(daemon):
    output = daemon.output()
    return "Traceback" not in output and "Unhandled" not in output


def test_one_topics_queue_directory_fails_no_other_send(tmp_path):
    with Processes(tmp_path) as run:
        broker, address = run.broker("rmq-master", tmp_path / "store",
                                     mappedFileSizeCommitLog=SEGMENT)
        old, new = run.sender(address, "OldTopic"), run.sender(address, "NewTopic")
        assert old.send() == R.SUCCESS
        wait_until(lambda: max_offset(address, "OldTopic") == 1)
        with read_only(tmp_path / "store" / "consumequeue"):
            for _ in range(10):
                assert old.send() == R.SUCCESS  # stored: SEND_OK, whatever its queue
                assert new.send() == R.SUCCESS
            assert max_offset(address, "OldTopic") == 11
            assert max_offset(address, "NewTopic") == 0
        wait_until(lambda: max_offset(address, "NewTopic") == 10, timeout=10)
        assert new.send() == R.SUCCESS
        assert max_offset(address, "NewTopic") == 11
        assert "consume queue NewTopic/0 cannot be written" in broker.output()
        assert clean_output(broker), broker.output()[-3000:]
        assert broker.stop() in (0, -signal.SIGTERM)
        check_answers(tmp_path / "store", SEGMENT, [old, new])


def test_a_read_only_store_answers_errors_only_for_what_it_did_not_store(tmp_path):
    with Processes(tmp_path) as run:
        broker, address = run.broker("rmq-master", tmp_path / "store",
                                     mappedFileSizeCommitLog=SEGMENT)
        old = run.sender(address, "OldTopic")
        assert old.send(BODY) == R.SUCCESS
        wait_until(lambda: max_offset(address, "OldTopic") == 1)
        with read_only(tmp_path / "store"):
            new = run.sender(address, "NewTopic")  # its topic config cannot be saved
            assert new.send() == R.SUCCESS
            while len(old.refused) < 3:
                old.send(BODY)
                assert len(old.acked) <= SEGMENT // BODY, "the segment never filled"
            for code, remark in old.refused.values():
                assert code == R.SYSTEM_ERROR and "create mapped file failed" in remark
            assert broker.poll() is None
            assert "persist file" in broker.output()
        wait_until(lambda: old.send(BODY) == R.SUCCESS, timeout=10)
        assert new.send() == R.SUCCESS
        wait_until(lambda: max_offset(address, "NewTopic") == 2, timeout=10)
        assert clean_output(broker), broker.output()[-3000:]
        assert broker.stop() in (0, -signal.SIGTERM)
        check_answers(tmp_path / "store", SEGMENT, [old, new])
