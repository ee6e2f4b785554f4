"""Every store the project has provides the whole IMessageStore interface, with its
signatures: the default store as the ``default`` plugin makes it, and the in-memory
store of the broker tests."""

from twisted.internet.task import Clock
from zope.interface.verify import verifyObject

from rmqproto.pluggable import IMessageStoreFactory, find
from rmqproto.store.config import STORE_SETTINGS
from rmqproto.store.defaultstore import DefaultMessageStore
from rmqproto.store.interfaces import IMessageStore
from support.fakestore import FakeStore


def test_default_store_provides_the_interface(tmp_path):
    config, _ = STORE_SETTINGS.resolve({"storePathRootDir": str(tmp_path)})
    store = find(IMessageStoreFactory, "default").create(config, Clock())
    assert isinstance(store, DefaultMessageStore)
    assert verifyObject(IMessageStore, store)


def test_the_in_memory_test_store_provides_the_interface():
    assert verifyObject(IMessageStore, FakeStore())
