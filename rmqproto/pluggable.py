"""Pluggable parts: interfaces that plugins in ``plugins/`` provide, and how they are found.

A plugin is any object in a module of the ``plugins`` package (or another package named
by the caller) that provides one of these interfaces; :func:`find` picks it by name, so
a broker config names the part it wants (``messageStorePlugin=default``) and nobody edits
the core to swap one.
"""

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


def _package(package):
    if package is None:
        import plugins as package
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


