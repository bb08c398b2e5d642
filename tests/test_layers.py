"""The layers, read from the source: who may reach into what.

- Outside `engine/` (and `server/wiring.py`, which builds it), nothing reaches into
  the engine's stores (`engine.stores`, `.files`, `.catalog`, `.events`,
  `.graph_store`, `.workers.`): callers use the engine's own methods.
- Outside `retrieval/`, nothing touches the corpus: its locks and layout are
  retrieval's to know.
- No two packages of `memoryd` import each other, directly or round about.
- The import contracts in pyproject.toml (`lint-imports`): the packages' layers, the
  protocol importing no tool, engine or ingest source, the daemon importing no client,
  what each client takes of the daemon, and memoryd_client on the standard library
  only. Every import counts, those under `if TYPE_CHECKING:` too.

ALLOWED lists breaks still to be mended, per file and rule, with the count: it started
with those of the day the test was written and is empty now; keep it so. A new break
fails the test; so does an entry that no longer breaks (remove it).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "memoryd"
_STORES = re.compile(r"\bengine\.(?:stores|files|catalog|events|graph_store)\b|\.workers\.")
_CORPUS = re.compile(r"\.corpus\b")

ALLOWED: dict[str, int] = {}
ALLOWED_CYCLES: set[frozenset[str]] = set()


def _sources() -> list[tuple[str, str]]:
    return [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"))
            for p in sorted(PACKAGE.rglob("*.py"))]


def _code_lines(text: str) -> list[str]:
    """The lines of code, comments and docstrings left out (a docstring may name
    what the code must not do)."""
    tree = ast.parse(text)
    docs: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            docs.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return [line.split("#", 1)[0] for n, line in enumerate(text.splitlines(), 1)
            if n not in docs]


def _imports(text: str) -> list[str]:
    """Every module a file imports at run time (TYPE_CHECKING blocks left out)."""
    tree = ast.parse(text)
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                typing_only.update(id(n) for n in ast.walk(inner))
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
            found += [f"{node.module}.{a.name}" for a in node.names]
    return found


def _package(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "memoryd" or len(parts) < 2:
        return None
    name = parts[1]
    return name if (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").exists() else None


def breaks() -> Counter[str]:
    found: Counter[str] = Counter()
    for path, text in _sources():
        lines = _code_lines(text)
        if not path.startswith("memoryd/engine/") and path != "memoryd/server/wiring.py":
            found[f"stores: {path}"] += sum(len(_STORES.findall(line)) for line in lines)
        if not path.startswith("memoryd/retrieval/"):
            found[f"corpus: {path}"] += sum(len(_CORPUS.findall(line)) for line in lines)
    return +found  # the zero counts dropped


def cycles() -> set[frozenset[str]]:
    """The packages that import each other, round about: strongly connected groups."""
    edges: dict[str, set[str]] = {}
    for path, text in _sources():
        own = _package(path[:-3].replace("/", "."))
        if own is None:
            continue
        for module in _imports(text):
            other = _package(module)
            if other is not None and other != own:
                edges.setdefault(own, set()).add(other)
    groups: set[frozenset[str]] = set()
    for start in edges:
        reach = _reachable(edges, start)
        group = frozenset(p for p in reach if start in _reachable(edges, p))
        if len(group) > 1:
            groups.add(group)
    return groups


def _reachable(edges: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for other in edges.get(todo.pop(), ()):
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return seen


def test_no_layer_is_reached_into_past_the_allowlist() -> None:
    found = breaks()
    new = {k: v for k, v in found.items() if v > ALLOWED.get(k, 0)}
    fixed = {k: v for k, v in ALLOWED.items() if found.get(k, 0) < v}
    assert not new, f"new reaches into another layer (use the engine's methods): {new}"
    assert not fixed, f"fewer than allowed: lower or remove these in ALLOWED: {fixed}"


def test_no_packages_import_each_other() -> None:
    found = cycles()
    assert found <= ALLOWED_CYCLES, f"packages importing each other: " \
        f"{[sorted(g) for g in found - ALLOWED_CYCLES]}"
    assert found >= ALLOWED_CYCLES, "a cycle is gone: remove it from ALLOWED_CYCLES"


def test_the_import_contracts_are_kept() -> None:
    """pyproject.toml's import-linter contracts, over every import of the three packages
    (scripts/test runs `lint-imports` as well, for its report)."""
    from importlinter.application.use_cases import lint_imports
    from importlinter.configuration import configure

    configure()  # what its command does first: the readers of pyproject.toml
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_logo=True,
                        cache_dir=None), \
        "an import contract is broken: run `.venv/bin/lint-imports` for which"
