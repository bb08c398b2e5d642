"""Ingest: a source's notes and transcripts into memories, inside the daemon (the only
writer), idempotently.

A note is identified by its source and its path within the source folder: a re-run
leaves an unchanged note alone and updates a changed one (version + 1); content
already stored elsewhere in the scope is a duplicate (SHA-256 of the content) and is
skipped. Notes land in the inbox with `source: ingest:<name>` and no inbox TTL (the
user's own notes should not expire unread; dream and upgrade organize them), then
their [[links]] are resolved by name and alias into bidirectional links. Transcript
turns go through memory_remember's path, so facts and summaries follow. A note
whose source file is gone is reported, never deleted.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable, Set
from dataclasses import dataclass, field
from pathlib import Path

import structlog
import trio

from memoryd.config import Config
from memoryd.engine.conversation import Conversation
from memoryd.engine.links import Links
from memoryd.engine.requests import Changes, NewMemory
from memoryd.engine.stores import Stores
from memoryd.engine.writes import Writes
from memoryd.errors import InvalidParams, RpcError
from memoryd.ingest.document import Document, Scan
from memoryd.ingest.sources import SOURCES, IngestSource
from memoryd.retrieval.recall import without_block
from memoryd.schema import INGEST_PREFIX, MAX_CONTENT, MAX_LINKS, MAX_TAGS, content_hash
from memoryd.scopes import Caller
from memoryd.secrets.fields import redact_text, scrub_tags

log = structlog.get_logger("memoryd.ingest")
BATCH = 200  # notes per unit of work
LISTED = 50  # paths listed per reason in a report (the count is always exact)
DUPLICATE = "duplicate: the same content is already stored"
Progress = Callable[[int, int | None, str], Awaitable[None]]
# What an earlier ingest of the source stored: path -> (id, content hash, tags).
Known = dict[str, tuple[str, str, frozenset[str]]]


@dataclass
class Report:
    source: str
    path: str
    dry_run: bool
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    links: int = 0
    unresolved_links: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    noted: list[tuple[str, str]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    redacted: int = 0  # secrets cut out of the notes (secrets/)
    seconds: float = 0.0


class Ingest:
    def __init__(self, stores: Stores, writes: Writes, links: Links,
                 conversation: Conversation, config: Config) -> None:
        self.stores = stores
        self.writes = writes
        self.links = links
        self.conversation = conversation
        self.config = config

    def folder(self, source: IngestSource, path: str | None) -> Path | None:
        """The folder to read: `path`, else the configured one, else the default."""
        chosen = path or self.config.ingest.paths.get(source.name) or source.default
        return Path(chosen).expanduser() if chosen else None

    async def run(self, name: str, path: str | None, caller: Caller, *, dry_run: bool = False,
                  scope: str | None = None, progress: Progress | None = None
                  ) -> list[Report]:
        """Ingest one source (or `all`); a report per source."""
        scope = scope or caller.default_scope
        caller.check(scope)
        if name != "all":
            return [(await self._source(SOURCES[name], path, caller, scope, dry_run,
                                        progress))]
        if path is not None:
            raise InvalidParams("path", "--source all reads each source's own folder; "
                                "name one source to give a path")
        reports = []
        for source in SOURCES.values():
            folder = self.folder(source, None)
            if folder is None or not folder.is_dir():
                report = Report(source.name, str(folder or ""), dry_run)
                report.skipped.append((str(folder or "-"), "no folder configured" if folder
                                       is None else "the folder does not exist"))
                reports.append(report)
                continue
            reports.append(await self._source(source, None, caller, scope, dry_run,
                                               progress))
        return reports

    async def _source(self, source: IngestSource, path: str | None, caller: Caller,
                      scope: str, dry_run: bool, progress: Progress | None) -> Report:
        started = time.monotonic()
        folder = self.folder(source, path)
        if folder is None:
            raise InvalidParams("path", f"{source.name} has no default folder: pass a path "
                                f"or set ingest.paths.{source.name} in config.yaml")
        if not folder.is_absolute():
            raise InvalidParams("path", f"{str(folder)!r} is not an absolute path (the "
                                "daemon has no working folder of yours)")
        if folder == folder.parent:  # "/": every file of the machine, in one scope
            raise InvalidParams("path", f"{str(folder)!r} is the file system's root: name "
                                "the folder of the notes or transcripts, or one file")
        report = Report(source.name, str(folder), dry_run)
        only, read = None, source.read
        if folder.is_file():  # one session's transcript (a coding agent's hook)
            folder, only, read = _transcript(source, folder)
        elif not folder.is_dir():
            raise InvalidParams("path", f"no folder at {folder}")
        report_progress = progress or _quiet
        await report_progress(0, None, f"{source.name}: reading {report.path}")
        scan: Scan = await trio.to_thread.run_sync(read, folder)
        report.skipped += scan.skipped
        report.failed += scan.failed
        report.noted += scan.noted
        label = f"{INGEST_PREFIX}{source.name}"
        known = await self.stores.workers.read(self.stores.catalog.reader.ingested, label,
                                               f"{only}#" if only else "")
        # Names as they will be stored (secrets/fields.py, which the write applies
        # again): a note whose name holds a secret is found again by its stored name.
        redactor, cut = self.stores.redactor, Counter[str]()
        for doc in scan.documents:
            doc.path = redact_text(redactor, doc.path, cut)
        for turn in scan.turns:
            turn.path = redact_text(redactor, turn.path, cut)
        report.redacted += sum(cut.values())
        seen = {d.path for d in scan.documents} | {t.path for t in scan.turns}
        seen |= {p for p, _ in scan.skipped + scan.failed}
        report.missing = sorted(p for p in known if p not in seen)
        total = len(scan.documents) + len(scan.turns)
        ids = await self._notes(scan.documents, known, label, scope, caller, report,
                                dry_run, total, report_progress)
        if not dry_run:
            await self._link(scan.documents, ids, caller, report)
        if scan.turns:  # every line stored before (the current turns' among them), wherever
            # its turn went since
            stored = await self.stores.workers.read(self.stores.catalog.reader.known_lines,
                                                    label, f"{only}#" if only else "")
            await self._turns(scan, stored, label, scope, caller, report, dry_run, total,
                              report_progress)
        report.seconds = time.monotonic() - started
        await report_progress(total, total, f"{source.name}: {report.added} added, "
                              f"{report.updated} updated, {report.unchanged} unchanged")
        log.info("ingest.done", source=source.name, folder=str(folder), added=report.added,
                 updated=report.updated, unchanged=report.unchanged,
                 skipped=len(report.skipped), failed=len(report.failed),
                 missing=len(report.missing), seconds=round(report.seconds, 2))
        return report

    async def _notes(self, documents: list[Document], known: Known, label: str, scope: str,
                     caller: Caller, report: Report, dry_run: bool, total: int,
                     progress: Progress) -> dict[str, str]:
        """Add, update or leave each note; returns path -> memory id (for links)."""
        ids: dict[str, str] = {}
        adds: list[Document] = []
        updates: dict[str, tuple[Document, Changes]] = {}
        hashes: dict[str, str] = {}  # content hash -> path, within this run
        for doc in documents:
            # As it will be stored: an unchanged note with a secret is unchanged.
            cut: Counter[str] = Counter()
            doc.content = redact_text(self.stores.redactor, doc.content, cut)
            doc.tags = scrub_tags(self.stores.redactor, doc.tags, cut)
            report.redacted += sum(cut.values())
            if len(doc.content) > MAX_CONTENT:
                report.failed.append((doc.path, f"too large ({len(doc.content)} characters; "
                                      f"a memory holds at most {MAX_CONTENT})"))
                continue
            doc.tags = doc.tags[:MAX_TAGS]
            digest = content_hash(doc.content)
            if digest in hashes:
                report.skipped.append((f"{doc.path} (= {hashes[digest]})", DUPLICATE))
                continue
            hashes[digest] = doc.path
            entry = known.get(doc.path)
            if entry is not None:
                ids[doc.path] = entry[0]
                if entry[1] == digest and entry[2] == frozenset(doc.tags):
                    report.unchanged += 1
                else:
                    updates[entry[0]] = (doc, Changes(content=doc.content, tags=doc.tags))
                continue
            duplicate = await self.stores.workers.read(
                self.stores.catalog.writer.find_duplicate, digest, scope, "note")
            if duplicate is not None:
                report.skipped.append((f"{doc.path} (= memory {duplicate})", DUPLICATE))
                ids[doc.path] = duplicate
                continue
            adds.append(doc)
        if dry_run:
            report.added, report.updated = len(adds), len(updates)
            return ids
        done = report.unchanged
        for start in range(0, len(adds), BATCH):
            batch = adds[start:start + BATCH]
            results = await self.writes.write_many([NewMemory(
                content=d.content, tags=d.tags, scope=scope, source=label, source_path=d.path,
                created_at=d.created_at, expires=False, title=d.title,
                aliases=d.aliases) for d in batch], caller)
            for doc, result in zip(batch, results, strict=True):
                if isinstance(result, RpcError):
                    report.failed.append((doc.path, result.message))
                elif result[1]:
                    report.added += 1
                    ids[doc.path] = result[0].id
                else:  # the same content was stored meanwhile
                    report.skipped.append((f"{doc.path} (= memory {result[0].id})",
                                           DUPLICATE))
                    ids[doc.path] = result[0].id
            done += len(batch)
            await progress(done, total, f"{label}: {done}/{total}")
        pending = list(updates.items())
        for start in range(0, len(pending), BATCH):
            part = pending[start:start + BATCH]
            updated = await self.writes.update_many(dict((i, c) for i, (_, c) in part), caller)
            for (_, (doc, _)), outcome in zip(part, updated, strict=True):
                if isinstance(outcome, RpcError):
                    report.failed.append((doc.path, outcome.message))
                else:
                    report.updated += 1
            done += len(part)
            await progress(done, total, f"{label}: {done}/{total}")
        return ids

    async def _link(self, documents: list[Document], ids: dict[str, str], caller: Caller,
                    report: Report) -> None:
        """Resolve each note's [[links]] by name, then alias (case-insensitive), into
        bidirectional links between the ingested memories."""
        by_name: dict[str, str] = {}
        named = [doc for doc in documents if doc.path in ids]
        for doc in named:  # names first, aliases after: a name wins
            for name in doc.names:
                by_name.setdefault(name.casefold(), ids[doc.path])
        for doc in named:
            for alias in doc.aliases:
                by_name.setdefault(alias.casefold(), ids[doc.path])
        pairs: set[tuple[str, str]] = set()
        for doc in documents:
            source = ids.get(doc.path)
            if source is None:
                continue
            for target_name, counted in [*((n, True) for n in doc.links),
                                         *((n, False) for n in doc.soft_links)]:
                target = by_name.get(target_name.casefold())
                if target is None:
                    report.unresolved_links += counted
                elif target != source:
                    pairs.add((min(source, target), max(source, target)))
        degree: dict[str, int] = {}
        kept = []
        for a, b in sorted(pairs):  # a memory holds at most MAX_LINKS links
            if degree.get(a, 0) < MAX_LINKS - 100 and degree.get(b, 0) < MAX_LINKS - 100:
                degree[a] = degree.get(a, 0) + 1
                degree[b] = degree.get(b, 0) + 1
                kept.append((a, b))
        for start in range(0, len(kept), BATCH):
            added = await self.links.connect(kept[start:start + BATCH], caller)
            report.links += added // 2  # each pair adds a link at both ends

    async def _turns(self, scan: Scan, known: Set[str], label: str, scope: str,
                     caller: Caller, report: Report, dry_run: bool, total: int,
                     progress: Progress) -> None:
        """Transcript turns through memory_remember's path, oldest first per file; a
        line in `known` (stored once, even if its turn was evicted since) is not stored
        again."""
        done = total - len(scan.turns)
        for turn in scan.turns:
            done += 1
            if turn.path in known:
                report.unchanged += 1
                continue
            if len(turn.content) > MAX_CONTENT:  # refused before any rule reads it
                report.failed.append((turn.path, f"a turn of {len(turn.content):,} characters,"
                                                 f" more than a memory holds ({MAX_CONTENT:,})"))
                continue
            if dry_run:
                report.added += 1
                continue
            content = without_block(turn.content)
            if not content:
                report.skipped.append((turn.path, "only the <memory> block memoryd gave"))
                continue
            try:
                result = await self.conversation.remember(
                    turn.session, turn.role, content, caller, scope=scope,
                    timestamp=turn.created_at, source=label, source_path=turn.path)
            except RpcError as exc:
                report.failed.append((turn.path, exc.message))
                continue
            if result.skipped:
                report.skipped.append((turn.path, f"gate: {result.skipped.reason}"))
            else:
                report.added += 1
            await progress(done, total, f"{label}: {done}/{total}")


async def _quiet(done: int, total: int | None, message: str) -> None:
    return None


def _transcript(source: IngestSource, file: Path
                ) -> tuple[Path, str, Callable[[Path], Scan]]:
    """(the source's folder, the file within it, the reader of that file alone) for
    one transcript file: the nearest folder above it in which it stands where the
    source keeps its transcripts."""
    transcripts = source.transcripts
    if transcripts is None:
        raise InvalidParams("path", f"{file} is a file: {source.name} reads a folder")
    for parent in file.parents:
        rel = file.relative_to(parent).as_posix()
        if transcripts.holds(rel):
            break
    else:
        raise InvalidParams("path", f"{file} is not one of {source.name}'s transcripts "
                            f"({source.what})")

    def read(root: Path) -> Scan:
        return transcripts.read_one(root, rel)

    return parent, rel, read
