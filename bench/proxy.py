"""Proxy benchmark: what `memoryctl proxy` adds to a chat request.

    .venv/bin/python -m bench.proxy [--memories 1000] [--requests 300]

A real daemon on a temp root holding --memories notes, a scripted OpenAI-compatible
upstream on 127.0.0.1 that answers at once, and the proxy as its own process. The
same non-streaming request is timed straight to the upstream and through the proxy
(recall + inject + forward; remembering the turns happens after the reply): the
difference is the proxy's added latency, p50 and p99. Then the same for streaming
(time to the last byte). Also prints memoryctl's start-to-exit time for `list`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.protocol import pct, start_daemon
from memoryd_client import Client
from tests.llm_server import ScriptedLlm, completion

TOPICS = ["hiking", "tea", "Porto", "climbing", "python", "trio", "sqlite", "chess"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, body: dict) -> float:
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={
        "Content-Type": "application/json", "Authorization": "Bearer bench"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as r:
        r.read()
    return (time.perf_counter() - started) * 1000


def _series(url: str, n: int, stream: bool) -> list[float]:
    out = []
    for i in range(n):
        body = {"model": "scripted", "stream": stream, "memory_id": "bench",
                "messages": [{"role": "user",
                              "content": f"what do I know about {TOPICS[i % len(TOPICS)]}?"}]}
        out.append(_post(url, body))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="proxy-bench-") as tmp, \
            ScriptedLlm(lambda _: completion("ok, noted.")) as upstream:
        root = Path(tmp) / "root"
        daemon = start_daemon(root)
        proxy = None
        try:
            with Client(root / "memory.sock", timeout=600) as c, c.batch() as batch:
                for i in range(args.memories):
                    batch.memory_write(f"note {i}: something about {TOPICS[i % len(TOPICS)]} "
                                       f"and detail {i * 7919 % 1000}", category="knowledge")
            port = _free_port()
            env = dict(os.environ, MEMORY_HOME=str(root))
            proxy = subprocess.Popen(
                [sys.executable, "-m", "memoryctl", "proxy", "--upstream", upstream.url,
                 "--listen", f"127.0.0.1:{port}", "--quiet"], env=env,
                stderr=subprocess.DEVNULL)
            base = f"http://127.0.0.1:{port}"
            for _ in range(600):
                try:
                    urllib.request.urlopen(base + "/health", timeout=2).close()
                    break
                except OSError:
                    time.sleep(0.05)
            direct_url = upstream.url + "/chat/completions"
            proxied_url = base + "/v1/chat/completions"
            _series(direct_url, 20, False)  # warm both paths up
            _series(proxied_url, 20, False)
            print(f"{args.memories} memories, {args.requests} requests each way "
                  "(non-streaming; then streaming, to the last byte)")
            for stream in (False, True):
                direct = _series(direct_url, args.requests, stream)
                proxied = _series(proxied_url, args.requests, stream)
                added50 = pct(proxied, 50) - pct(direct, 50)
                added99 = pct(proxied, 99) - pct(direct, 99)
                kind = "stream" if stream else "whole "
                print(f"  {kind}  direct p50 {pct(direct, 50):6.2f} ms  p99 "
                      f"{pct(direct, 99):6.2f} ms | via proxy p50 {pct(proxied, 50):6.2f} ms"
                      f"  p99 {pct(proxied, 99):6.2f} ms | added p50 {added50:6.2f} ms  "
                      f"p99 {added99:6.2f} ms")
            started = time.perf_counter()
            runs = 10
            for _ in range(runs):
                subprocess.run([sys.executable, "-m", "memoryctl", "list", "--limit", "5"],
                               env=env, capture_output=True, check=True)
            print(f"  memoryctl list, start to exit: "
                  f"{(time.perf_counter() - started) / runs * 1000:.0f} ms")
        finally:
            if proxy is not None:
                proxy.terminate()
                proxy.wait(30)
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(60)


if __name__ == "__main__":
    main()
