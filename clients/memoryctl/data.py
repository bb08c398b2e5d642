"""memoryctl ingest, export and import: long calls with a progress bar on stderr
(when it is a terminal) and a summary at the end. Export and import stream: a page
or a batch at a time, never the whole store in memory."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from memoryd_client import Client
from memoryd_client.framing import MAX_LINE
from memoryd_client.wire import strict_json

IMPORT_LINES = 1000  # lines per memory_import call
IMPORT_BYTES = 768 * 1024  # and at most this much JSON (the socket takes 1 MiB a line)
# A line is sent as the JSON object it holds (so it is not escaped a second time); one
# whose request alone would still pass the socket's 1 MiB cannot be sent: it is
# reported, and the other lines go on.
ONE_LINE_BYTES = MAX_LINE - 4096


class Bar:
    """`[#####.....] 120/300 message` redrawn in place on a terminal; silent otherwise."""

    def __init__(self, stream: IO[str] = sys.stderr) -> None:
        self.stream = stream
        self.live = stream.isatty()
        self.drawn = False

    def __call__(self, done: int, total: int | None, message: str = "") -> None:
        if not self.live:
            return
        if total:
            filled = int(30 * min(done, total) / total)
            head = f"[{'#' * filled}{'.' * (30 - filled)}] {done}/{total}"
        else:
            head = f"{done}"
        self.stream.write(f"\r\x1b[2K{head} {message}"[:200])
        self.stream.flush()
        self.drawn = True

    def notification(self, message: dict[str, Any]) -> None:
        if message.get("method") == "notifications/progress":
            p = message.get("params") or {}
            self(int(p.get("progress", 0)), p.get("total"), str(p.get("message", "")))

    def done(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()


def ingest(client: Client, params: dict[str, Any]) -> Any:
    if params.get("path"):
        params["path"] = str(Path(params["path"]).expanduser().absolute())
    bar = Bar()
    try:
        return client.call("memory_ingest", {**params, "_meta": {"progressToken": 1}},
                           on_notification=bar.notification)
    finally:
        bar.done()


def show_ingest(result: dict[str, Any]) -> str:
    lines = []
    for r in result["reports"]:
        verb = "would add" if r["dry_run"] else "added"
        lines.append(f"{r['source']} ({r['path'] or '-'}): {verb} {r['added']}, updated "
                     f"{r['updated']}, unchanged {r['unchanged']}, links {r['links']}"
                     f" ({r['unresolved_links']} unresolved), {r['seconds']:.1f} s")
        for label, groups in (("skipped", r["skipped"]), ("failed", r["failed"]),
                              ("noted", r.get("noted", []))):
            for g in groups:
                shown = ", ".join(map(_printable, g["paths"][:3])) + (
                    " ..." if g["count"] > 3 else "")
                lines.append(f"  {label} {g['count']}: {g['reason']}  ({shown})")
        if r["missing"]["count"]:
            lines.append(f"  missing {r['missing']['count']} (gone from the source, kept in "
                         f"memory): {', '.join(r['missing']['paths'][:3])}")
    return "\n".join(lines)


def _printable(path: str) -> str:
    """A path on one terminal line: control characters (a file name may hold a line
    break) escaped, and long paths cut."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in path)
    return text if len(text) <= 120 else text[:60] + "…" + text[-59:]


def export(client: Client, params: dict[str, Any], output: str | None) -> dict[str, Any]:
    bar = Bar()
    out = open(output, "w", encoding="utf-8") if output else sys.stdout  # noqa: SIM115
    written, after, total = 0, "", None
    try:
        while True:
            page = client.call("memory_export", {**params, "after": after})
            total = page["total"] if page["total"] is not None else total
            for line in page["lines"]:
                out.write(line + "\n")
            written += len(page["lines"])
            bar(written, total, "exported")
            if page["next"] is None:
                break
            after = page["next"]
    finally:
        bar.done()
        if output:
            out.close()
    return {"exported": written, "output": output or "-"}


def _as_sent(text: str) -> tuple[str | dict[str, Any], int]:
    """A line as the request carries it, and its bytes there: the object it holds,
    read strictly; else the text itself (the daemon says what is wrong with it)."""
    try:
        value = strict_json(text)
        if isinstance(value, dict):
            return value, len(json.dumps(value, ensure_ascii=False).encode()) + 2
    except (ValueError, RecursionError, UnicodeEncodeError):
        pass
    return text, len(json.dumps(text, ensure_ascii=False).encode()) + 2


def _batches(stream: IO[bytes], failed: list[dict[str, Any]]
             ) -> Iterator[tuple[int, list[str | dict[str, Any]], int]]:
    """(first line number, lines, bytes read so far) in batches, sized by what they
    take in the request; blank lines are skipped but counted. A line that is not UTF-8,
    or too large to send, goes to `failed` with why, and the others go on."""
    batch: list[str | dict[str, Any]] = []
    first = size = consumed = 0
    for number, raw in enumerate(stream, 1):
        consumed += len(raw)
        why = None
        try:
            text = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as exc:
            text, why = "", f"not UTF-8 text: {exc.reason} at byte {exc.start}"
        item, cost = _as_sent(text) if why is None and text.strip() else (text, 0)
        if cost > ONE_LINE_BYTES:
            why = f"{cost} bytes once sent: the socket takes requests of {MAX_LINE} bytes"
        if why is not None:
            failed.append({"line": number, "reason": why})
        if why is not None or not text.strip():  # a batch's lines are numbered in a row
            if batch:
                yield first, batch, consumed
                batch, size = [], 0
            continue
        if batch and (len(batch) >= IMPORT_LINES or size + cost > IMPORT_BYTES):
            yield first, batch, consumed
            batch, size = [], 0
        if not batch:
            first = number
        batch.append(item)
        size += cost
    if batch:
        yield first, batch, consumed


def import_(client: Client, source: str | None, on_conflict: str | None) -> dict[str, Any]:
    bar = Bar()
    stream = open(source, "rb") if source else sys.stdin.buffer  # noqa: SIM115
    size = Path(source).stat().st_size if source else None
    totals: dict[str, Any] = {"imported": 0, "replaced": 0, "kept_both": 0, "skipped": 0,
                              "failed": []}
    unsent: list[dict[str, Any]] = []
    try:
        for first, lines, consumed in _batches(stream, unsent):
            params: dict[str, Any] = {"lines": lines, "first_line": first}
            if on_conflict:
                params["on_conflict"] = on_conflict
            result = client.call("memory_import", params)
            for key in ("imported", "replaced", "kept_both", "skipped"):
                totals[key] += result[key]
            totals["failed"] += result["failed"]
            bar(consumed, size, f"{totals['imported']} imported")
    finally:
        bar.done()
        if source:
            stream.close()
    totals["failed"] = sorted(totals["failed"] + unsent, key=lambda f: f["line"])
    return totals


def show_import(result: dict[str, Any]) -> str:
    head = (f"imported {result['imported']}, replaced {result['replaced']}, kept both "
            f"{result['kept_both']}, skipped {result['skipped']} (already there), failed "
            f"{len(result['failed'])}")
    return "\n".join([head, *(f"  line {f['line']}: {f['reason']}" for f in result["failed"])])
