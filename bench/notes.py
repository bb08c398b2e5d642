"""Retrieval on notes: Logseq's documentation graph, ingested through a real daemon,
and questions written for it (`bench/data/logseq-questions.json`, how they were
written is in the file): the notes domain beside LoCoMo's conversations.

    .venv/bin/python bench/notes.py [--k 10] [--out FILE]

Each question is one `memory_smart_search` with default parameters; a hit is a
memory ingested from one of the pages the question names. Printed: R@1, R@5, R@10
and MRR, overall and by kind (`title`, `paraphrase`), and each question's rank.
`--out FILE` writes each question's ranking (the pages of its top k, in order) as
JSON, for `bench/same_rankings.py` (each memory named by its page and content hash).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.protocol import start_daemon  # noqa: E402
from memoryd_client import Client  # noqa: E402

GRAPH = REPO.parent / "shared" / "bench" / "ingest" / "logseq-docs"
QUESTIONS = REPO / "bench" / "data" / "logseq-questions.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--quiet", action="store_true", help="no line per question")
    ap.add_argument("--out", type=Path, help="write each question's ranking as JSON")
    args = ap.parse_args()
    questions = json.loads(QUESTIONS.read_text())["questions"]
    ranks: list[tuple[dict, int | None]] = []
    per_question: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="notes-") as tmp:
        root = Path(tmp) / "root"
        proc = start_daemon(root)
        try:
            with Client(root / "memory.sock", timeout=600) as c:
                c.call("memory_ingest", {"source": "logseq", "path": str(GRAPH)})
                for q in questions:
                    found = c.call("memory_smart_search", {"query": q["q"],
                                                           "top_k": args.k})["memories"]
                    names = [Path(m.get("source_path") or "").name for m in found]
                    rank = next((i + 1 for i, n in enumerate(names) if n in q["pages"]), None)
                    ranks.append((q, rank))
                    # a page's memories by their content (their ids differ between runs)
                    per_question.append({"question": q["q"], "retrieved": [
                        f"{n}#{(m.get('content_hash') or '')[:12]}"
                        for n, m in zip(names, found, strict=True)]})
                    if not args.quiet:
                        print(f"{rank or '-':>3}  {q['q']}  (top: {names[0] if names else '-'})")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
    if args.out:
        args.out.write_text(json.dumps({"per_question": per_question}, ensure_ascii=False,
                                       indent=1))
    print(f"{'':12} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6} {'n':>4}")
    for kind in ("overall", "title", "paraphrase"):
        got = [r for q, r in ranks if kind == "overall" or q["kind"] == kind]
        if got:
            at = [sum(r is not None and r <= k for r in got) / len(got) for k in (1, 5, 10)]
            mrr = sum(1 / r for r in got if r) / len(got)
            print(f"{kind:12} {at[0]:6.3f} {at[1]:6.3f} {at[2]:6.3f} {mrr:6.3f} {len(got):4}")


if __name__ == "__main__":
    main()
