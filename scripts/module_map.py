"""The module map of docs/development.md, made from the modules' own docstrings: every
package and module of memoryd and the clients, each with the first sentence of its
docstring. A module's docstring is where what it does is said; the map repeats it, so
it cannot fall behind the code (tests/test_docs.py compares the two).

    python scripts/module_map.py            # print the map
    python scripts/module_map.py --write    # put it into docs/development.md
"""

from __future__ import annotations

import argparse
import ast
import re
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "development.md"
BEGIN = "<!-- module map: made by scripts/module_map.py from the docstrings -->"
END = "<!-- end of the module map -->"
TREES = (("memoryd/", ROOT / "memoryd"), ("clients/memoryd_client/",
                                          ROOT / "clients" / "memoryd_client"),
         ("clients/memoryctl/", ROOT / "clients" / "memoryctl"))
NAME_WIDTH = 26
WIDTH = 92
LINES = 2  # at most, an entry


def first_sentence(path: Path) -> str:
    """The first sentence of a module's docstring, on one line ("" when it has none)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    paragraph = " ".join(doc.split("\n\n", 1)[0].split())
    match = re.match(r"(.+?\.)(?:\s|$)", paragraph)
    return (match.group(1) if match else paragraph).rstrip(".")


def _line(indent: int, name: str, text: str) -> list[str]:
    head = " " * indent + name
    pad = max(NAME_WIDTH, len(head) + 2)
    body = textwrap.wrap(text, WIDTH - pad) or [""]
    if len(body) > LINES:  # the map points; the module's docstring says the rest
        body = [*body[:LINES - 1], textwrap.shorten(" ".join(body[LINES - 1:]),
                                                     WIDTH - pad, placeholder=" …")]
    return [f"{head.ljust(pad)}{body[0]}".rstrip(),
            *(" " * pad + rest for rest in body[1:])]


def _tree(folder: Path, indent: int) -> list[str]:
    lines: list[str] = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith(("_", ".")) or path.name == "__pycache__":
            continue
        if path.is_dir() and (path / "__init__.py").exists():
            lines += _line(indent, f"{path.name}/", first_sentence(path / "__init__.py"))
            lines += _tree(path, indent + 2)
        elif path.suffix == ".py":
            lines += _line(indent, path.name, first_sentence(path))
    return lines


def module_map() -> str:
    lines = ["```"]
    for label, folder in TREES:
        lines += _line(0, label, first_sentence(folder / "__init__.py"))
        lines += _tree(folder, 2)
    lines.append("```")
    return "\n".join(lines)


def in_doc() -> str:
    """The map as docs/development.md holds it now."""
    text = DOC.read_text(encoding="utf-8")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="into docs/development.md")
    args = parser.parse_args()
    made = module_map()
    if not args.write:
        print(made)
        return
    text = DOC.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{BEGIN}\n{made}\n{END}{tail}", encoding="utf-8")


if __name__ == "__main__":
    main()
