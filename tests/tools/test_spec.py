"""The one tool table (tools/spec.py) against everything made from it or kept beside it:
handlers, memoryctl's tools.json, the documentation's tables; the job table and error
codes."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from memoryd.config import Config
from memoryd.errors import ERROR_CODES
from memoryd.schedule.table import JOBS, SCHEDULED
from memoryd.tools import generate, registry
from memoryd.tools.spec import SPECS

ROOT = Path(__file__).parents[2]
DOCS = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md")))


def _rows(header: str) -> dict[str, list[str]]:
    """A table of docs/ (found by its header line): first cell -> the other cells."""
    lines = DOCS[DOCS.index(header):].splitlines()[2:]
    rows = {}
    for line in lines:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip("|"))]
        rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_every_tool_has_a_handler_and_every_handler_a_tool():
    assert set(registry.handlers()) == set(SPECS)


def test_client_files_are_generated_from_the_spec():
    for path, text in ((generate.TOOLS_JSON, generate.cli_table_json()),
                       (generate.CLIENT_METHODS, generate.client_methods())):
        assert path.read_text(encoding="utf-8") == text, (
            f"{path} is stale: run `.venv/bin/python -m memoryd.tools.generate`")


def test_tools_carry_mcp_annotations_and_a_title():
    for spec in SPECS.values():
        described = spec.describe()
        assert described["title"] and described["annotations"]["title"] == spec.title
        assert not (spec.read_only and spec.destructive), spec.name


def test_the_documented_tool_table_matches_the_spec():
    rows = _rows("| tool | params")
    assert list(rows) == list(SPECS), "one row per tool in docs/tools.md, in the table's order"
    for name, (params, _does) in rows.items():
        same = re.fullmatch(r"same as `(\w+)`", params)
        spec = SPECS[same.group(1) if same else name]
        listed = {p.strip().rstrip("?") for p in re.split(r",|\\\|", params)} if not same \
            else set(spec.params.__struct_encode_fields__)
        optional = {p.strip()[:-1] for p in re.split(r",|\\\|", params)
                    if p.strip().endswith("?")} if not same else None
        fields = spec.params.__struct_encode_fields__
        assert listed == set(fields), name
        if optional is not None:
            required = set(spec.params.__struct_fields__[:len(fields)
                                                         - len(spec.params.__struct_defaults__)])
            assert not (optional & required), f"{name}: required params marked optional"


def test_the_documented_error_table_is_the_error_codes():
    rows = _rows("| code | meaning |")
    assert {int(code): cells[0] for code, cells in rows.items()} == ERROR_CODES


def test_job_table_is_the_config_the_docs_and_the_example():
    assert {j.config_key for j in SCHEDULED} | {"enabled"} == set(
        Config().jobs.__struct_fields__)
    assert set(_rows("| job | default | does |")) == {j.name for j in JOBS}
    example = yaml.safe_load((ROOT / "config.example.yaml").read_text(encoding="utf-8"))
    assert set(example["jobs"]) == {j.config_key for j in SCHEDULED} | {"enabled"}
