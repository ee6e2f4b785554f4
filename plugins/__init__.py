"""rmqproto's plugin package: implementations of the pluggable parts (``rmqproto.pluggable``).

Each module here exposes objects providing a pluggable interface; they are found with
``twisted.plugin.getPlugins``. Third parties add modules to this package (or pass their own
package to ``rmqproto.pluggable.find``).
"""
