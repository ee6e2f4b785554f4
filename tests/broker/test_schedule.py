"""Delayed delivery: delay levels, due times, delivery back to the real topic, delayOffset.json."""

import pytest
from consume_support import Controller, result_of

from rmqproto.broker.schedule import (
    ScheduleMessageService, deliver_timestamp, message_timeup,
)
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.message import MessageRecord
from rmqproto.errors import CodecError
from rmqproto.store.results import PutMessageStatus


def test_deliver_timestamp():
    assert deliver_timestamp(1000, 5000, 5500) == 6000
    assert deliver_timestamp(1000, 5000, 7000) == 6000
    assert deliver_timestamp(1000, 9000, 5000) == 5000  # the clock went back: deliver now


def test_message_timeup():
    record = MessageRecord("SCHEDULE_TOPIC_XXXX", b"x", {"DELAY": "3", "REAL_TOPIC": "T",
                                                          "REAL_QID": "2", "TAGS": "a"},
                           queue_id=2, reconsume_times=4)
    inner = message_timeup(record)
    assert (inner.topic, inner.queue_id, inner.reconsume_times) == ("T", 2, 4)
    assert inner.properties == {"REAL_TOPIC": "T", "REAL_QID": "2", "TAGS": "a"}
    with pytest.raises(CodecError):
        message_timeup(MessageRecord("SCHEDULE_TOPIC_XXXX", b"x", {"DELAY": "3"}))


def test_delivery_after_the_delay(tmp_path):
    broker = Controller(tmp_path)
    broker.topic("T")
    schedule = broker.schedule_service
    schedule.start()
    result_of(broker.store.put_message(MessageRecord("T", b"late", {"DELAY": "2"}, queue_id=1)))
    assert broker.store.get_max_offset_in_queue("T", 1) == 0
    broker.reactor.pump([0.1] * 49)
    assert broker.store.get_max_offset_in_queue("T", 1) == 0
    broker.reactor.pump([0.1] * 2)  # 5 s (level 2) have passed
    assert broker.store.get_max_offset_in_queue("T", 1) == 1
    assert schedule.offset_table == {2: 1}
    delivered = broker.store.puts[-1]
    assert "DELAY" not in delivered.properties and delivered.properties["REAL_TOPIC"] == "T"
    response = broker.call(RC.GET_ALL_DELAY_OFFSET)
    assert (response.code, response.body) == (R.SUCCESS, b'{"offsetTable":{2:1}}')
    schedule.shutdown()
    reloaded = ScheduleMessageService(broker)
    reloaded.load()
    assert reloaded.offset_table == {2: 1}


def test_failed_delivery_is_retried_later(tmp_path):
    broker = Controller(tmp_path)
    broker.schedule_service.start()
    result_of(broker.store.put_message(MessageRecord("T", b"x", {"DELAY": "1"})))
    broker.store.put_status = PutMessageStatus.CREATE_MAPEDFILE_FAILED
    broker.reactor.pump([0.1] * 12)
    assert broker.schedule_service.offset_table.get(1, 0) == 0
    broker.store.put_status = None
    broker.reactor.pump([0.1] * 50)
    assert broker.schedule_service.offset_table.get(1, 0) == 0  # waits 10 s after a failure
    broker.reactor.pump([0.1] * 60)
    assert broker.schedule_service.offset_table[1] == 1
    broker.schedule_service.shutdown()


def test_offsets_are_clamped_and_slaves_do_not_deliver(tmp_path):
    broker = Controller(tmp_path)
    broker.schedule_service.offset_table = {1: 7}
    broker.schedule_service.persist()
    broker.schedule_service.offset_table = {}
    broker.schedule_service.load()
    assert broker.schedule_service.offset_table == {1: 0}
    slave = Controller(tmp_path / "slave", brokerRole="SLAVE", brokerId=1)
    slave.schedule_service.start()
    assert not slave.schedule_service.started
