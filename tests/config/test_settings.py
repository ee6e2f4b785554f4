"""Declared settings: typed values from files and the command line, help text, errors."""

import pytest
from twisted.python import usage

from rmqproto.config import ConfigError, Setting, Settings, at_least, in_range, parses_with

SETTINGS = Settings(
    Setting("listenPort", 9876, "port to listen on"),
    Setting("orderMessageEnable", False, "serve ORDER_TOPIC_CONFIG"),
    Setting("brokerRole", "ASYNC_MASTER", "role", choices=("ASYNC_MASTER", "SLAVE")),
)
CHECKED = Settings(
    *SETTINGS.by_name.values(),
    Setting("flushIntervalCommitLog", 500, "ms between flushes", check=at_least(1)),
    Setting("deleteWhen", "04", "hours", check=parses_with(int)),
    Setting("namesrvPort", 9876, "port", check=in_range(0, 65535)),
)


def test_defaults_then_sources_in_order():
    values, unknown = SETTINGS.resolve({"listenPort": "1", "x": "y"}, {"listenPort": "2"})
    assert values == {"listenPort": 2, "orderMessageEnable": False, "brokerRole": "ASYNC_MASTER"}
    assert unknown == ["x"]


def test_java_boolean_parsing():
    values, _ = SETTINGS.resolve({"orderMessageEnable": "TRUE"})
    assert values["orderMessageEnable"] is True
    values, _ = SETTINGS.resolve({"orderMessageEnable": "yes"})
    assert values["orderMessageEnable"] is False


@pytest.mark.parametrize("source", [{"listenPort": "abc"}, {"brokerRole": "MASTER"}])
def test_bad_values_are_config_errors(source):
    with pytest.raises(ConfigError):
        SETTINGS.resolve(source)


def test_checks_say_which_setting_and_why():
    with pytest.raises(ConfigError, match=r"flushIntervalCommitLog: -1: must be at least 1"):
        CHECKED.resolve({"flushIntervalCommitLog": "-1"})
    with pytest.raises(ConfigError, match=r"deleteWhen: 'x': invalid literal"):
        CHECKED.resolve({"deleteWhen": "x"})
    assert CHECKED.resolve({"flushIntervalCommitLog": "1"})[0]["flushIntervalCommitLog"] == 1
    for port in ("-1", "65536"):
        with pytest.raises(ConfigError, match=r"namesrvPort: %s: must be from 0 to 65535" % port):
            CHECKED.resolve({"namesrvPort": port})
    assert CHECKED.resolve({"namesrvPort": "65535"})[0]["namesrvPort"] == 65535


def test_validate_checks_typed_values_and_leaves_other_names_alone():
    CHECKED.validate({"flushIntervalCommitLog": 1, "brokerRole": "SLAVE", "other": -1})
    with pytest.raises(ConfigError, match="flushIntervalCommitLog: 0"):
        CHECKED.validate({"flushIntervalCommitLog": 0})
    with pytest.raises(ConfigError, match="brokerRole"):
        CHECKED.validate({"brokerRole": "MASTER"})


def test_options_read_file_then_command_line(tmp_path):
    conf = tmp_path / "namesrv.properties"
    conf.write_text("listenPort=1000\norderMessageEnable=true\nunknownThing=1\n")
    options = SETTINGS.options("[options]", "test")()
    options.parseOptions(["-c", str(conf), "--listenPort", "2000"])
    assert options.values["listenPort"] == 2000
    assert options.values["orderMessageEnable"] is True
    assert options.unknown == ["unknownThing"]
    assert "listenPort" in str(options) and "[default: 9876]" in str(options)


def test_options_reject_bad_values():
    with pytest.raises(usage.UsageError):
        SETTINGS.options("", "")().parseOptions(["--listenPort", "x"])
