"""The store the project ships provides the whole IMessageStore interface."""

from twisted.internet.task import Clock
from zope.interface.verify import verifyObject

from rmqproto.store.config import STORE_SETTINGS
from rmqproto.store.defaultstore import DefaultMessageStore
from rmqproto.store.interfaces import IMessageStore


def test_default_store_provides_the_interface(tmp_path):
    config, _ = STORE_SETTINGS.resolve({"storePathRootDir": str(tmp_path)})
    assert verifyObject(IMessageStore, DefaultMessageStore(config, Clock()))
