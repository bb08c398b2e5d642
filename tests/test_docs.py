"""The documentation holds together: every relative link of the README, docs/ and
bench/README.md names a file that exists (and a heading of it, when it names one),
and the README stays what a newcomer reads."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings."""
    anchors = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def test_every_relative_link_resolves() -> None:
    broken = []
    for page in PAGES:
        for target in _LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue  # a URL
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken


def test_the_readme_is_short_and_indexes_every_doc() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    for doc in sorted((ROOT / "docs").glob("*.md")):
        assert f"(docs/{doc.name})" in readme, f"the README's index lacks docs/{doc.name}"


def test_the_module_map_is_the_modules_own_docstrings():
    """docs/development.md's module map is made from each module's docstring: a module
    added, renamed or described anew changes it (`python scripts/module_map.py
    --write`)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "module_map", Path(__file__).parents[1] / "scripts" / "module_map.py")
    assert spec is not None and spec.loader is not None
    module_map = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module_map)
    assert module_map.in_doc() == module_map.module_map(), \
        "the module map is behind the code: run python scripts/module_map.py --write"
