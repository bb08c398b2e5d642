"""The tool table: the one definition of every tool (name, title, params, description,
MCP annotations, how memoryctl takes it).

It imports the params and the results' schemas (tools/outputs.py). `tools/list` and
the dispatcher read it (through tools/registry.py, which binds each spec to its
handler); the stdlib-only clients read
files generated from it (`python -m memoryd.tools.generate`: memoryctl's tools.json,
memoryd_client's tool methods); a test checks those, and docs/tools.md's table,
against this one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from memoryd.tools import params as p
from memoryd.tools.outputs import outputs


@dataclass(frozen=True)
class Cli:
    """How memoryctl takes the tool: its subcommand, the params given as positional
    arguments (in order), the one that reads stdin when given as `-`, and defaults."""

    command: str
    help: str
    positional: tuple[str, ...] = ()
    stdin: str | None = None
    defaults: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    params: type[p.Params]
    description: str
    cli: Cli
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    batchable: bool = False  # consecutive pipelined calls run as one group commit
    progress: bool = False  # sends notifications/progress when the call has a token

    def input_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = msgspec.json.schema(self.params)
        defs = schema.pop("$defs", {})
        body: dict[str, Any] = defs.pop(self.params.__name__)
        body.pop("title", None)
        body.pop("description", None)  # the Struct's docstring is not for clients
        if defs:
            body["$defs"] = defs
        return body

    def annotations(self) -> dict[str, Any]:
        return {"title": self.title, "readOnlyHint": self.read_only,
                "destructiveHint": self.destructive, "idempotentHint": self.idempotent,
                "openWorldHint": False}

    def describe(self) -> dict[str, Any]:
        """The tool as `tools/list` shows it (MCP's Tool)."""
        return {"name": self.name, "title": self.title, "description": self.description,
                "inputSchema": self.input_schema(), "outputSchema": outputs()[self.name],
                "annotations": self.annotations()}


def _spec(name: str, title: str, params: type[p.Params], description: str, cli: Cli,
          **flags: bool) -> ToolSpec:
    return ToolSpec(name, title, params, " ".join(description.split()), cli, **flags)


_RANKED = ("Ranked search by meaning and words: dense + keyword candidates, fused, optional "
           "cross-encoder rerank, recency and importance blend, MMR diversity. Each result "
           "carries `score` and its breakdown in `scores`. Pass only `query` for the best "
           "default ranking. `kind` keeps one kind (e.g. fact); `as_of` ranks what was known "
           "at that time (facts current then, superseded since).")

TOOLS: tuple[ToolSpec, ...] = (
    _spec("memory_write", "Remember a note", p.WriteParams, """
        Remember a note. Without `category` it lands in the inbox (phase inbox, 7-day TTL);
        with one it is organized at once. With `role` (and `session`) it is a conversation
        turn. An exact duplicate (same content in the same scope) returns the existing
        memory.""",
          Cli("write", "remember a note (TEXT, or - to read it from stdin)",
              positional=("content",), stdin="content", defaults={"source": "memoryctl"}),
          batchable=True),
    _spec("memory_read", "Read a memory", p.ReadParams,
          "Read one memory by id (counts as an access unless `count_access` is false).",
          Cli("read", "show one memory", positional=("id",)), read_only=True, idempotent=True),
    _spec("memory_update", "Update a memory", p.UpdateParams, """
        Change a memory's content, category, tags, type or importance; `version` + 1. Pass
        the `version` you read to fail with -32002 if somebody changed it meanwhile.""",
          Cli("update", "change a memory (content, category, tags, type, importance)",
              positional=("id",), stdin="content")),
    _spec("memory_delete", "Delete a memory", p.IdParams,
          "Delete a memory: its file moves under trash/ (a soft delete).",
          Cli("delete", "move a memory to the trash", positional=("id",)),
          destructive=True, idempotent=True),
    _spec("memory_list", "List memories", p.ListParams, """
        List memories, newest first, filtered by phase, category, scope, source and tags
        (all must match). Without `scope`: global plus the caller's own scope.""",
          Cli("list", "list memories, newest first"), read_only=True, idempotent=True),
    _spec("memory_search", "Keyword search", p.SearchParams, """
        Exact keyword search: every word of `query` must occur in the content or tags
        (case-insensitive; a word of 3 or more characters anywhere, as a substring; a
        shorter one at the start of a word; works for Chinese), newest first, with
        filters. `from`/`to` are dates (YYYY-MM-DD, inclusive). Needs no model.""",
          Cli("search", "exact keyword search (every word must occur), newest first",
              positional=("query",)), read_only=True, idempotent=True),
    _spec("memory_tag", "Tag a memory", p.TagParams, "Add and/or remove tags on a memory.",
          Cli("tag", "add or remove tags", positional=("id",)), idempotent=True),
    _spec("memory_link", "Link two memories", p.LinkParams,
          "Link two memories (bidirectional: each lists the other in `links`).",
          Cli("link", "link two memories (both directions)", positional=("source", "target")),
          idempotent=True),
    _spec("memory_unlink", "Unlink two memories", p.LinkParams,
          "Remove the link between two memories, in both directions.",
          Cli("unlink", "remove the link between two memories",
              positional=("source", "target")), idempotent=True),
    _spec("memory_backlinks", "Backlinks", p.IdParams, "The memories that link to this one.",
          Cli("backlinks", "memories that link to ID", positional=("id",)),
          read_only=True, idempotent=True),
    _spec("memory_entities", "Entities", p.EntitiesParams, """
        The people, places, organisations and things the memories name (read from the
        text: capitalised names, speakers, [[links]], Chinese names and titles), with how
        many memories name each and when first and last; with `name`, that entity's
        memories over time (with the facts they replaced, superseded_at set) and the
        entities named beside it. Without `scope`: global plus the caller's own scope.""",
          Cli("entities", "the entities memories name, or one entity's memories",
              positional=("name",)), read_only=True, idempotent=True),
    _spec("memory_rename", "Rename a memory's file", p.RenameParams, """
        Name the memory's file from its title again (with `title`, a new title first):
        `categories/<category>/<title slug>-<short id>.md`. A file keeps its name when
        only its title changes otherwise, so links and history stay put. Returns the
        memory with `path` (before) and `to`.""",
          Cli("rename", "name memory ID's file from its title again (--title: a new one)",
              positional=("id",))),
    _spec("memory_upgrade", "Organize an inbox memory", p.UpgradeParams, """
        Promote an inbox memory to organized: its file moves to categories/<category>/
        (`knowledge` when no category is given) and its inbox TTL is cleared.""",
          Cli("upgrade", "promote an inbox memory to organized", positional=("id",))),
    _spec("memory_smart_search", "Smart search", p.SmartSearchParams, _RANKED,
          Cli("smart-search", "ranked search by meaning and words", positional=("query",)),
          read_only=True),
    _spec("memory_explain", "Explain a smart search", p.SmartSearchParams, """
        The whole trace of a smart search: every candidate with each stage's score and why
        it was kept or dropped, plus the time each stage took.""",
          Cli("explain", "every candidate of a smart search, with each stage's score and "
              "why it was kept or dropped", positional=("query",)),
          read_only=True, idempotent=True),
    _spec("memory_recall", "Recall for a prompt", p.RecallParams, """
        What a model should see for `query`: a `<memory>` block within `token_budget`
        (procedural memories first, then the ranked rest, then the session's summary, then
        with `session` its last `tail` turns verbatim under [RECENT]). `kind` and `as_of`
        as for smart search. Returns {text, memories, recent, total_tokens,
        budget_used}.""",
          Cli("recall", "the <memory> block a model should see for QUERY",
              positional=("query",)), read_only=True),
    _spec("memory_context", "Context for a new session", p.ContextParams, """
        The `<memory>` block a session starts with, before any prompt: the procedural
        memories (how to behave), each scope's newest other facts and decisions
        (`project`: the project's first, then global), and the reminders that are due.
        Returns {text, memories, total_tokens, budget_used}.""",
          Cli("context", "the <memory> block a new session starts with (--project DIR: "
              "that repository's)"), read_only=True, idempotent=True),
    _spec("memory_remember", "Remember a conversation turn", p.RememberParams, """
        One conversation turn. Cleaned, then gated: a turn too short, of stop words only,
        infrastructure noise or a near-duplicate of a recent memory is skipped
        ({stored: false, skipped: {reason, duplicate_of?}}). Otherwise it is stored
        durably and answered {id, stored: true, type, importance}; importance and type are
        then refined in the background and, after a user turn, facts are learned and the
        session summary updated (`stats.backlog` counts what is still waiting).""",
          Cli("remember", "remember a conversation turn (CONTENT, or - for stdin)",
              positional=("session", "role", "content"), stdin="content")),
    _spec("memory_add", "Learn facts from text", p.AddParams, """
        Text to facts: 0-3 atomic facts are extracted (LLM, or deterministic rules) and
        reconciled with the nearest known facts: ADD, UPDATE (the old fact is superseded:
        trash/ with replaced_by, kept as history), DELETE or NONE. Returns {path:
        llm|heuristic, facts: [{text, event, id, replaces?, reason}]}.""",
          Cli("add", "learn facts from TEXT (or - for stdin)", positional=("text",),
              stdin="text")),
    _spec("memory_history", "History of a memory", p.IdParams, """
        The versions of a memory, oldest first, following replaces / replaced_by through
        the trash: content, dates (`updated_at`: when that version was written), and the
        event that made each. With git history on, each also carries its own committed
        revisions (those that wrote it): commit, date, version and a unified diff.""",
          Cli("history", "the versions of memory ID, oldest first", positional=("id",)),
          read_only=True, idempotent=True),
    _spec("memory_restore", "Restore a memory", p.RestoreParams, """
        With `version`: bring back that earlier version of a memory (from the git
        history) as a new version: its content, tags, category, type and importance.
        Without: bring a deleted memory back from the trash (memory_trash lists them).
        Returns the memory.""",
          Cli("restore", "bring memory ID back from the trash, or VERSION of it back as a "
              "new version", positional=("id", "version"))),
    _spec("memory_trash", "List the trash", p.TrashParams, """
        Deleted memories (in trash/), most recently deleted first, each with `trash`
        (its file there); memory_restore without a version brings one back.""",
          Cli("trash", "list deleted memories (restore ID brings one back)"),
          read_only=True, idempotent=True),
    _spec("memory_ingest", "Ingest notes or transcripts", p.IngestParams, """
        Read a source's folder into memories, idempotently: claude (CLAUDE.md files and
        project memories), claude-code (session transcripts, as conversation turns),
        logseq (pages and journals), obsidian (a vault), car-agent, fingersaver, markdown
        (any folder of .md files), or all. A re-run adds nothing; a changed file updates
        its memory (version + 1); content already stored is a duplicate; a file gone from
        the source is reported, not deleted. Notes land in the inbox with source
        ingest:<name>, their [[links]] resolved into links. Sends notifications/progress
        when the call carries a progressToken. Returns a report per source: added,
        updated, unchanged, skipped and failed (with reasons), missing.""",
          Cli("ingest", "read notes or transcripts from another tool (idempotent)"),
          idempotent=True, progress=True),
    _spec("memory_export", "Export memories (JSONL)", p.ExportParams, """
        One page of the JSONL export, sorted by id: every front-matter field and the
        content of each memory, one memory per line (superseded facts and, with
        include_trash, soft deletes carry `trashed: true`). Pass the returned `next` as
        `after` for the next page; `next` is null after the last. Returns {lines, next,
        total}.""",
          Cli("export", "export memories as JSONL"), read_only=True, idempotent=True),
    _spec("memory_import", "Import memories (JSONL)", p.ImportParams, """
        Store JSONL lines (as memory_export gives them; each as its text or as the
        object it holds) through the engine, one unit per call: files, indexes, links
        and events. Ids, dates, versions and every field are
        kept; a line whose id exists is skipped, replaced or kept under a new id
        (on_conflict); a malformed line is reported with its line number and reason and
        the rest imports. Returns {imported, replaced, kept_both, skipped, failed}.""",
          Cli("import", "import memories from JSONL")),
    _spec("memory_sync", "Sync with the git remote", p.SyncParams, """
        One sync through `git.remote` (config.yaml): commit this machine's changes,
        fetch, merge (a memory both machines changed: the higher version wins and the
        other is kept as a version; an edit beats a delete; another file both changed
        that git cannot merge keeps this machine's and is reported), write and index
        what came in, and push (never forced; a remote that moved on is fetched and
        merged again). Only the user's own tooling may sync. Returns {came_in,
        went_out, resolved, needs_you, refused, attempts, head, error}.""",
          Cli("sync", "sync with the git remote: commit, fetch, merge, push")),
    _spec("memory_purge", "Purge a string from everything", p.PurgeParams, """
        Remove a string (a credential no redaction rule caught) from everything memoryd
        keeps: every memory, kept version and trash file (replaced by `[PURGED]`; a file
        whose name held it is renamed), the indexes, and the git history, which is
        rewritten locally (a remote still has the old one: `push` is the command that
        replaces it there, and syncs wait until it ran). Returns {occurrences, files:
        {memories, versions, trash, other}, renamed, refused, git: {commits,
        file_versions, messages, names, rewritten}, remaining, push}; `remaining` lists
        what still holds it, `refused` the files left as they are (a memory whose front
        matter the string is part of the syntax of, a file over 1 MB such as a log: edit
        those by hand). Only the user's own tooling may purge.""",
          Cli("purge", "remove TEXT from every memory, version, trash file, index and the "
              "git history (rewritten locally; --dry-run counts first)",
              positional=("text",)), destructive=True),
    _spec("memory_remind", "Set a reminder", p.RemindParams, """
        Create a reminder, due at `due_at` (ISO 8601) or `when` in words (English or
        Chinese, in the configured timezone). When it is due, the notify job writes it to
        pending.md, shows a desktop notification and sends `notifications/reminder` to
        subscribed connections.""",
          Cli("remind", "create a reminder: --when 'tomorrow at 9' (or 明天下午三点) or "
              "--due-at", positional=("content",), stdin="content")),
)

SPECS: dict[str, ToolSpec] = {t.name: t for t in TOOLS}
