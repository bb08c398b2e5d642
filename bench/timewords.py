"""The time words of questions (`bench/data/time-phrasings.txt`, written before the
parser read them): the window each names, read against Saturday 15 June 2024.

    .venv/bin/python bench/timewords.py

Printed: each phrase and its window (or "-" when it names none), and how many name one.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from memoryd.lang.timewords import find  # noqa: E402

PHRASES = REPO / "bench" / "data" / "time-phrasings.txt"
REFERENCE = datetime(2024, 6, 15, 12, tzinfo=UTC)


def main() -> None:
    lines = [line.strip() for line in PHRASES.read_text().splitlines()]
    phrases = [line for line in lines if line and not line.startswith("#")]
    named = 0
    for phrase in phrases:
        window = find(phrase, REFERENCE)
        named += window is not None
        shown = "-" if window is None else (
            f"{window.start.date()} .. {(window.end - timedelta(days=1)).date()}")
        print(f"{phrase:42} {shown}")
    print(f"named a window: {named} of {len(phrases)}")


if __name__ == "__main__":
    main()
