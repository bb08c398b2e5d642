"""memoryctl's ingest summary: one line per reason, an odd file name kept on its line."""

from __future__ import annotations

from memoryctl.data import show_ingest


def test_an_ingest_summary_keeps_each_odd_path_on_one_line() -> None:
    report = {"source": "logseq", "path": "/g", "dry_run": False, "added": 2, "updated": 0,
              "unchanged": 0, "links": 1, "unresolved_links": 0, "seconds": 0.2,
              "skipped": [{"reason": "the name holds a line break or NUL", "count": 1,
                           "paths": ["pages/line\nbreak.md"]}],
              "failed": [],
              "noted": [{"reason": "the journal's name is not a real date", "count": 4,
                         "paths": ["journals/2024_02_30.md", "j/b.md", "j/c.md", "j/d.md"]}],
              "missing": {"count": 0, "paths": []}}
    lines = show_ingest({"reports": [report]}).splitlines()
    assert lines[0].startswith("logseq (/g): added 2, updated 0")
    assert lines[1] == "  skipped 1: the name holds a line break or NUL  (pages/line\\nbreak.md)"
    assert lines[2] == ("  noted 4: the journal's name is not a real date  "
                        "(journals/2024_02_30.md, j/b.md, j/c.md ...)")
    assert len(lines) == 3
