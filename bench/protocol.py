"""Protocol benchmark: a real daemon on a temp root, driven over its socket.

    .venv/bin/python bench/protocol.py [--memories 1000] [--requests 20000]

Prints requests/s of memory_read pipelined on one connection and unpipelined on
20 connections, memory_write acknowledgement latency (durable file + index)
p50/p99, and memoryctl's start-to-exit time. The client runs on the same
machine and its CPU counts against the daemon's: the numbers are lower bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from memoryd_client import Client, DaemonUnavailable


def start_daemon(root: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "memoryd", "serve", "--root", str(root),
                             "--log-level", "warning"], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with Client(root / "memory.sock", retries=0) as c:
                if c.call("health")["status"] == "ok":  # "starting": indexes being built
                    return proc
        except (DaemonUnavailable, OSError):
            pass
        time.sleep(0.05)
    raise SystemExit("the daemon did not start")


def cpu_seconds(pid: int) -> float | None:
    """The process's user + system CPU time so far (Linux's /proc; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def as_utc(date: str) -> str:
    """A question's date as a `reference_time`: LongMemEval writes its dates in UTC
    without a zone."""
    return date if date.endswith("Z") else date + "Z"


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def pipelined_reads(sock_path: Path, ids: list[str], total: int, window: int = 500) -> float:
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(str(sock_path))
    lines = [json.dumps({"id": i, "method": "memory_read",
                         "params": {"id": ids[i % len(ids)]}}).encode() + b"\n"
             for i in range(total)]
    received, buf = 0, b""
    start = time.perf_counter()
    for offset in range(0, total, window):
        sock.sendall(b"".join(lines[offset:offset + window]))
        want = min(offset + window, total)
        while received < want:
            buf += sock.recv(1 << 20)
            received += buf.count(b"\n")
            buf = buf[buf.rfind(b"\n") + 1:]
    elapsed = time.perf_counter() - start
    sock.close()
    return total / elapsed


def unpipelined_reads(sock_path: Path, ids: list[str], conns: int, per_conn: int) -> float:
    barrier = threading.Barrier(conns + 1)

    def worker(n: int) -> None:
        with Client(sock_path) as c:
            barrier.wait()
            for i in range(per_conn):
                c.call("memory_read", {"id": ids[(n * per_conn + i) % len(ids)]})

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(conns)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    return conns * per_conn / (time.perf_counter() - start)


def write_latency(sock_path: Path, n: int) -> list[float]:
    samples = []
    with Client(sock_path) as c:
        for i in range(n):
            t0 = time.perf_counter()
            c.call("memory_write", {"content": f"latency probe {i}: the user mentioned a "
                                               f"preference for tea number {i}"})
            samples.append((time.perf_counter() - t0) * 1000)
    return samples


def memoryctl_start(root: Path, runs: int) -> tuple[list[float], list[float]]:
    env = dict(os.environ, MEMORY_HOME=str(root))
    ctl = [sys.executable, "-m", "memoryctl", "--json", "list", "--limit", "1"]
    bare = [sys.executable, "-c", "pass"]
    times: dict[str, list[float]] = {"ctl": [], "bare": []}
    for _ in range(runs):
        for name, cmd in (("ctl", ctl), ("bare", bare)):
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
            times[name].append((time.perf_counter() - t0) * 1000)
    return times["ctl"], times["bare"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--writes", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mdb-") as tmp:
        root = Path(tmp) / "root"
        proc = start_daemon(root)
        try:
            sock_path = root / "memory.sock"
            t0 = time.perf_counter()
            with Client(sock_path) as c:
                ids = [c.call("memory_write", {"content": f"seed memory {i} about topic {i % 37}",
                                               "category": "knowledge"})["id"]
                       for i in range(args.memories)]
            seed_rate = args.memories / (time.perf_counter() - t0)
            pipelined = pipelined_reads(sock_path, ids, args.requests)
            unpipelined = unpipelined_reads(sock_path, ids, 20, max(50, args.requests // 40))
            writes = write_latency(sock_path, args.writes)
            ctl, bare = memoryctl_start(root, 15)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}")
    print(f"seeded {args.memories} memories sequentially: {seed_rate:,.0f} writes/s")
    print(f"memory_read pipelined, 1 connection:     {pipelined:,.0f} req/s")
    print(f"memory_read unpipelined, 20 connections: {unpipelined:,.0f} req/s")
    print(f"memory_write ack latency (fsync'd file + index), n={len(writes)}: "
          f"p50 {statistics.median(writes):.2f} ms  p99 {pct(writes, 99):.2f} ms")
    print(f"memoryctl list (process start to exit): median {statistics.median(ctl):.0f} ms "
          f"(bare `python -c pass`: {statistics.median(bare):.0f} ms)")


if __name__ == "__main__":
    main()
