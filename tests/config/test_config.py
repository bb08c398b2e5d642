from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from memoryd.config import Config, ConfigError, Duration, load_config, parse_config

EXAMPLE = Path(__file__).parents[2] / "config.example.yaml"


@pytest.mark.parametrize("text, seconds", [("168h", 604800), ("30d", 2592000), ("60s", 60),
                                           ("10m", 600), ("1h30m", 5400), ("250ms", 0.25),
                                           ("2w", 1209600), (90, 90), (1.5, 1.5)])
def test_durations(text, seconds):
    assert Duration.parse(text) == seconds


@pytest.mark.parametrize("bad", ["", "7 days", "h", "10x", "-5s", True, None, [1]])
def test_bad_durations(bad):
    with pytest.raises(ValueError):
        Duration.parse(bad)


def test_errors_name_the_key():
    with pytest.raises(ConfigError, match=r"storage\.inbox_ttl"):
        parse_config({"storage": {"inbox_ttl": "forever"}})
    with pytest.raises(ConfigError, match="unknown field `nope`"):
        parse_config({"server": {"nope": 1}})
    with pytest.raises(ConfigError, match="max_connections"):
        parse_config({"server": {"max_connections": 0}})
    with pytest.raises(ConfigError, match="mapping"):
        parse_config(["a"])


def test_missing_file_means_defaults(tmp_path):
    assert load_config(tmp_path / "absent.yaml") == Config()
    (tmp_path / "empty.yaml").write_text("")
    assert load_config(tmp_path / "empty.yaml") == Config()


def _keys(obj, prefix=""):
    for key, value in obj.items():
        yield prefix + key
        if isinstance(value, dict):
            yield from _keys(value, prefix + key + ".")


def test_example_documents_every_key_and_is_valid():
    example = yaml.safe_load(EXAMPLE.read_text())
    assert parse_config(example) == Config(), "the example shows the defaults"
    import msgspec
    defaults = msgspec.to_builtins(Config(), enc_hook=float)
    assert set(_keys(example)) == set(_keys(defaults))
