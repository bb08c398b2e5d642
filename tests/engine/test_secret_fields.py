"""A secret in any field, by any way in, never reaches a file, a file or folder name, or
an index: every field of every tool, an imported line, an ingested vault (its file
names, front-matter tags and #hashtags), a hand-written file and its name. The secrets
are put after each field in several punctuations; afterwards every byte under the root
(the SQLite catalog and keyword index included) and every name is searched."""

from __future__ import annotations

import json

import pytest

from memoryd.schema import Memory
from memoryd.secrets.fields import scrub_memory
from memoryd.secrets.redact import Redactor
from tests.rig import Rig
from tests.secrets.corpus import SECRETS

# One secret of each provider form short enough for a tag (a distinct one per field, so
# a leak names its field).
FORMS = [secret for kind, secret, _ in SECRETS
         if kind not in ("private", "private-key", "connection-string", "assignment",
                         "bearer", "high-entropy", "aws-secret-key") and len(secret) <= 60]
PUNCTUATION = ["{}", "{}.", "({})", '"{}"', "{},"]


class Secrets:
    """A fresh secret for each use, made from the corpus forms (the body changed so
    each is distinct), remembered with the field it went into."""

    def __init__(self) -> None:
        self.used: dict[str, str] = {}

    def __call__(self, field: str, wrap: str = "{}") -> str:
        n = len(self.used)
        form = FORMS[n % len(FORMS)]
        turn = 1 + n // len(FORMS)  # its tail turned: still its form, another secret
        secret = form[:-12] + form[-12:][turn:] + form[-12:][:turn]
        self.used[secret] = field
        return wrap.format(secret)


def _everything(root) -> bytes:
    parts = [p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    return b"\n".join([*parts, *(str(p).encode() for p in root.rglob("*"))])


@pytest.fixture
async def rig(tmp_path):
    rig = Rig(tmp_path / "root")
    await rig.start()
    yield rig
    rig.close()


async def test_no_field_of_any_way_in_keeps_a_secret(rig, tmp_path):
    s = Secrets()
    cases = 0
    for wrap in PUNCTUATION:
        tag = wrap.replace(",", ";")  # a tag holds no comma
        w = await rig.result("memory_write", content=f"deploy notes {s('write.content', wrap)}",
                             title=f"keys {s('write.title', wrap)}",
                             tags=[s("write.tag", tag), "ops"],
                             source=s("write.source", wrap))
        await rig.result("memory_update", id=w["id"], tags=[s("update.tag", tag)],
                         title=f"new {s('update.title', wrap)}")
        await rig.result("memory_tag", id=w["id"], add=[s("tag.add", tag)])
        await rig.result("memory_remind", content=f"rotate {s('remind.content', wrap)}",
                         when="tomorrow at 9", tags=[s("remind.tag", tag)])
        cases += 9
    for n in range(3):
        session = s("remember.session")
        await rig.result("memory_remember", session=session, role="user",
                         content=f"hello number {n}")
        cases += 1
    line = {"id": s("import.id"), "title": f"t {s('import.title', '{}.')}",
            "content": f"imported {s('import.content', '({})')}",
            "tags": [s("import.tag", '"{}"')], "source": s("import.source"),
            "source_path": f"notes/{s('import.source_path')}.md",
            "extra": {s("import.extra-key"): s("import.extra-value", "{}."),
                      "nested": [{"deep": s("import.extra-deep")}]},
            "kind": "turn", "role": "user", "session": s("import.session"),
            "created_at": "2026-01-02T03:04:05Z"}
    imported = await rig.result("memory_import", lines=[json.dumps(line)])
    assert imported["imported"] == 1, imported
    again = await rig.result("memory_import", lines=[json.dumps(line)])
    assert again["skipped"] == 1  # found under the name it was stored by
    cases += 11
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / f"{s('ingest.file-name')}.md").write_text(
        f"---\ntags: [{s('ingest.front-matter-tag')}]\n---\n# Ops\n\n"
        f"see #{s('ingest.hashtag')} and {s('ingest.content', '{}.')}\n")
    report = await rig.result("memory_ingest", source="markdown", path=str(vault))
    assert report["added"] == 1, report
    again = await rig.result("memory_ingest", source="markdown", path=str(vault))
    assert again["unchanged"] == 1, again
    cases += 4
    folder = rig.root / "categories" / "people"
    hand = folder / f"{s('hand.file-name')}.md"
    hand.write_text(f"---\ntitle: {s('hand.title')}\ntags: [{s('hand.tag')}]\n"
                    f"owner: {s('hand.extra', '{}.')}\n---\nby hand {s('hand.content', '`{}`')}\n")
    await rig.engine.sync.sync_paths([str(hand.relative_to(rig.root))])
    cases += 5
    found = _everything(rig.root)
    leaked = sorted(field for secret, field in s.used.items() if secret.encode() in found)
    assert leaked == [], f"{len(leaked)} of {cases} fields leaked: {leaked}"
    assert b"[REDACTED:" in found and b"redacted-" in found
    assert not hand.exists()  # renamed: its name held a secret
    listed = await rig.result("memory_list", limit=100)
    assert any(m["content"].startswith("by hand") for m in listed["memories"])


CONTEXTS = ["{}", "{}.", "{},", "({})", "[{}]", '"{}"', "'{}'", "`{}`", "{}.\n", "<{}>",
            "{};", "{}!"]


def test_every_field_of_a_memory_is_cleaned_in_every_context():
    """The boundary itself (secrets/fields.py): any form × any context × any field."""
    redactor = Redactor()
    cases = leaked = 0
    for secret in FORMS:
        for context in CONTEXTS:
            text = context.format(secret)
            one_line = text.replace("\n", " ").strip()
            name = secret if context == "{}" else "plain"  # a name has no context
            memory = Memory(id=name, title=one_line, content=text, tags=[one_line],
                            source=one_line, source_path=one_line, session=name,
                            links=[name], extra={one_line: text, "k": [{"v": text}]})
            scrub_memory(redactor, memory)
            cases += 9
            leaked += secret in json.dumps([memory.id, memory.title, memory.content,
                                            memory.tags, memory.source, memory.source_path,
                                            memory.session, memory.links, memory.extra])
            before = json.dumps(memory.extra) + memory.content + memory.id
            assert not scrub_memory(redactor, memory)  # a second pass finds nothing
            assert json.dumps(memory.extra) + memory.content + memory.id == before
    assert cases > 1500 and leaked == 0
