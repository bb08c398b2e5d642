"""JSON Lines as the transcript and graph sources read them: each line decoded on its
own (a line that is not JSON is failed with its number, the others are read), and the
ISO 8601 times their lines carry."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import msgspec

from memoryd.ingest.document import Scan


def objects(scan: Scan, rel: str, text: str) -> Iterator[tuple[int, str, Any]]:
    """(line number, `rel:number`, decoded value) of each non-blank line of `text`."""
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        where = f"{rel}:{number}"
        try:  # msgspec, not json: it refuses a lone surrogate (\\udcff), no file holds
            entry = msgspec.json.decode(line)
        except msgspec.DecodeError as exc:
            scan.fail(where, f"not JSON: {exc}")
            continue
        except RecursionError:  # [[[[…: one line must not fail the whole transcript
            scan.fail(where, "not read: JSON nested too deeply")
            continue
        yield number, where, entry


def when(value: object) -> datetime | None:
    """An ISO 8601 time (`Z` or an offset), else None."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
