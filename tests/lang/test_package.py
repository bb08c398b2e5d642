"""The language rules live in memoryd/lang/: a module anywhere else that uses a regular
expression reads a format with it (ids, paths, front matter, markup, a transcript's
lines, secrets' forms), never what a sentence says. A new one fails here until it is
listed with the format it reads, or its rule moves into lang/."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "memoryd"

FORMATS = {
    "dream/links.py": "[[wikilinks]]",
    "durations.py": "a duration in the config (5m, 2h)",
    "graph/episodes.py": "runs of white space",
    "history/purge.py": "git fast-export's data lines",
    "history/remote.py": "the credentials in a remote's URL",
    "ingest/chatgpt.py": "session ids",
    "ingest/claude_code.py": "session ids",
    "ingest/codex.py": "session ids, and the id in a transcript's file name",
    "ingest/gemini.py": "session ids, and the hook's context block",
    "ingest/logseq.py": "Logseq's properties, journal names and references",
    "ingest/markup.py": "Markdown's wikilinks, tags, fences and inline code",
    "jobs/consolidate.py": "punctuation, folded away before texts are compared",
    "protocol/codec.py": "msgspec's error messages",
    "rescope.py": "a scope's name",
    "retrieval/chunks.py": "blank lines between a note's paragraphs",
    "retrieval/recall.py": "the <memory> block's tags",
    "schema.py": "ids, and msgspec's error messages",
    "scopes.py": "agent and project names",
    "secrets/redact.py": "secrets' forms",
    "secrets/rules.py": "secrets' forms",
    "store/catalog_sql.py": "the words SQLite's full-text index holds",
    "store/copies.py": "sync tools' conflict-copy names",
    "store/frontmatter.py": "YAML scalars that need no quotes",
    "store/names.py": "characters a file name may not hold",
}


def _uses_re(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    return any((isinstance(node, ast.Import) and any(a.name == "re" for a in node.names))
               or (isinstance(node, ast.ImportFrom) and node.module == "re")
               for node in ast.walk(tree))


def test_a_regular_expression_outside_lang_reads_a_format():
    found = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
             if "lang" not in p.relative_to(PACKAGE).parts[:1] and _uses_re(p)}
    assert found == set(FORMATS), (sorted(found - set(FORMATS)), sorted(set(FORMATS) - found))
