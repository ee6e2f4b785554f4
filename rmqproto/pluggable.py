"""Pluggable parts: interfaces that plugins in ``plugins/`` provide, and how they are found.

A plugin is any object in a module of the ``rmqproto_plugins`` package (the checkout's
``plugins/`` folder, installed under that name) or of another package named by the
caller, that provides one of these interfaces; :func:`find` picks it by name, so a broker
config names the part it wants (``storeType=default``) and nobody edits the core to swap
one.
"""

import importlib.util
import os
import sys

from twisted.plugin import IPlugin, getPlugins
from zope.interface import Attribute

from rmqproto.errors import RmqError

__all__ = ["IMessageStoreFactory", "PluginNotFoundError", "find", "available"]


class PluginNotFoundError(RmqError):
    """No plugin of the wanted interface has the configured name."""


class IMessageStoreFactory(IPlugin):
    """Makes the broker's :class:`~rmqproto.store.interfaces.IMessageStore`."""

    name = Attribute("The name a broker config selects it by (``messageStorePlugin``).")
    description = Attribute("One line for --help and logs.")

    def create(config, reactor):
        """A new, not yet loaded store for the broker settings ``config``."""


#: The name ``plugins/`` is installed under (setup.py's ``package_dir``).
PLUGINS_PACKAGE = "rmqproto_plugins"


def _package(package):
    if package is not None:
        return package
    try:
        return importlib.import_module(PLUGINS_PACKAGE)
    except ImportError:
        return _checkout_plugins()


def _checkout_plugins():
    """``plugins/`` beside ``rmqproto/``, imported as :data:`PLUGINS_PACKAGE`: run from a
    checkout (``PYTHONPATH``, or an editable install, which does not map folder names)."""
    folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "plugins")
    spec = importlib.util.spec_from_file_location(
        PLUGINS_PACKAGE, os.path.join(folder, "__init__.py"),
        submodule_search_locations=[folder])
    package = importlib.util.module_from_spec(spec)
    sys.modules[PLUGINS_PACKAGE] = package
    spec.loader.exec_module(package)
    return package


def available(interface, package=None):
    """Every plugin providing ``interface``, by name."""
    return {plugin.name: plugin for plugin in getPlugins(interface, _package(package))}


def find(interface, name, package=None):
    """The plugin providing ``interface`` called ``name``; raises :class:`PluginNotFoundError`."""
    plugins = available(interface, package)
    try:
        return plugins[name]
    except KeyError:
        raise PluginNotFoundError("no %s plugin named %r (available: %s)" % (
            interface.__name__, name, ", ".join(sorted(plugins)) or "none")) from None


