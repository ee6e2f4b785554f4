"""Declared settings with RocketMQ's property names, types and defaults.

A service declares its settings once; the same declaration gives typed values from a
Java ``.properties`` file and the command line, and the ``--help`` text of ``twistd``.
Unknown property names are returned, not fatal, as Java's ``MixAll.properties2Object``
ignores them.
"""

from twisted.python import usage

from rmqproto.config.javaprops import load_properties
from rmqproto.errors import CodecError, RmqError

__all__ = ["ConfigError", "Setting", "Settings"]


class ConfigError(RmqError):
    """A setting has a value its type does not allow."""


def _parse_bool(text):
    # Java's Boolean.parseBoolean: "true" in any case is true, anything else false.
    return text.strip().lower() == "true"


_PARSERS = {bool: _parse_bool, int: lambda t: int(t.strip()), float: lambda t: float(t.strip()),
            str: lambda t: t.strip()}


def at_least(minimum):
    """A :class:`Setting` check: the value is ``minimum`` or more."""
    def check(value):
        if value < minimum:
            return "must be at least %s" % (minimum,)
        return None
    return check


def in_range(low, high):
    """A :class:`Setting` check: the value is from ``low`` to ``high``, both included."""
    def check(value):
        if not low <= value <= high:
            return "must be from %s to %s" % (low, high)
        return None
    return check


def parses_with(parse):
    """A :class:`Setting` check: ``parse(value)`` does not raise ValueError (its message is
    the reason)."""
    def check(value):
        try:
            parse(value)
        except ValueError as exc:
            return str(exc)
        return None
    return check


class Setting:
    """One setting: its Java property name, default, help text and (optional) allowed values
    and ``check`` (``check(value)``: why the value is refused, or None)."""

    def __init__(self, name, default, doc, kind=None, choices=None, check=None):
        self.name = name
        self.default = default
        self.doc = doc
        self.kind = kind or type(default)
        self.choices = choices
        self.check = check

    def parse(self, text):
        """The typed value of ``text`` (values that are already typed pass through)."""
        if not isinstance(text, str):
            value = text
        else:
            try:
                value = _PARSERS[self.kind](text)
            except ValueError:
                raise ConfigError("%s: %r is not a valid %s" % (
                    self.name, text, self.kind.__name__)) from None
        if self.choices is not None and value not in self.choices:
            raise ConfigError("%s: %r is not one of %s" % (self.name, value,
                                                           ", ".join(map(str, self.choices))))
        problem = self.check(value) if self.check is not None else None
        if problem is not None:
            raise ConfigError("%s: %r: %s" % (self.name, value, problem))
        return value


class Settings:
    """A named collection of :class:`Setting` declarations."""

    def __init__(self, *settings):
        self.by_name = {}
        for setting in settings:
            if setting.name in self.by_name:
                raise ValueError("setting %s is declared twice" % setting.name)
            self.by_name[setting.name] = setting

    def resolve(self, *sources):
        """Typed values: defaults, then each mapping of ``sources`` in turn (later wins).

        Returns ``(values, unknown)`` where ``unknown`` lists property names no setting has.
        """
        values = {name: s.default for name, s in self.by_name.items()}
        unknown = []
        for source in sources:
            for name, text in source.items():
                setting = self.by_name.get(name)
                if setting is None:
                    unknown.append(name)
                else:
                    values[name] = setting.parse(text)
        return values, unknown

    def validate(self, values):
        """Raise :class:`ConfigError` for the first value of ``values`` (typed or text) that
        its setting refuses; names no setting has are left alone."""
        for name, value in values.items():
            setting = self.by_name.get(name)
            if setting is not None:
                setting.parse(value)

    def options(self, synopsis, description):
        """A ``usage.Options`` class: ``--configFile/-c`` plus one option per setting.

        After parsing, ``options.values`` holds the typed values (file, then command line),
        ``options.given`` the names of the settings either of them set,
        ``options.file_values`` the file's properties (text) and ``options.unknown`` the
        unrecognised property names of the file. A file that cannot be read stops the
        program with one line (``SystemExit``).
        """
        settings = self

        class Options(usage.Options):
            optParameters = [["configFile", "c", None,
                              "Java .properties file with these settings (e.g. an existing "
                              "broker.conf / namesrv.properties), read before the options below"]]
            optParameters += [[s.name, None, None, "%s [default: %s]" % (s.doc, s.default)]
                              for s in settings.by_name.values()]

            def postOptions(self):
                from_file = _read(self["configFile"]) if self["configFile"] else {}
                given = {name: self[name] for name in settings.by_name if self[name] is not None}
                try:
                    self.values, self.unknown = settings.resolve(from_file, given)
                except ConfigError as exc:
                    raise usage.UsageError(str(exc)) from None
                self.given = (set(from_file) | set(given)) & set(settings.by_name)
                self.file_values = from_file

        Options.synopsis = synopsis
        Options.longdesc = description
        return Options


def _read(path):
    """The properties of the ``-c`` file ``path``; exits with one line when it is unusable."""
    try:
        return load_properties(path)
    except OSError as exc:
        raise SystemExit("cannot read the configuration file %s (-c): %s"
                         % (path, exc.strerror or exc)) from None
    except CodecError as exc:
        raise SystemExit("the configuration file %s (-c) is not a .properties file: %s"
                         % (path, exc)) from None
