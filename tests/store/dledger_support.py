"""DLedger stores in one process for tests: members of a group on loopback, each a
``DLedgerMessageStore`` whose DLedger RPC is served on its peer port (what the broker
service does), on a real reactor (``support.realreactor.run_reactor``)."""

import os

from twisted.internet import defer

from rmqproto.codec.message import MessageRecord, decode_message_id, decode_record
from rmqproto.remoting import RemotingFactory
from rmqproto.store.dledger import DLedgerMessageStore
from support.processes import free_port
from support.realreactor import poll_until

STORE_HOST = ("10.9.8.7", 10911)
#: Small segments, index files and timeouts so that rolls happen and tests stay quick.
SMALL = dict(mappedFileSizeCommitLog=64 * 1024, mappedFileSizeConsumeQueue=10 * 20,
             maxHashSlotNum=64, maxIndexNum=200)
DLEDGER_SMALL = dict(mappedFileSizeForEntryIndex=32 * 1024, maxWaitAckTimeMs=600)


def record(topic="TopicA", queue_id=0, body=b"hello", **properties):
    return MessageRecord(topic, body, dict(properties), queue_id=queue_id,
                         born_host=("10.1.2.3", 50000), store_host=STORE_HOST,
                         born_timestamp=1700000000000)


def offset_of(msg_id):
    return decode_message_id(msg_id)[1]


class Group:
    """Members ``ids`` of group ``g`` under ``root``/<id>, ports picked free."""

    def __init__(self, reactor, root, ids=("n0", "n1", "n2"), **config):
        self.reactor = reactor
        self.root = root
        self.ids = list(ids)
        self.peers = ";".join("%s-127.0.0.1:%d" % (m, free_port()) for m in self.ids)
        self.config = config
        self.stores = {}
        self.ports = {}

    def settings(self, member):
        values = dict(SMALL, storePathRootDir=os.path.join(str(self.root), member),
                      enableDLegerCommitLog=True, dLegerGroup="g", dLegerPeers=self.peers,
                      dLegerSelfId=member, brokerRole="SYNC_MASTER")
        values.update(self.config)
        return values

    def open(self, member, settings=None):
        """Load and start ``member``'s store and serve its DLedger RPC."""
        store = DLedgerMessageStore(settings or self.settings(member), self.reactor,
                                    dledger_settings=DLEDGER_SMALL)
        store.load()
        store.start()
        port = int(store.dledger.address.rsplit(":", 1)[1])
        if len(self.ids) > 1:
            self.ports[member] = self.reactor.listenTCP(
                port, RemotingFactory(store.dledger.dispatcher, self.reactor),
                interface="127.0.0.1")
        self.stores[member] = store
        return store

    def open_all(self):
        for member in self.ids:
            self.open(member)

    @defer.inlineCallbacks
    def close(self, member):
        """Stop serving ``member`` (its connections dropped, as when its process ends),
        then shut its store down."""
        store = self.stores.pop(member)
        listener = self.ports.pop(member, None)
        if listener is not None:
            yield listener.stopListening()
            for connection in list(listener.factory.connections):
                connection.transport.abortConnection()
        store.shutdown()

    @defer.inlineCallbacks
    def close_all(self):
        for member in list(self.stores):
            yield self.close(member)

    def leader(self):
        leaders = [s for s in self.stores.values() if s.dledger.is_leader]
        return leaders[0] if len(leaders) == 1 else None

    @defer.inlineCallbacks
    def wait_for_leader(self, timeout=15.0):
        yield poll_until(self.reactor, lambda: self.leader() is not None, timeout)
        return self.leader()


def pull_bodies(store, offset, count, topic="TopicA", queue_id=0):
    """The bodies of pulls from ``offset`` until ``count`` of them or nothing more (one pull
    ends at the end of a consume-queue file)."""
    bodies = []
    while len(bodies) < count:
        got = store.get_message("g", topic, queue_id, offset, count - len(bodies))
        if not got.messages:
            break
        bodies += [decode_record(m).body for m in got.messages]
        offset = got.next_begin_offset
    return bodies


def put(store, *records):
    """A Deferred of the PutMessageResult of one record (or of a batch of several)."""
    if len(records) == 1:
        return defer.maybeDeferred(store.put_message, records[0])
    return defer.maybeDeferred(store.put_messages, list(records))
