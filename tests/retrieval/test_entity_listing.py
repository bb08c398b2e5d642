"""memory_entities and memory_read's entities through the tool dispatcher: what a
caller may see only, an entity by any spelling, and the same list after the index is
deleted and rebuilt from the files."""

from __future__ import annotations

import shutil

from memoryd.protocol.dispatch import Connection
from memoryd.scopes import Caller


def _as(agent: str) -> Connection:
    conn = Connection()
    conn.caller = Caller(agent=agent)
    return conn


async def test_entities_are_listed_for_what_the_caller_may_see(make_harness, tmp_path):
    root = tmp_path / "root"
    h = await make_harness(root=root)
    claude = Caller(agent="agent:claude")
    ann = await h.write("I met Ann Smith at the Bank of America in New York.")
    await h.write("On Friday Ann showed me the harbour of New York.")
    await h.write("The deploy key for Kestrel lives in the vault.", caller=claude,
                  scope="agent:claude")
    listed = await h.call("memory_entities", _as("agent:codex"))
    names = {e["name"]: e["memories"] for e in listed["entities"]}
    assert names == {"New York": 2, "Ann Smith": 1, "Bank of America": 1, "Ann": 1}
    assert "Kestrel" in {e["name"] for e in
                         (await h.call("memory_entities", _as("agent:claude")))["entities"]}
    one = await h.call("memory_entities", _as("agent:codex"), name="ANN")
    (entity,) = one["entities"]
    assert entity["name"] == "Ann" and entity["aliases"] == ["Ann Smith"]
    assert entity["memories"] == 2 and len(one["memories"]) == 2
    assert [e["name"] for e in one["beside"]] == ["New York", "Bank of America"]
    nobody = await h.call("memory_entities", _as("agent:codex"), name="Kestrel")
    assert nobody["entities"] == [] and nobody["memories"] == []
    read = await h.call("memory_read", id=ann)
    assert read["entities"] == ["Ann Smith", "Bank of America", "New York"]

    h.engine.close()
    shutil.rmtree(root / "index")  # derived: made again from the files
    again = await make_harness(root=root)
    rebuilt = await again.call("memory_entities", _as("agent:codex"))
    assert rebuilt["entities"] == listed["entities"]
