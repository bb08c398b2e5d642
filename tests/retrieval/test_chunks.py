"""Long notes are indexed by their semantic chunks: the rules, and a
question about a late section finding its note with the real model."""

from __future__ import annotations

from memoryd.retrieval import chunks
from memoryd.scopes import Caller

SECTIONS = [
    "The lighthouse on the northern cape was built in 1871 from granite quarried on the "
    "island. Its keepers lived in two cottages beside the tower and rowed to the village "
    "for supplies once a week.",
    "Brewing coffee with a moka pot: fill the base with hot water up to the valve, add "
    "finely ground coffee to the funnel without tamping, and heat gently until it gurgles.",
    "Cricket for a baseball fan: the bowler delivers with a straight arm, the batter "
    "defends a wicket of three stumps, and an innings ends after ten batters are out.",
    "Bicycle chains wear out: measure the stretch with a chain checker, clean the links "
    "with degreaser, and replace the chain before it ruins the cassette.",
    "Arctic terns migrate from Greenland to the Weddell Sea every year, the longest "
    "migration of any animal, flying roughly seventy thousand kilometres a round trip.",
    "Sourdough starter needs feeding twice a day at room temperature; equal weights of "
    "flour and water keep it at one hundred percent hydration.",
]


def long_note() -> str:
    # Each section well above 50 tokens; together far beyond one chunk.
    return "\n\n".join(" ".join([s] * 3) for s in SECTIONS)


def test_short_text_is_not_chunked() -> None:
    assert chunks.chunk("one short paragraph.\n\nand another.") == []


def test_long_text_splits_at_blank_lines_then_sentences_and_merges_small_pieces() -> None:
    text = long_note()
    spans = chunks.chunk(text)
    assert len(spans) == len(SECTIONS)
    assert [text[a:b] for a, b in spans] == [" ".join([s] * 3) for s in SECTIONS]
    huge = " ".join(f"Sentence number {n} says something." for n in range(200))
    pieces = chunks.chunk(huge)
    assert len(pieces) > 1 and all(chunks.tokens(huge[a:b]) <= chunks.MAX_TOKENS
                                   for a, b in pieces)
    small = "\n\n".join(["tiny bit"] * 5 + [" ".join(["word"] * 200)] * 2)
    merged = chunks.chunk(small)
    assert len(merged) == 2
    assert all(chunks.tokens(small[a:b]) >= chunks.MIN_TOKENS for a, b in merged)
    assert "".join(small[a:b] for a, b in merged).replace("\n", "") == small.replace("\n", "")


async def test_a_question_about_the_fifth_section_finds_the_note(make_harness) -> None:
    h = await make_harness()
    note = await h.write(long_note(), category="knowledge")
    for n in range(30):
        await h.write(f"Distractor note {n}: the weekly team meeting moved to room {n}.")
    found = await h.call("memory_smart_search", query="how far do arctic terns fly?",
                         top_k=3)
    assert found["memories"][0]["id"] == note
    trace = await h.call("memory_explain", query="how far do arctic terns fly?", top_k=3)
    top = next(c for c in trace["candidates"] if c["id"] == note)
    assert top["chunk"]["index"] == 4 and "Arctic terns" in top["chunk"]["text"]

    # Edited down to one short paragraph: its chunks (and their vectors) are gone.
    await h.engine.writes.update(note, _content("A short note now."), Caller())
    assert note not in h.engine.stores.hybrid.corpus.chunks


async def test_chunk_vectors_persist_across_a_restart(make_harness, tmp_path) -> None:
    h = await make_harness()
    note = await h.write(long_note(), category="knowledge")
    h.engine.close()
    again = await make_harness(root=tmp_path)
    corpus = again.engine.stores.hybrid.corpus
    assert len(corpus.chunks[note][0]) == len(SECTIONS)
    summary = again.engine.stores.hybrid.reconcile(again.engine.catalog.writer.all_memories())
    assert summary["vectors_embedded"] == 0


def _content(text: str):
    from memoryd.engine import Changes
    return Changes(content=text)


async def test_chunk_vectors_missing_from_the_store_are_embedded_at_start(rig) -> None:
    note = await rig.result("memory_write", content=long_note(), category="knowledge")
    hybrid = rig.engine.stores.hybrid
    hybrid.persist_deferred()  # the own vector, as the daemon writes it within a second
    hybrid.vectors.data = {k: v for k, v in hybrid.vectors.data.items() if k[0] != "chunk"}
    summary = hybrid.reconcile(rig.engine.catalog.writer.all_memories())
    assert summary["vectors_embedded"] == len(SECTIONS)
    assert len(hybrid.corpus.chunks[note["id"]][0]) == len(SECTIONS)
    stored = [k for (kind, _), col in hybrid.vectors.data.items() if kind == "chunk" for k in col]
    assert sorted(stored) == [f"{note['id']}#{n}" for n in range(len(SECTIONS))]
