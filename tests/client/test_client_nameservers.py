"""Each NameServer strategy as the NameServers see it: three ``twistd rmq-nameserver
--metricsPort`` and several clients looking routes up, each client's connection and
lookups read from the NameServers' own ``/metrics`` (``rmqproto_remoting_connections``,
``rmqproto_remoting_requests_total`` of GET_ROUTEINFO_BY_TOPIC). No broker is needed: a
lookup of an unknown topic is answered (TOPIC_NOT_EXIST) and counted all the same."""

import os
import random
import signal
from collections import Counter
from contextlib import ExitStack

import pytest
from twisted.internet import defer

from rmqproto.client import deferred
from rmqproto.client.blocking import now_ms
from rmqproto.client.errors import ClientError
from rmqproto.tools.rmqadmin.session import AdminSession
from support.daemons import start_nameserver
from support.processes import free_port, wait_for_port
from support.realreactor import poll_until, run_reactor
from support.scrape import scrape
from support.syncclient import wait_until

CLIENTS = 6
LOOKUPS = 6  # a client's lookups in a round: a multiple of the three NameServers
SEEDS = range(CLIENTS)  # the random strategy's seeds: clients on each NameServer


class NameServers:
    """Three of our NameServers, each serving ``/metrics``."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.daemons, self.addresses, self.metrics = [None] * 3, [None] * 3, [None] * 3
        for index in range(3):
            self.start(index)

    def start(self, index):
        workdir = self.workdir / ("ns%d-%d" % (index, free_port()))
        workdir.mkdir()
        self.metrics[index] = free_port()
        self.daemons[index], self.addresses[index] = start_nameserver(
            workdir, "--metricsPort", self.metrics[index])
        wait_for_port(self.metrics[index], 30, self.daemons[index])

    @property
    def namesrv_addr(self):
        return ";".join(self.addresses)

    def figures(self, indices=range(3)):
        """``[(live connections, lookups answered so far)]`` of the NameServers ``indices``."""
        found = []
        for index in indices:
            samples = scrape(self.metrics[index])
            connections = sum(v for _, v in samples["rmqproto_remoting_connections"])
            lookups = sum(v for labels, v in samples.get("rmqproto_remoting_requests_total", ())
                          if labels["code"] == "GET_ROUTEINFO_BY_TOPIC")
            found.append((int(connections), int(lookups)))
        return found

    def idle(self, indices=range(3)):
        """The lookups so far, once no client of an earlier test is connected any more."""
        return [lookups for _, lookups in wait_until(
            lambda: (lambda f: f if all(c == 0 for c, _ in f) else None)(self.figures(indices)))]

    def stop(self):
        for daemon in self.daemons:
            daemon.stop()


@pytest.fixture(scope="module")
def nameservers(tmp_path_factory):
    servers = NameServers(tmp_path_factory.mktemp("nameservers"))
    yield servers
    servers.stop()


def sessions(stack, nameservers, strategy):
    return [stack.enter_context(AdminSession(namesrvAddr=nameservers.namesrv_addr,
                                             nameServerStrategy=strategy, rng=random.Random(seed)))
            for seed in SEEDS]


def look_up(clients, rounds=LOOKUPS):
    """Each client looks ``rounds`` unknown topics up, the clients taking turns."""
    for round_ in range(rounds):
        for client in clients:
            data, _ = client.run(client.core.fetch_route("NoSuchTopic%d" % round_, now_ms()))
            assert data is None


def random_starts(indices=range(3)):
    """How many clients the random strategy starts on each NameServer: its first draw."""
    starts = Counter(random.Random(seed).randrange(3) for seed in SEEDS)
    return [starts[index] for index in indices]


@pytest.mark.parametrize("strategy", ["fixed", "round-robin", "fewest-connections", "random"])
def test_each_strategy_pins_or_spreads_the_clients(nameservers, strategy):
    before = nameservers.idle()
    with ExitStack() as stack:
        look_up(sessions(stack, nameservers, strategy))
        connections, lookups = zip(*nameservers.figures())
    lookups = [after - earlier for after, earlier in zip(lookups, before)]
    total = CLIENTS * LOOKUPS
    if strategy == "fixed":  # every client on the first NameServer listed
        assert list(connections) == [CLIENTS, 0, 0] and lookups == [total, 0, 0]
    elif strategy == "random":  # each client on one NameServer, the clients spread
        assert list(connections) == random_starts() and min(connections) > 0
        assert lookups == [c * LOOKUPS for c in connections]
    else:  # each client on all three, its lookups shared evenly
        assert list(connections) == [CLIENTS] * 3 and lookups == [total // 3] * 3


def test_fewest_connections_spares_a_name_server_slow_to_answer(nameservers):
    """The first NameServer is stopped (SIGSTOP): a client's first three lookups at once
    go one to each NameServer; the one left waiting on the stopped NameServer keeps the
    next lookups off it (round-robin would send it every third)."""
    before = nameservers.idle()
    stopped = nameservers.daemons[0].popen.pid

    async def scenario(reactor):
        admins = [deferred.Admin(reactor, namesrvAddr=nameservers.namesrv_addr,
                                 nameServerStrategy="fewest-connections") for _ in range(CLIENTS)]
        now = int(reactor.seconds() * 1000)
        waiting, answered = [], []
        for admin in admins:
            for i in range(3):
                waiting.append(admin.run(admin.core.fetch_route("Burst%d" % i, now)))
                waiting[-1].addCallback(answered.append)
        try:  # the other two answer their share of each burst; the stopped one keeps its own
            await poll_until(reactor, lambda: len(answered) == 2 * CLIENTS)
            for round_ in range(LOOKUPS):
                for admin in admins:
                    await admin.run(admin.core.fetch_route("Next%d" % round_, now))
        finally:
            os.kill(stopped, signal.SIGCONT)
            await defer.DeferredList(waiting, consumeErrors=True)
            for admin in admins:
                await admin.close()

    os.kill(stopped, signal.SIGSTOP)
    try:
        run_reactor(scenario, timeout=20)
    finally:
        os.kill(stopped, signal.SIGCONT)
    lookups = [after - earlier for after, earlier in zip(nameservers.idle(), before)]
    assert lookups[0] == CLIENTS  # one lookup of each client's burst, none after
    assert lookups[1] == lookups[2] == CLIENTS * (1 + LOOKUPS // 2)


@pytest.mark.parametrize("strategy", ["random", "round-robin", "fewest-connections", "fixed"])
def test_clients_move_on_from_a_killed_name_server(nameservers, strategy):
    """The first NameServer is killed (SIGKILL) while the clients are connected: every
    lookup after it is answered by the other two, except with ``fixed``, which pins."""
    nameservers.idle()
    with ExitStack() as stack:
        clients = sessions(stack, nameservers, strategy)
        look_up(clients, rounds=3)
        nameservers.daemons[0].kill()
        try:
            before = nameservers.idle([1, 2]) if strategy == "fixed" else [
                lookups for _, lookups in nameservers.figures([1, 2])]
            if strategy == "fixed":
                with pytest.raises(ClientError, match="no NameServer answered"):
                    look_up(clients, rounds=1)
                assert nameservers.idle([1, 2]) == before
                return
            look_up(clients)
            connections, lookups = zip(*nameservers.figures([1, 2]))
            lookups = [after - earlier for after, earlier in zip(lookups, before)]
            assert sum(lookups) == CLIENTS * LOOKUPS and min(lookups) > 0
            if strategy == "random":  # those of the killed one moved to the next one listed
                starts = random_starts()
                assert list(connections) == [starts[0] + starts[1], starts[2]]
                assert lookups == [c * LOOKUPS for c in connections]
            elif strategy == "fewest-connections":  # the killed one rests, the others share
                assert lookups[0] == lookups[1]
        finally:
            stack.close()
            nameservers.start(0)
