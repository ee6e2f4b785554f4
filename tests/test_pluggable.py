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


def test_plugins_folder_is_the_rmqproto_plugins_package():
    assert find(IMessageStoreFactory, "default").__module__ == "rmqproto_plugins.rmqproto_stores"


def test_an_install_has_rmqproto_plugins_and_no_top_level_plugins(tmp_path):
    """What ``pip install .`` copies (setup.py's build_py) finds the default store by itself."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(tmp_path)],
                   cwd=root, check=True, capture_output=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rmqproto", "rmqproto_plugins", "twisted"]
    probe = ("from rmqproto.pluggable import IMessageStoreFactory, find\n"
             "print(find(IMessageStoreFactory, 'default').__module__)")
    found = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                           text=True, env={"PYTHONPATH": str(tmp_path)})
    assert found.stdout.strip() == "rmqproto_plugins.rmqproto_stores", found.stderr
