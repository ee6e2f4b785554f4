"""Configuration the Java way: ``.properties`` files and RocketMQ's own property names."""

from rmqproto.config.javaprops import dump_properties, load_properties, parse_properties
from rmqproto.config.settings import (ConfigError, Setting, Settings, at_least, in_range,
                                     parses_with)

__all__ = ["ConfigError", "Setting", "Settings", "at_least", "dump_properties", "in_range",
           "load_properties", "parse_properties", "parses_with"]
