"""A group of three ``twistd -n rmq-dledger --metricsPort …``: every member's ``/metrics``
parses with prometheus_client's parser; the leader there is the one the group's METADATA
answers name, all members show one term, the leader's water marks reach every member's
ledger end, and its append latency histogram counts the appends; killing the leader shows a
new leader with a higher term and a counted election."""

import pytest

from support.dledgergroup import Group
from support.scrape import scrape, value
from support.syncclient import wait_until

SMALL = dict(mappedFileSizeForEntryData=64 * 1024, mappedFileSizeForEntryIndex=32 * 1024,
             heartBeatTimeIntervalMs=300, maxHeartBeatLeak=3, checkPointInterval=200)


@pytest.fixture
def group(tmp_path):
    group = Group(tmp_path, metrics=True, **SMALL)
    group.start_all()
    yield group
    group.stop()


def view(group, members):
    return {m: scrape(group.metrics_ports[m]) for m in members}


def test_metrics_follow_the_group_and_its_elections(group):
    first = group.wait_leader()
    last = [group.append_ok(b"entry %d" % i) for i in range(10)][-1]

    def replicated():
        samples = view(group, group.ids)
        return all(value(s, "rmqproto_dledger_committed_index") == last
                   and value(s, "rmqproto_dledger_ledger_end_index") == last
                   for s in samples.values())

    wait_until(replicated, timeout=20)
    samples = view(group, group.ids)
    term = value(samples[first], "rmqproto_dledger_term")
    assert term >= 1
    for member, s in samples.items():
        assert value(s, "rmqproto_dledger_term", id=member) == term
        assert value(s, "rmqproto_dledger_is_leader") == int(member == first)
        role = "LEADER" if member == first else "FOLLOWER"
        assert value(s, "rmqproto_dledger_role", role=role) == 1
    marks = {labels["peer"]: v for labels, v in samples[first]["rmqproto_dledger_peer_water_mark"]}
    assert marks == {member: last for member in group.ids}
    assert all("rmqproto_dledger_peer_water_mark" not in s  # a family without samples
               for m, s in samples.items() if m != first)
    # every append the leader settled is in its latency histogram; followers settled none
    count = value(samples[first], "rmqproto_dledger_append_latency_seconds_count")
    assert count >= 10
    assert value(samples[first], "rmqproto_dledger_append_latency_seconds_bucket", le="+Inf") == count
    assert value(samples[first], "rmqproto_dledger_append_latency_seconds_sum") >= 0
    assert all(value(s, "rmqproto_dledger_append_latency_seconds_count") == 0
               for m, s in samples.items() if m != first)

    group.kill(first)
    survivors = [m for m in group.ids if m != first]

    def new_leader():
        current = view(group, survivors)
        leaders = [m for m, s in current.items() if value(s, "rmqproto_dledger_is_leader") == 1]
        return leaders and current

    current = wait_until(new_leader, timeout=20)
    (second,) = [m for m, s in current.items() if value(s, "rmqproto_dledger_is_leader") == 1]
    assert value(current[second], "rmqproto_dledger_term") > term
    assert value(current[second], "rmqproto_dledger_elections_total") >= 1
    assert value(current[second], "rmqproto_dledger_leaderships_total") >= 1
    assert group.wait_leader(survivors) == second
