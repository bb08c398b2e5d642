"""Smart search on long histories: LongMemEval-sized scopes (about 500 turns and 115k
tokens each, mostly long answers), each question asked in its own scope.

    .venv/bin/python bench/locomo.py --data /tmp/lme-dev60.json --include-adversarial \\
        --reference-time --keep /tmp/keep-lme          # writes the store once (26 min)
    .venv/bin/python bench/history_speed.py /tmp/keep-lme [--data /tmp/lme-dev60.json]
        [--top-k 10]

A daemon is started on the kept root (`bench/locomo.py --keep`: its `root` folder).
Each question is asked three times, as `memory_smart_search` at its own date: the
first ask embeds the question (what an agent's new question costs), the others take
its vector from the embedder's cache (the ranking alone). Printed: p50 and p90 of each
pass, the p50 of each ranking stage (`memory_explain`'s timings), the scoring path
and the embedder's variant.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.protocol import as_utc, pct, start_daemon  # noqa: E402
from memoryd_client import Client  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kept", type=Path, help="the folder bench/locomo.py --keep wrote")
    parser.add_argument("--data", type=Path, default=Path("/tmp/lme-dev60.json"))
    parser.add_argument("--top-k", type=int, default=None,
                        help="results per search (default: the daemon's retrieval.top_k)")
    args = parser.parse_args()
    root = args.kept / "root"
    conversations = json.loads(args.data.read_text())
    asked = []
    for conv in conversations:
        for qa in conv.get("qa", []):
            params = {"query": qa["question"], "scope": f"user:{conv['sample_id']}"}
            if qa.get("question_date"):
                params["reference_time"] = as_utc(qa["question_date"])
            if args.top_k:
                params["top_k"] = args.top_k
            asked.append(params)
    proc = start_daemon(root)
    passes: list[list[float]] = [[], [], []]
    stages: dict[str, list[float]] = {}
    try:
        with Client(root / "memory.sock", timeout=600) as client:
            for n, times in enumerate(passes):
                for params in asked:
                    started = time.perf_counter()
                    client.call("memory_smart_search", params)
                    times.append((time.perf_counter() - started) * 1000)
                    if n == len(passes) - 1:
                        explained = client.call("memory_explain", params)
                        for stage, ms in explained["timings_ms"].items():
                            stages.setdefault(stage, []).append(ms)
            stats = client.call("stats")
    finally:
        proc.terminate()
        proc.wait()
    scoring, embedder = stats["models"]["scoring"], stats["models"]["embedder"]
    print(f"{len(asked)} questions, {stats['memories']} memories; top_k "
          f"{args.top_k or 'the default'}; vectors scored on the {scoring['path']} path "
          f"({scoring['why']}); embedder {embedder.get('variant')}")
    for name, times in zip(("first ask (the question embedded)", "asked again",
                            "asked a third time"), passes, strict=True):
        print(f"  {name:<36} p50 {statistics.median(times):5.1f} ms  p90 "
              f"{pct(times, 90):5.1f} ms")
    print("  stages (p50 ms): " + ", ".join(
        f"{stage} {statistics.median(ms):.2f}" for stage, ms in stages.items()))


if __name__ == "__main__":
    main()
