"""Configuration the Java way: ``.properties`` files and RocketMQ's own property names."""

from rmqproto.config.javaprops import dump_properties, load_properties, parse_properties
from rmqproto.config.settings import ConfigError, Setting, Settings

__all__ = ["ConfigError", "Setting", "Settings", "dump_properties", "load_properties",
           "parse_properties"]
