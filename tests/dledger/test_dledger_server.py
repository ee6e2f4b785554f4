"""DLedgerServer on a fake clock: a group of one, appends in-process and over the dispatcher,
currterm saved, the disk watched and expired segments deleted (``CleanSpaceService``)."""

import os
import time

from twisted.internet.task import Clock

from rmqproto.codec.dledger import decode_currterm
from rmqproto.codec.dledger_rpc import (
    AppendEntryRequest, AppendEntryResponse, DLedgerRequestCode, DLedgerResponseCode as Status,
)
from rmqproto.codec.frame import RemotingCommand, decode_frame
from rmqproto.dledger import DLedgerConfig, Role
from rmqproto.dledger.server import DLedgerServer
from rmqproto.remoting import RequestContext


def solo(tmp_path, **settings):
    clock = Clock()
    clock.advance(time.time())  # the files' modification times are real
    config = DLedgerConfig(group="g", selfId="n0", peers="n0-127.0.0.1:1",
                           storeBaseDir=str(tmp_path), mappedFileSizeForEntryData=4096,
                           mappedFileSizeForEntryIndex=32 * 64, **settings)
    server = DLedgerServer(config, clock)
    roles = []
    server.role_listeners.append(lambda term, role: roles.append(role))
    for _ in range(300):
        clock.advance(0.01)
        server.tick()
        if server.is_leader:
            break
    assert server.is_leader and roles[-1] is Role.LEADER
    return server, clock


def settled(deferred, clock=None):
    """What ``deferred`` fired with; with ``clock``, once the reactor's turn ended (an
    in-process append settles then at the earliest)."""
    if clock is not None:
        clock.advance(0)
    results = []
    deferred.addBoth(results.append)
    assert results, "not settled"
    return results[0]


def test_a_group_of_one_appends_and_saves_its_term(tmp_path):
    server, clock = solo(tmp_path)
    response, positions = settled(server.append(b"hello"), clock)
    assert (response.code, response.index, positions) == (Status.SUCCESS, 0, None)
    response, positions = settled(server.append([b"a", b"bb"]), clock)
    assert response.code == Status.SUCCESS and len(positions) == 2
    term, vote = decode_currterm((tmp_path / "dledger-n0" / "currterm").read_bytes())
    assert term == server.node.term and vote == "n0"
    request = RemotingCommand(int(DLedgerRequestCode.APPEND), opaque=3, body=AppendEntryRequest(
        group="g", remote_id="n0", body=b"over the wire").to_json())
    answered = server.dispatcher.dispatch(request, RequestContext(None, "10.0.0.1:1"))
    clock.advance(0)        # the end of the reactor's turn hands the request to the node
    frame = settled(answered)
    answer = decode_frame(frame[4:])
    assert answer.code == 200 and AppendEntryResponse.from_json(answer.body).index == 3
    bad = RemotingCommand(int(DLedgerRequestCode.APPEND), opaque=4, body=b"\xff{")
    frame = server.dispatcher.dispatch(bad, RequestContext(None, "10.0.0.1:1"))
    answer = AppendEntryResponse.from_json(decode_frame(frame[4:]).body)
    assert answer.code == Status.UNEXPECTED_ARGUMENT
    server.stop()


def test_a_full_disk_refuses_appends_until_there_is_room(tmp_path):
    server, clock = solo(tmp_path)
    server.clean_space(used_ratio=lambda path: 0.93)
    response, _ = settled(server.append(b"no room"), clock)
    assert response.code == Status.DISK_FULL
    server.clean_space(used_ratio=lambda path: 0.5)
    assert settled(server.append(b"room again"), clock)[0].code == Status.SUCCESS
    server.stop()


def test_expired_segments_go_when_the_disk_fills(tmp_path):
    server, clock = solo(tmp_path, fileReservedHours=1, deleteWhen="99")
    for i in range(60):
        assert settled(server.append(bytes(200)), clock)[0].code == Status.SUCCESS
    files = len(os.listdir(tmp_path / "dledger-n0" / "data"))
    assert files > 3
    assert server.clean_space(used_ratio=lambda path: 0.5) == 0   # neither the hour nor full
    clock.advance(2 * 3600)
    assert server.clean_space(used_ratio=lambda path: 0.75) == files - 1
    assert server.store.begin_index > 0
    server.stop()
