"""Readable output: aligned tables for lists, key/value blocks for one memory."""

from __future__ import annotations

import shutil
from typing import Any


def _short_time(value: str | None) -> str:
    return (value or "")[:16].replace("T", " ")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def table(rows: list[list[str]], headers: list[str], flex: int) -> str:
    """Align columns; column `flex` is cut to fit the terminal width."""
    width = shutil.get_terminal_size((120, 24)).columns
    cols = [headers, *rows]
    sizes = [max(len(r[i]) for r in cols) for i in range(len(headers))]
    fixed = sum(s for i, s in enumerate(sizes) if i != flex) + 2 * (len(headers) - 1)
    sizes[flex] = max(20, min(sizes[flex], width - fixed))
    lines = []
    for row in cols:
        cells = []
        for i, cell in enumerate(row):
            if len(cell) > sizes[i]:
                cell = cell[: sizes[i] - 1] + "…"
            cells.append(cell.ljust(sizes[i]) if i != len(row) - 1 else cell)
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def memories(items: list[dict[str, Any]], total: int | None = None) -> str:
    if not items:
        return "no memories"
    rows = [[m["id"], m["category"], m["scope"], _short_time(m.get("created_at")),
             ",".join(m.get("tags") or []), _one_line(m.get("content", ""))] for m in items]
    out = table(rows, ["ID", "CATEGORY", "SCOPE", "CREATED", "TAGS", "CONTENT"], flex=5)
    if total is not None and total > len(items):
        out += f"\n({len(items)} of {total}; use --limit/--offset for more)"
    return out


def memory(item: dict[str, Any]) -> str:
    keys = ["id", "kind", "phase", "category", "type", "scope", "session", "role", "tags",
            "source", "importance", "created_at", "updated_at", "expires_at", "access_count",
            "links", "version"]
    lines = []
    for key in keys:
        value = item.get(key)
        if value in (None, "", []) and key not in ("tags",):
            continue
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        lines.append(f"{key + ':':<14}{value}")
    return "\n".join(lines) + "\n\n" + item.get("content", "")


def mapping(data: dict[str, Any], indent: str = "") -> str:
    lines = []
    for key, value in data.items():
        if isinstance(value, dict):
            lines.append(f"{indent}{key}:")
            lines.append(mapping(value, indent + "  "))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines.append(f"{indent}{key}:")  # e.g. rejected files: path, then why
            lines += [f"{indent}  - " + "  ".join(str(v) for v in item.values())
                      for item in value]
        else:
            lines.append(f"{indent}{key + ':':<16}{value}")
    return "\n".join(lines)


def ranked(items: list[dict[str, Any]]) -> str:
    if not items:
        return "no memories above the threshold"
    rows = [[f"{m['score']:.3f}", m["id"], m["category"], m["type"],
             _one_line(m.get("content", ""))] for m in items]
    return table(rows, ["SCORE", "ID", "CATEGORY", "TYPE", "CONTENT"], flex=4)


def explained(result: dict[str, Any]) -> str:
    head = (f"{result['searched']} memories searched ({result['mode']}), reranker "
            f"{'on' if result['reranker'] else 'off'}; stage ms: "
            + ", ".join(f"{k} {v}" for k, v in result["timings_ms"].items()))
    rows = []
    for c in result["candidates"]:
        s = c["scores"]
        rows.append([str(c["rank"] or "-"), f"{s['lexical']:.3f}", f"{s['dense']:.3f}",
                     f"{s['relevance']:.3f}", f"{s['score']:.3f}", c["reason"],
                     _one_line(c.get("content") or "")])
    return head + "\n" + table(rows, ["RANK", "LEXICAL", "DENSE", "RELEVANCE", "SCORE",
                                      "WHY", "CONTENT"], flex=6)
