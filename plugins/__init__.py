"""rmqproto's plugin package: implementations of the pluggable parts (``rmqproto.pluggable``).

This folder installs as the package ``rmqproto_plugins`` (a top-level ``plugins`` would
clash with other projects'); run from a checkout it is imported under that name too.

Each module here exposes objects providing a pluggable interface; they are found with
``twisted.plugin.getPlugins``. Third parties add modules to this package (or pass their own
package to ``rmqproto.pluggable.find``).
"""
