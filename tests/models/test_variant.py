"""Which embedder a store uses: `embedder.variant: auto` and index/embedder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memoryd.config import ConfigError, EmbedderConfig
from memoryd.models import variant


def test_a_new_store_gets_int8_and_keeps_it(tmp_path: Path) -> None:
    index = tmp_path / "index"
    assert variant.choose(index, "auto") == "int8"
    variant.record(index, "int8")
    (index / "keyword.sqlite").touch()  # the store is now built
    assert variant.choose(index, "auto") == "int8"
    assert (index / "embedder").read_text() == "int8\n"


def test_a_store_built_before_the_record_stays_fp32_until_reindexed(tmp_path: Path) -> None:
    index = tmp_path / "index"
    index.mkdir()
    (index / "keyword.sqlite").touch()
    assert variant.choose(index, "auto") == "fp32"
    variant.record(index, "fp32")
    assert variant.choose(index, "auto") == "fp32"
    assert variant.choose(index, "auto", rebuild=True) == "int8"


def test_the_config_wins_and_the_record_follows(tmp_path: Path) -> None:
    index = tmp_path / "index"
    variant.record(index, "int8")
    assert variant.choose(index, "fp32") == "fp32"
    assert variant.choose(index, "fp32", rebuild=True) == "fp32"
    variant.record(index, "fp32")
    assert variant.choose(index, "auto") == "fp32"


@pytest.mark.parametrize("content", [b"", b"fp16\n", b"\xff\xfe", b"int8" * 100])
def test_a_damaged_record_is_no_record(tmp_path: Path, content: bytes) -> None:
    index = tmp_path / "index"
    index.mkdir()
    (index / "embedder").write_bytes(content)
    assert variant.recorded(index) is None
    assert variant.choose(index, "auto") == "int8"  # no catalog: a new store
    (index / "keyword.sqlite").touch()
    assert variant.choose(index, "auto") == "fp32"


def test_a_record_that_is_a_symlink_or_fifo_is_not_followed(tmp_path: Path) -> None:
    index = tmp_path / "index"
    index.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("fp32\n")
    (index / "embedder").symlink_to(elsewhere)
    assert variant.recorded(index) is None
    (index / "embedder").unlink()
    os.mkfifo(index / "embedder")
    assert variant.recorded(index) is None  # and it did not block


def test_the_environment_forces_the_variant_and_threads(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    monkeypatch.delenv(variant.FORCE_VARIANT, raising=False)
    monkeypatch.delenv(variant.FORCE_THREADS, raising=False)
    configured = EmbedderConfig(variant="auto", threads=1)
    assert variant.forced(configured) == configured
    monkeypatch.setenv(variant.FORCE_VARIANT, "fp32")
    monkeypatch.setenv(variant.FORCE_THREADS, "2")
    assert variant.forced(configured) == EmbedderConfig(variant="fp32", threads=2)
    monkeypatch.setenv(variant.FORCE_VARIANT, "int4")
    with pytest.raises(ConfigError, match="MEMORYD_EMBEDDER='int4': expected one of fp32, int8"):
        variant.forced(configured)
    monkeypatch.setenv(variant.FORCE_VARIANT, "int8")
    monkeypatch.setenv(variant.FORCE_THREADS, "0")
    with pytest.raises(ConfigError, match="MEMORYD_EMBEDDER_THREADS='0'"):
        variant.forced(configured)
