"""Pluggable parts are found by name among the plugins of a package."""


import pytest

from rmqproto.pluggable import IMessageStoreFactory, PluginNotFoundError, available, find


def test_the_default_store_plugin_is_found():
    assert find(IMessageStoreFactory, "default").name == "default"


def test_a_third_party_package_adds_a_store(tmp_path, monkeypatch):
    package = tmp_path / "thirdparty_plugins"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "memory.py").write_text(
        "from zope.interface import provider\n"
        "from rmqproto.pluggable import IMessageStoreFactory\n"
        "@provider(IMessageStoreFactory)\n"
        "class MemoryStore:\n"
        "    name = 'memory'\n"
        "    description = 'test'\n"
        "    @staticmethod\n"
        "    def create(config, reactor):\n"
        "        return ('memory store', config)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import thirdparty_plugins
    assert set(available(IMessageStoreFactory, thirdparty_plugins)) == {"memory"}
    store = find(IMessageStoreFactory, "memory", thirdparty_plugins).create({"x": 1}, None)
    assert store == ("memory store", {"x": 1})


def test_unknown_name_is_a_clear_error():
    with pytest.raises(PluginNotFoundError, match="no IMessageStoreFactory plugin named 'nope'"):
        find(IMessageStoreFactory, "nope")


def test_broker_builds_the_store_named_by_store_type(tmp_path):
    from twisted.internet.task import Clock

    from rmqproto.broker.config import SETTINGS
    from rmqproto.broker.controller import create_store
    from rmqproto.store.defaultstore import DefaultMessageStore

    config, _ = SETTINGS.resolve({"storePathRootDir": str(tmp_path)})
    assert isinstance(create_store(config, Clock()), DefaultMessageStore)
    with pytest.raises(PluginNotFoundError, match="named 'rocksdb'"):
        create_store(dict(config, storeType="rocksdb"), Clock())
    with pytest.raises(PluginNotFoundError, match="use storeType|storeType instead"):
        create_store(dict(config, messageStorePlugIn="com.example.Wrapper"), Clock())
