"""Configuration the Java way: ``.properties`` files and RocketMQ's own property names."""

from rmqproto.config.javaprops import dump_properties, load_properties, parse_properties
from rmqproto.config.settings import ConfigError, Setting, Settings, at_least, parses_with

__all__ = ["ConfigError", "Setting", "Settings", "at_least", "dump_properties", "load_properties",
           "parse_properties", "parses_with"]
