"""Readable output: aligned tables for lists, key/value blocks for one memory."""

from __future__ import annotations

import shutil
from datetime import datetime
from typing import Any

SHORT_ID = 8  # characters of an id in tables; any unique prefix is taken back


def _short_time(value: str | None) -> str:
    return (value or "")[:16].replace("T", " ")


def local_time(value: str | None) -> str:
    """An ISO 8601 UTC time as the local wall clock, with the zone's name."""
    if not value:
        return ""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone()
    except ValueError:
        return value
    return moment.strftime("%Y-%m-%d %H:%M %Z").strip()


def short_id(memory_id: str) -> str:
    return memory_id[:SHORT_ID]


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
    if any(m.get("due_at") for m in items):  # reminders: when they are due, locally
        rows = [[short_id(m["id"]), local_time(m.get("due_at")) or "-", m["scope"],
                 "notified" if m.get("notified_at") else "pending",
                 _one_line(m.get("content", ""))] for m in items]
        out = table(rows, ["ID", "DUE", "SCOPE", "STATE", "CONTENT"], flex=4)
    else:
        rows = [[short_id(m["id"]), m["category"], m["scope"], _short_time(m.get("created_at")),
                 ",".join(m.get("tags") or []), label(m)] for m in items]
        out = table(rows, ["ID", "CATEGORY", "SCOPE", "CREATED", "TAGS", "TITLE"], flex=5)
    if total is not None and total > len(items):
        out += f"\n({len(items)} of {total}; use --limit/--offset for more)"
    return out


def label(m: dict[str, Any]) -> str:
    """What a table shows of a memory: its title; a turn's words (its title is its
    session, role and time)."""
    if m.get("kind") == "turn" or not m.get("title"):
        return _one_line(m.get("content", ""))
    return _one_line(m["title"])


def memory(item: dict[str, Any]) -> str:
    keys = ["id", "title", "kind", "phase", "category", "type", "scope", "session", "role", "tags",
            "source", "importance", "created_at", "updated_at", "due_at", "expires_at",
            "access_count", "links", "version", "entities"]
    lines = []
    for key in keys:
        value = item.get(key)
        if value in (None, "", []) and key not in ("tags",):
            continue
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        if key in ("due_at", "expires_at"):
            value = local_time(value)
        lines.append(f"{key + ':':<14}{value}")
    return "\n".join(lines) + "\n\n" + item.get("content", "")


def entities(result: dict[str, Any]) -> str:
    """`memoryctl entities`: a table of entities; with a name, that entity, its
    memories oldest first and the entities named beside it."""
    def rows(items: list[dict[str, Any]]) -> list[list[str]]:
        return [[e["name"], str(e["memories"]), _short_time(e["first"]),
                 _short_time(e["last"]), ", ".join(e["aliases"]) or "-"] for e in items]

    headers = ["ENTITY", "MEMORIES", "FIRST", "LAST", "MAY BE SHORT FOR"]
    if "memories" not in result:
        if not result["entities"]:
            return "no entities"
        shown = table(rows(result["entities"]), headers, flex=4)
        more = result["total"] - len(result["entities"])
        return shown + (f"\n... {more} more (--offset)" if more > 0 else "")
    if not result["entities"]:
        return "no memory names it"
    parts = [table(rows(result["entities"]), headers, flex=4), "",
             memories(result["memories"])]
    if result["beside"]:
        parts += ["", "named beside it:", table(rows(result["beside"]), headers, flex=4)]
    return "\n".join(parts)


def _scalar(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_scalar(v) for v in value) or "-"
    return str(value)


def mapping(data: dict[str, Any], indent: str = "") -> str:
    """Nested key/value blocks, values aligned within each block."""
    width = max((len(k) for k, v in data.items() if not isinstance(v, dict)), default=0) + 2
    lines = []
    for key, value in data.items():
        if isinstance(value, dict):
            lines.append(f"{indent}{key}:")
            lines.append(mapping(value, indent + "  ") if value else f"{indent}  (none)")
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines.append(f"{indent}{key}:")  # e.g. rejected files: path, then why
            lines += [f"{indent}  - " + "  ".join(_scalar(v) for v in item.values())
                      for item in value]
        else:
            lines.append(f"{indent}{key + ':':<{width}}{_scalar(value)}")
    return "\n".join(lines)


def ranked(items: list[dict[str, Any]]) -> str:
    if not items:
        return "no memories above the threshold"
    rows = [[str(rank), f"{m['score']:.3f}", short_id(m["id"]), m["category"], m["type"],
             label(m)] for rank, m in enumerate(items, 1)]
    out = table(rows, ["RANK", "SCORE", "ID", "CATEGORY", "TYPE", "TITLE"], flex=5)
    scores = [m["score"] for m in items]
    if scores != sorted(scores, reverse=True):
        out += ("\n(ranked by MMR: the best score first, then each next one the best trade "
                "of score against likeness to those above, so a lower score can rank higher)")
    return out


def explained(result: dict[str, Any]) -> str:
    head = (f"{result['searched']} memories searched ({result['mode']}), reranker "
            f"{'on' if result['reranker'] else 'off'}; stage ms: "
            + ", ".join(f"{k} {v}" for k, v in result["timings_ms"].items()))
    if result.get("entities"):
        head += "\nthe query names: " + ", ".join(result["entities"])
    rows = []
    for c in result["candidates"]:
        s = c["scores"]
        why = c["reason"]
        if c.get("entities") or c.get("via_entities"):  # the entities stage's boost
            why += f" (names {', '.join(c.get('entities') or c['via_entities'])})"
        rows.append([str(c["rank"] or "-"), f"{s['lexical']:.3f}", f"{s['dense']:.3f}",
                     f"{s['relevance']:.3f}", f"{s['score']:.3f}", why,
                     _one_line(c.get("content") or "")])
    return head + "\n" + table(rows, ["RANK", "LEXICAL", "DENSE", "RELEVANCE", "SCORE",
                                      "WHY", "CONTENT"], flex=6)


def jobs(items: list[dict[str, Any]]) -> str:
    """The background jobs: trigger, last and next run (local time), what the last
    run changed."""
    return table([[j["name"], j["trigger"], local_time(j["last_run"]) or "-",
                   local_time(j["next_run"]) or "-",
                   str((j["last_result"] or {}).get("changes", "-"))] for j in items],
                 ["JOB", "TRIGGER", "LAST RUN", "NEXT RUN", "CHANGED"], flex=1)


def _uptime(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    parts = [f"{days}d"] if days else []
    if days or hours:
        parts.append(f"{hours}h")
    parts.append(f"{minutes}m" if days or hours or minutes else f"{secs}s")
    return " ".join(parts)


def _by(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])) \
        or "-"


def synced(r: dict[str, Any]) -> str:
    """One sync's result (`memoryctl sync`, and the last one in `status`)."""
    if r.get("skipped"):
        return f"skipped: {r['reason']}"
    lines = [f"{r['remote']} ({r.get('branch', 'main')}): {_sync_summary(r)}"]
    lines += [f"  resolved  {short_id(c['id'])}  {c['path']}  ({c['rule']})"
              for c in r["resolved"][:20]]
    lines += [f"  needs you {c['path']}: {c['reason']} {_other(c)}" for c in r["needs_you"]]
    lines += [f"  refused   {c['path']}: {c['reason']}" for c in r["refused"]]
    return "\n".join(lines)


def _sync_summary(r: dict[str, Any]) -> str:
    """What one sync did (or, dry, would do), in one line."""
    dry = r.get("dry_run")
    line = (f"{'would bring in' if dry else 'brought in'} {r['came_in']} files, "
            f"{'would send' if dry else 'sent'} {r['went_out']} commits, "
            f"{len(r['resolved'])} resolved")
    if r["needs_you"]:
        line += f", {len(r['needs_you'])} NEED YOU"
    if r["refused"]:
        line += f", {len(r['refused'])} refused"
    if r.get("error"):
        line += f"; FAILED: {r['error']}"
    return line


def _other(conflict: dict[str, Any]) -> str:
    """Where the other machine's version of a file a sync could not merge is."""
    return f"(the other: git show {conflict['theirs'][:12]}:{conflict['path']})"


def _sync_rows(sync: dict[str, Any], jobs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """`status`: the remote, the last sync, the next, and files that need the user."""
    if not sync.get("remote"):
        return [("sync", "off (no git.remote: docs/sync.md)")]
    last = sync.get("last")
    rows = [("sync", f"{sync['remote']} ({sync['branch']})")]
    if last:
        rows.append(("  last", f"{local_time(last['at'])}: {_sync_summary(last)}"))
    nexts = [j.get("next_run") for j in jobs if j.get("name") == "sync" and j.get("next_run")]
    if sync.get("retry_at"):
        rows.append(("  next", f"{local_time(sync['retry_at'])} (backing off after "
                               f"{sync['failures']} failures)"))
    elif nexts:
        rows.append(("  next", local_time(str(nexts[0]))))
    rows += [("  needs you", f"{c['path']} {_other(c)}") for c in sync.get("conflicts", [])]
    return rows


def _memory(m: dict[str, Any]) -> str:
    """What the daemon's memory holds, in one line (`stats.memory`, in MB)."""
    parts = [f"daemon {m['rss_mb']:.0f} MB" if m.get("rss_mb") is not None else "daemon"]
    held = m.get("allocator_mb")
    inside = [f"malloc {held['in_use']:.0f} in use, {held['free']:.0f} free, "
              f"{held['mapped']:.0f} mapped"] if held else []
    inside.append(f"index {sum(m['index_mb'].values()) - m['index_mb']['capacity']:.0f}")
    inside.append(f"vector cache {m['embedder_cache']['mb']:.0f}")
    parts[0] += f" ({'; '.join(inside)})"
    if m.get("vectors_process_mb") is not None:
        parts.append(f"vector process {m['vectors_process_mb']:.0f} MB")
    return ", ".join(parts)


def status(s: dict[str, Any]) -> str:
    """`memoryctl status`: one aligned block a person reads top to bottom."""
    rows: list[tuple[str, str]] = [
        ("daemon", f"memoryd {s['version']}, pid {s['pid']}, up {_uptime(s['uptime_s'])}, "
                   f"{s['status']}"),
        ("root", s["root"]), ("socket", s["socket"])]
    rebuild = s.get("rebuild")
    if rebuild:  # start-up is building the indexes: most tools answer busy until done
        rows.append(("rebuilding", f"{rebuild['percent']}% ({rebuild['step']}: "
                                   f"{rebuild['done']} of {rebuild['total']}), "
                                   f"{rebuild['elapsed_s']} s so far"))
    rows += [
        ("connections", f"{s['connections']} open, {s['requests']} requests served, "
                        f"{s['subscribers']} subscribed"
                        + (f" ({s['events_dropped']} events missed: a subscriber's queue "
                           "was full)" if s.get("events_dropped") else "")),
        ("memories", f"{s['memories']}"),
        ("  by phase", _by(s["by_phase"])), ("  by category", _by(s["by_category"])),
        ("  by kind", _by(s["by_kind"])), ("  by scope", _by(s["by_scope"]))]
    index = s.get("index")
    if index:
        vectors = index["vectors"]
        line = (f"{index['files']} files, {index['keyword_rows']} keyword rows, "
                f"{vectors.get('own', 0)} vectors (+ {vectors.get('ctx', 0)} context, "
                f"{vectors.get('chunk', 0)} chunk)")
        rows.append(("index", ("in step: " if index["in_step"] else "OUT OF STEP: ") + line))
        rows += [("", f"! {d}") for d in index["differs"]]
    memory = s.get("memory")
    if memory:
        rows.append(("memory", _memory(memory)))
    redacted = s.get("redacted") or {}
    rows.append(("redacted", f"{sum(redacted.values())} secrets since start "
                             f"({_by(redacted)})" if redacted else "none since start"))
    rejected = s["rejected_files"]
    if rejected.get("count"):
        rows.append(("rejected files", f"{rejected['count']} (not indexed; see the log)"))
        rows += [("", "  ".join(str(v) for v in item.values()))
                 for item in rejected.get("files", [])[:10]]
    emb = s["models"]["embedder"]
    rows.append(("embedder", f"{emb['model']}"
                 + (f" ({emb['variant']})" if emb.get("variant") else "")
                 + (f", sha256 {emb['sha256'][:16]}…" if emb.get("sha256") else "")))
    if batches := emb.get("batches"):
        verdict = "independent" if batches["independent"] else \
            f"one text per model call (batch_size {batches['batch_size']})"
        rows.append(("batches", f"{verdict}: {batches['why']}"))
    reranker = s["models"]["reranker"]
    rows.append(("reranker", reranker["model"] if reranker else "none"))
    scoring = s["models"].get("scoring")
    if scoring:
        path = {"int8": "int8 vectors, onnxruntime's integer product",
                "float": "numpy's float product"}.get(scoring["path"], scoring["path"])
        rows.append(("scoring", f"{path} ({scoring['why']})"))
    llm = s["llm"]
    if not llm["configured"]:
        rows.append(("llm", "none (the deterministic paths are used)"))
    else:
        rows.append(("llm", f"{llm['endpoint']} ({llm['model'] or 'default model'}): "
                            f"{llm['calls']} calls, {llm['failures']} failed"))
        if llm["last_error"]:
            err = llm["last_error"]
            rows.append(("  last error", f"{local_time(err['at'])} {err['task']}: "
                                         f"{err['error']}"))
    git = s.get("git") or {"enabled": False}
    if not git["enabled"]:
        rows.append(("git", "off" + (f" ({git['last_error']})" if git.get("last_error")
                                     else "")))
    else:
        rows.append(("git", f"{git['commits']} commits since start"
                     + (f", last {local_time(git['last_commit_at'])}"
                        if git.get("last_commit_at") else "")
                     + (f"; FAILING ({git['failures']} in a row): {git['last_error']}"
                        if git.get("failures") else "")))
    rows += _sync_rows(s.get("sync") or {}, s.get("jobs") or [])
    rows.append(("backlog", f"{s['backlog']} turns waiting for background learning"))
    rows.append(("access counts", f"{s['pending_access_counts']} not yet written"))
    width = max(len(k) for k, _ in rows) + 2
    out = [f"{k:<{width}}{v}" if k else f"{'':<{width}}{v}" for k, v in rows]
    if s["jobs"]:
        out += ["", jobs(s["jobs"])]
    reminders = s["reminders"]
    out.append("")
    out.append(f"reminders: {len(reminders['due'])} due" + (":" if reminders["due"] else ""))
    out += [f"  {local_time(r['due_at'])}  {short_id(r['id'])}  {_one_line(r['content'])}"
            for r in reminders["due"]]
    if reminders["upcoming"]:
        out.append("next:")
        out += [f"  {local_time(r['due_at'])}  {short_id(r['id'])}  "
                f"{_one_line(r['content'])}" for r in reminders["upcoming"]]
    return "\n".join(out)
