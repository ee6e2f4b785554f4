"""How the reactor takes a receive thread's progress (``ReceiveThread`` in
``rmqproto/ha/receiver.py``), on a fake clock with a scripted C loop: a read after a quiet
spell is handed on at once, a steady stream every ``PROGRESS_INTERVAL``, and a look that
finds nothing re-arms the loop and stops looking."""

import threading

import pytest
from twisted.internet import task

from rmqproto.ha import receiver

END, REPORTED = 1000, 1000


class ScriptedLoop:
    """Stands in for ``HAReceiver``: the test makes its reads; ``run`` waits for ``stop``."""

    def __init__(self, end, reported):
        self.state = [end, 0, reported, 0]
        self.armed = False
        self.wake_fd = -1
        self.stopped = threading.Event()

    def read(self, size):
        """A read of ``size`` body bytes, appended and reported; it wakes the reactor if
        armed (the test then calls ``doRead``), which disarms."""
        self.armed = False
        self.state[0] += size
        self.state[1] += size
        self.state[2] = self.state[0]
        self.state[3] += 1

    def progress(self):
        return tuple(self.state)

    def arm(self):
        self.armed = True

    def drain(self):
        pass

    def run(self):
        self.stopped.wait()
        return ("stopped", b"", 0)

    def stop(self):
        self.stopped.set()

    def close(self):
        pass


class Reactor(task.Clock):
    """A fake clock with the reader calls ``ReceiveThread`` makes."""

    def addReader(self, reader):
        pass

    def removeReader(self, reader):
        pass

    def callFromThread(self, f, *args):
        pass


@pytest.fixture
def thread():
    reactor, loop, taken = Reactor(), ScriptedLoop(end=END, reported=REPORTED), []
    thread = receiver.ReceiveThread(reactor, loop, lambda *progress: taken.append(progress),
                                    lambda *answer: None)
    thread.start()
    yield thread, loop, reactor, taken
    thread.stop()


def test_a_read_after_a_quiet_spell_is_taken_at_once(thread):
    receive, loop, reactor, taken = thread
    assert loop.armed and not reactor.getDelayedCalls()
    loop.read(100)
    receive.doRead()  # the loop's wake-up
    assert taken == [(END + 100, 100, END + 100, 1)]


def test_a_steady_stream_is_taken_every_interval(thread):
    receive, loop, reactor, taken = thread
    loop.read(100)
    receive.doRead()
    loop.read(200)
    loop.read(300)
    reactor.advance(receiver.PROGRESS_INTERVAL * 0.9)
    assert len(taken) == 1
    reactor.advance(receiver.PROGRESS_INTERVAL * 0.1)
    assert taken[1] == (END + 600, 500, END + 600, 2)


def test_a_look_that_finds_nothing_rearms_and_stops_looking(thread):
    receive, loop, reactor, taken = thread
    loop.read(100)
    receive.doRead()
    assert not loop.armed
    reactor.advance(receiver.PROGRESS_INTERVAL)
    assert loop.armed and not reactor.getDelayedCalls() and len(taken) == 1
    loop.read(50)
    receive.doRead()
    assert taken[-1] == (END + 150, 50, END + 150, 1)
