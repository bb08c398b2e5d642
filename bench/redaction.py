"""How much ordinary text the redactor touches (its false positives), and how fast it is.

Text that holds no secret: LoCoMo's conversation turns, the Logseq documentation graph
(`../shared/bench/ingest/logseq-docs`), and the Python source of a few installed
packages (code names keys and tokens often, and assigns them things that are not
secrets). Each line is cleaned alone; a line that comes back changed is a false
positive, counted by the rule that changed it, with a few shown.

    python bench/redaction.py [--show 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from memoryd.secrets.redact import Redactor

SHARED = Path(__file__).resolve().parents[2] / "shared" / "bench"
PACKAGES = ("chromadb", "trio", "msgspec", "structlog")


def locomo() -> Iterator[str]:
    for conv in json.loads((SHARED / "locomo" / "locomo10.json").read_text()):
        for key, turns in conv["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                yield from (t["text"] for t in turns)


def logseq() -> Iterator[str]:
    for path in sorted((SHARED / "ingest" / "logseq-docs").rglob("*.md")):
        yield from path.read_text(errors="replace").splitlines()


def python() -> Iterator[str]:
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        for path in sorted(Path(spec.origin).parent.rglob("*.py")):
            yield from path.read_text(errors="replace").splitlines()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", type=int, default=5, help="changed lines shown a set")
    args = parser.parse_args()
    redactor = Redactor()
    for name, lines in (("locomo turns", locomo), ("logseq lines", logseq),
                        (f"python lines ({', '.join(PACKAGES)})", python)):
        texts = [t for t in lines() if t.strip()]
        started = time.perf_counter()
        changed: list[str] = []
        kinds: Counter[str] = Counter()
        for text in texts:
            cleaned, cut = redactor.scrub(text, record=False)
            if cleaned != text:
                changed.append(text.strip()[:120])
                kinds.update(cut)
        seconds = time.perf_counter() - started
        size = sum(len(t) for t in texts) / 1e6
        print(f"{name}: {len(changed)} of {len(texts)} changed "
              f"({100 * len(changed) / max(1, len(texts)):.2f}%), by rule {dict(kinds)}; "
              f"{size / seconds:.1f} MB/s")
        for line in changed[:args.show]:
            print(f"    {line}")


if __name__ == "__main__":
    main()
