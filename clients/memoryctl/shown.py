"""What each command's result looks like in a terminal (anything without a shape of
its own is printed as JSON)."""

from __future__ import annotations

import json
from typing import Any

from memoryctl import data, render


def failed(command: str, result: Any) -> bool:
    """A result that reports its own failure (a sync that could not reach its remote, a
    job that raised): the daemon answered, but what was asked did not happen, so
    memoryctl exits non-zero as for any error."""
    return (command in ("sync", "run", "notify", "dream") and isinstance(result, dict)
            and bool(result.get("error")))


def show(command: str, result: Any) -> str:
    if command == "ingest":
        return data.show_ingest(result)
    if command == "export":
        return f"exported {result['exported']} memories to {result['output']}"
    if command == "import":
        return data.show_import(result)
    if command in ("list", "search", "backlinks"):
        return render.memories(result["memories"], result.get("total"))
    if command == "entities":
        return render.entities(result)
    if command == "smart-search":
        return render.ranked(result["memories"])
    if command == "explain":
        return render.explained(result)
    if command == "recall":
        return result["text"] or "(nothing relevant within the budget)"
    if command == "context":
        if "written" in result:
            state = "updated" if result["written"] else "already up to date"
            return f"{result['file']}: the memoryd section {state}"
        return result["text"] or "(nothing remembered for this scope yet)"
    if command == "projects":
        return _projects(result)
    if command == "delete":
        return f"deleted {result['id']} (moved to {result['trash']}; `memoryctl restore " \
               f"{render.short_id(result['id'])}` brings it back)"
    if command == "trash":
        if not result["memories"]:
            return "the trash is empty"
        return render.memories(result["memories"], result["total"])
    if command in ("link", "unlink"):
        verb = "linked" if result["linked"] else "unlinked"
        return f"{verb} {result['source']} <-> {result['target']}"
    if command == "tools":
        return render.table([[t["name"], t["description"].splitlines()[0]]
                             for t in result["tools"]], ["TOOL", "DESCRIPTION"], flex=1)
    if command == "status":
        return render.status(result)
    if command == "remember":
        if result["stored"]:
            return (f"stored {result['id']}  type {result['type']}  importance "
                    f"{result['importance']} (refined in the background)")
        skipped = result["skipped"]
        dup = f" of {skipped['duplicate_of']}" if skipped.get("duplicate_of") else ""
        return f"skipped: {skipped['reason']}{dup}"
    if command == "add":
        lines = [f"{len(result['facts'])} fact(s), decided by {result['path']}"]
        lines += [f"  {f['event']:<6} {f['id'] or '-'}  {f['text']}"
                  + (f"  (replaces {f['replaces']})" if f.get("replaces") else "")
                  + f"\n         {f['reason']}" for f in result["facts"]]
        return "\n".join(lines)
    if command == "history":
        lines = []
        for v in result["versions"]:
            state = "current " if v["current"] else "replaced"
            # The time this version was written (created_at is the memory's first).
            lines.append(f"{v['updated_at'][:19]}  {v['event']:<6} {state}  "
                         f"v{v['version']}  {v['id']}  {v['content']}")
            for r in v.get("revisions", []):
                shown = f"version {r['version']}" if r["version"] else "removed"
                lines.append(f"  commit {r['commit'][:12]}  {r['date'][:19]}  {shown}  "
                             f"{r['path']}  ({r['message']})")
                lines += [f"    {d}" for d in r["diff"].rstrip("\n").splitlines()]
        if not result.get("git"):
            lines.append("(git history is off: only the versions kept in the files)")
        return "\n".join(lines)
    if command == "restore":
        if result["restored_from"] is None:
            return f"restored {result['id']} from the trash\n{render.memory(result)}"
        return f"restored {result['id']} to version {result['restored_from']}: now " \
               f"version {result['version']}\n{render.memory(result)}"
    if command == "write" and result.get("duplicate"):
        return f"already stored: this is the existing memory {result['id']} (same content " \
               f"in the same scope)\n{render.memory(result)}"
    if command == "remind":
        return f"reminder {render.short_id(result['id'])} due " \
               f"{render.local_time(result['due_at'])}: {result['content']}"
    if command == "jobs":
        return render.jobs(result["jobs"])
    if command == "sync":
        return render.synced(result)
    if command == "purge":
        return _purged(result)
    if command in ("run", "notify", "dream"):
        verb = "would change" if result["dry_run"] else "changed"
        lines = [f"{result['job']}: {verb} {len(result['changes'])} "
                 f"({result['duration_ms']:.0f} ms)" + (f"; error: {result['error']}"
                                                        if result["error"] else "")]
        lines += [_change_line(c) for c in result["changes"]]
        return "\n".join(lines)
    if isinstance(result, dict) and "content" in result and "id" in result:
        return render.memory(result)
    return json.dumps(result, indent=2, ensure_ascii=False)


def _purged(result: dict[str, Any]) -> str:
    """What a purge changed (or would), and what the user must still do."""
    files = result["files"]
    verb = "would purge" if result["dry_run"] else "purged"
    lines = [f"{verb} {result['occurrences']} occurrence(s): {files['memories']} memory "
             f"file(s), {files['versions']} kept version(s), {files['trash']} trash file(s), "
             f"{files['other']} other file(s)"]
    lines += [f"renamed: {path}" for path in result["renamed"]]
    lines += [f"left as it is: {path} (edit it by hand)" for path in result.get("refused", [])]
    git = result["git"]
    if git is None:
        lines.append("git: no history here")
    elif git["rewritten"]:
        lines.append(f"git: history REWRITTEN on this machine ({git['commits']} commits; the "
                     f"string was in {git['file_versions']} file version(s), "
                     f"{git['messages']} message(s), {git['names']} name(s)); the old "
                     "commits are gone from here")
    elif git["file_versions"] or git["messages"] or git["names"]:
        lines.append(f"git: would rewrite the history ({git['file_versions']} file "
                     f"version(s), {git['messages']} message(s), {git['names']} name(s))")
    else:
        lines.append("git: the history does not hold it")
    if result["push"]:
        lines.append("the remote still has the old history: replace it there with\n  "
                     f"{result['push']}\n(syncs wait until it has run)")
    if not result["dry_run"]:
        lines.append("still holding it: " + ", ".join(result["remaining"])
                     if result["remaining"] else "nothing memoryd keeps holds it any more")
    return "\n".join(lines)


def _projects(result: dict[str, Any]) -> str:
    here = result["here"]
    rows = [[p["scope"], str(p["memories"]), "<- this folder" if p["scope"] == here["scope"]
             else ""] for p in result["projects"]]
    lines = [render.table(rows, ["PROJECT", "MEMORIES", ""], flex=0)] if rows else [
        "no project memories yet"]
    where = here["root"] or "(not in a git repository)"
    lines.append(f"this folder: {here['scope']}  ({here['identity']}; {where})")
    return "\n".join(lines)


def _change_line(change: dict[str, Any]) -> str:
    """One job change: action, id, where the file was -> went, else what it became."""
    line = f"  {change['action']:<8} {change['id']}"
    if change.get("path"):
        line += f"  {change['path']}"
    if change.get("to"):
        return f"{line} -> {change['to']}"
    after = change.get("after") or {}
    shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in after.items())
    return f"{line}  {shown}" if shown else line
