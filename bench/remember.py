"""memory_remember benchmark: a real daemon (real model, no LLM) on a temp root.

    .venv/bin/python bench/remember.py [--convs 2] [--acks 300]

1. Ack latency: `--acks` LoCoMo turns sent one at a time on one connection (each
   waits for its reply), the background worker paused by nothing: p50/p99 of the
   reply, which covers cleaning, the gate (one embedding, cached for the write),
   the durable turn file and the indexes. Importance, facts and summaries are not
   on this path.
2. Bulk replay: the first `--convs` LoCoMo conversations pipelined (64 in flight),
   turns/s acknowledged, then how long the background backlog takes to drain
   (`stats.backlog` polled), and what the gate skipped and why; with the daemon's
   CPU time per turn while acknowledging and while the background worker drains
   the backlog (it waits for a quiet moment, so the two barely overlap; Linux only).
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.protocol import cpu_seconds, pct, start_daemon
from memoryd_client import Client

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo" / "locomo10.json"


def turns_of(conv: dict) -> list[dict]:
    c = conv["conversation"]
    first = c["speaker_a"]
    out = []
    n = 1
    while f"session_{n}" in c:
        when = c[f"session_{n}_date_time"]
        for i, turn in enumerate(c[f"session_{n}"]):
            out.append({"session": f"{conv['sample_id']}:{n}",
                        "role": "user" if turn["speaker"] == first else "assistant",
                        "content": f"{turn['speaker']}: {turn['text']}",
                        "scope": f"user:{conv['sample_id']}", "when": when, "i": i})
        n += 1
    return out


def params(turn: dict) -> dict:
    return {k: turn[k] for k in ("session", "role", "content", "scope")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--convs", type=int, default=2)
    ap.add_argument("--acks", type=int, default=300)
    args = ap.parse_args()
    data = json.loads(LOCOMO.read_text())
    with tempfile.TemporaryDirectory(prefix="remember-") as tmp:
        root = Path(tmp) / "root"
        proc = start_daemon(root)
        try:
            with Client(root / "memory.sock", timeout=600) as client:
                # 1. one at a time, from a conversation the bulk replay does not use
                acks = []
                sample = turns_of(data[-1])[: args.acks]
                skipped = 0
                for turn in sample:
                    started = time.perf_counter()
                    reply = client.call("memory_remember", params(turn))
                    acks.append((time.perf_counter() - started) * 1000)
                    skipped += not reply["stored"]
                print(f"memory_remember ack, one at a time: {len(acks)} turns "
                      f"({skipped} skipped by the gate), p50 {pct(acks, 50):.1f} ms, "
                      f"p99 {pct(acks, 99):.1f} ms", flush=True)
                _drain(client)
                # 2. bulk replay, pipelined
                turns = [t for conv in data[: args.convs] for t in turns_of(conv)]
                sock: socket.socket = client._sock
                reasons: dict[str, int] = {}
                cpu_start = cpu_seconds(proc.pid)
                started = time.perf_counter()
                for start in range(0, len(turns), 64):
                    window = turns[start:start + 64]
                    sock.sendall(b"".join(json.dumps({
                        "id": start + n, "method": "memory_remember",
                        "params": params(t)}).encode() + b"\n" for n, t in enumerate(window)))
                    for _ in window:
                        result = client.read_message()["result"]
                        if not result["stored"]:
                            why = result["skipped"]["reason"]
                            reasons[why] = reasons.get(why, 0) + 1
                acked = time.perf_counter() - started
                cpu_acked = cpu_seconds(proc.pid)
                print(f"bulk replay of {args.convs} LoCoMo conversations: {len(turns)} turns "
                      f"acknowledged in {acked:.1f} s ({len(turns) / acked:.0f} turns/s); "
                      f"gate skipped {sum(reasons.values())} {reasons}", flush=True)
                drained = _drain(client)
                cpu_drained = cpu_seconds(proc.pid)
                stats = client.call("stats")
                print(f"backlog drained {drained:.1f} s after the last ack "
                      f"({len(turns) / (acked + drained):.0f} turns/s end to end); "
                      f"memories by kind: {stats['by_kind']}", flush=True)
                if cpu_start is not None and cpu_acked is not None and cpu_drained is not None:
                    stored = len(turns) - sum(reasons.values())
                    acking, working = ((b - a) / stored * 1000 for a, b in (
                        (cpu_start, cpu_acked), (cpu_acked, cpu_drained)))
                    print(f"daemon CPU per stored turn: {acking:.1f} ms acknowledging, "
                          f"{working:.1f} ms in the background worker", flush=True)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)


def _drain(client: Client) -> float:
    started = time.perf_counter()
    while client.call("stats")["backlog"]:
        time.sleep(0.1)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
