"""The console's view without I/O: lag histories, slaves that go and come back, elections."""

from rmqproto.console.view import ConsoleView


def _ha(top, *slaves):
    return {"ha": [{"broker": "broker-a", "master": "m:1", "maxOffset": top,
                    "slaves": [{"address": a, "ackOffset": o, "inSync": s} for a, o, s in slaves]}]}


def test_a_slave_that_goes_stays_with_a_growing_lag_and_comes_back():
    view = ConsoleView(window_ms=10_000)
    first = view.observe(_ha(100, ("s:1", 100, True)), now=1_000)["ha"][0]["slaves"][0]
    assert (first["lagBytes"], first["inSync"], first["connected"]) == (0, True, True)
    gone = view.observe(_ha(500), now=2_000)["ha"][0]["slaves"][0]
    assert (gone["address"], gone["lagBytes"], gone["inSync"], gone["connected"]) == (
        "s:1", 400, False, False)
    back = view.observe(_ha(500, ("s:1", 500, True)), now=3_000)["ha"][0]["slaves"][0]
    assert (back["lagBytes"], back["inSync"], back["connected"]) == (0, True, True)
    assert back["series"] == [(1_000, 0), (2_000, 400), (3_000, 0)]


def test_the_lag_series_keeps_only_the_window():
    view = ConsoleView(window_ms=1_000)
    for now in range(0, 5_000, 500):
        snapshot = view.observe(_ha(now, ("s:1", 0, True)), now=now)
    points = snapshot["ha"][0]["slaves"][0]["series"]
    assert [t for t, _ in points] == [3_500, 4_000, 4_500]


def _members(*members):
    return {"dledger": [{"group": "g", "members": [
        {"id": i, "role": r, "term": t} for i, r, t in members]}]}


def test_each_new_leader_or_term_is_an_election_mark():
    view = ConsoleView()
    one = view.observe(_members(("n0", "LEADER", 1), ("n1", "FOLLOWER", 1)), now=10)["dledger"][0]
    assert (one["leader"], one["term"], len(one["elections"])) == ("n0", 1, 1)
    same = view.observe(_members(("n0", "LEADER", 1), ("n1", "FOLLOWER", 1)), now=20)["dledger"][0]
    assert len(same["elections"]) == 1
    none = view.observe(_members(("n0", "UNREACHABLE", None), ("n1", "CANDIDATE", 2)),
                        now=30)["dledger"][0]
    assert none["leader"] is None and len(none["elections"]) == 1
    two = view.observe(_members(("n0", "UNREACHABLE", None), ("n1", "LEADER", 3)), now=40)["dledger"][0]
    assert (two["leader"], two["term"]) == ("n1", 3)
    assert [(m["term"], m["leader"]) for m in two["elections"]] == [(1, "n0"), (3, "n1")]
