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
from zope.interface import Attribute, Interface

from rmqproto.errors import RmqError

__all__ = ["IMessageStoreFactory", "IAccessValidator", "IAccessValidatorFactory",
           "PluginNotFoundError", "find", "available"]


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


class IAccessValidator(Interface):
    """Decides whether a request may be served (Java's ``AccessValidator``), and keeps the
    ACL the admin requests edit. Errors are :class:`~rmqproto.acl.AclError` s; their text
    is what the client is told."""

    def start():
        """Start watching the ACL for changes (it is loaded when the validator is made)."""

    def stop():
        """Stop watching."""

    def check(request, host):
        """Return when ``request`` (a decoded command) from ``host`` is allowed, else raise."""

    def update_access_config(config):
        """Add or replace an account (an :class:`~rmqproto.acl.edits.AccessConfig`); true
        when done."""

    def delete_access_config(access_key):
        """Remove the account of ``access_key``; false when there is none."""

    def update_global_white_addrs(patterns, path=None):
        """Set the global white addresses of the ACL file ``path`` (None: the default one)."""

    def version_info():
        """``(DataVersion of the default file or None, {file: DataVersion})``."""

    def all_config():
        """A :class:`~rmqproto.codec.bodies.acl.GetBrokerClusterAclConfigResponseBody`."""


class IAccessValidatorFactory(IPlugin):
    """Makes the broker's :class:`IAccessValidator` when ``aclEnable=true``."""

    name = Attribute("The name a broker config selects it by (``aclValidator``).")
    description = Attribute("One line for --help and logs.")

    def create(config, reactor):
        """A new validator for the broker settings ``config``, its ACL loaded, not yet started;
        raises :class:`~rmqproto.acl.AclError` when the ACL does not load."""


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


