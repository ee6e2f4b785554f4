"""Which NameServer a client asks next: Java's choice and three others.

A strategy is named by ``nameServerStrategy`` or given as a subclass of
:class:`NameServerStrategy`. Every strategy is told of each request it placed (:meth:`begin`) and how it ended
(:meth:`end`); :meth:`choose` names the address for the next one. Pure: the caller
passes ``now`` and a ``random.Random``.

- ``random`` (Java, ``NettyRemotingClient#getAndCreateNameserverChannel``): start at a
  random NameServer, keep it while it answers, move to the next one after a failure.
- ``fixed``: always the first NameServer listed (pins every client to it).
- ``round-robin``: the next NameServer for every request.
- ``fewest-connections``: the NameServer this client has the fewest requests open on,
  skipping for ``retry_after_ms`` one that just failed; ties go to the one least used.
"""

from rmqproto.client.errors import ClientError


class NameServerStrategy:
    """Base: the address list and the bookkeeping every strategy shares."""

    name = None

    def __init__(self, addresses, rng):
        self.addresses = list(addresses)
        self.rng = rng

    def choose(self, now):
        raise NotImplementedError

    def begin(self, address, now):
        """A request to ``address`` starts."""

    def end(self, address, ok, now):
        """The request to ``address`` ended: answered (``ok``) or failed."""


class RandomSticky(NameServerStrategy):
    name = "random"

    def __init__(self, addresses, rng):
        super().__init__(addresses, rng)
        self.index = rng.randrange(len(self.addresses)) if self.addresses else 0

    def choose(self, now):
        return self.addresses[self.index % len(self.addresses)]

    def end(self, address, ok, now):
        if not ok and address == self.choose(now):
            self.index += 1


class Fixed(NameServerStrategy):
    name = "fixed"

    def choose(self, now):
        return self.addresses[0]


class RoundRobin(RandomSticky):
    name = "round-robin"
    end = NameServerStrategy.end

    def choose(self, now):
        self.index += 1
        return super().choose(now)


class FewestConnections(NameServerStrategy):
    name = "fewest-connections"
    retry_after_ms = 30_000

    def __init__(self, addresses, rng):
        super().__init__(addresses, rng)
        self.open = dict.fromkeys(self.addresses, 0)
        self.used = dict.fromkeys(self.addresses, 0)
        self.failed_at = {}
        self.rng.shuffle(self.addresses)

    def choose(self, now):
        def key(address):
            failed = self.failed_at.get(address)
            resting = failed is not None and now - failed < self.retry_after_ms
            return (resting, self.open[address], self.used[address])
        return min(self.addresses, key=key)

    def begin(self, address, now):
        self.open[address] += 1
        self.used[address] += 1

    def end(self, address, ok, now):
        self.open[address] -= 1
        if ok:
            self.failed_at.pop(address, None)
        else:
            self.failed_at[address] = now


STRATEGIES = {cls.name: cls for cls in (RandomSticky, Fixed, RoundRobin, FewestConnections)}


def make_strategy(name, addresses, rng):
    """The strategy called ``name`` (a key of :data:`STRATEGIES`) over ``addresses``;
    ``name`` may also be a :class:`NameServerStrategy` subclass of the caller's own."""
    if isinstance(name, type) and issubclass(name, NameServerStrategy):
        return name(addresses, rng)
    try:
        cls = STRATEGIES[name]
    except KeyError:
        raise ClientError("unknown nameServerStrategy %r (known: %s)"
                          % (name, ", ".join(sorted(STRATEGIES)))) from None
    return cls(addresses, rng)
