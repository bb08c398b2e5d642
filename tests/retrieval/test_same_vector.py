"""A memory's vector is a function of its text: the same written alone into a small
store, in a group commit among thirty others of its token count (so in their model
call) into a bigger one, and after a reindex
(the real model, int8 unless MEMORYD_EMBEDDER says otherwise)."""

from __future__ import annotations

import numpy as np

from memoryd.engine import NewMemory
from memoryd.errors import RpcError
from memoryd.models.assets import locate_assets
from memoryd.models.embedder import load_tokenizer
from memoryd.scopes import Caller

TEXT = "The user's sister Maya moved to Lisbon last spring and now works at a bakery."
QUERY = "where does Maya live now?"


def same_length_others(count: int = 30) -> list[str]:
    """Other texts of TEXT's token count: a model call holds texts of one token count,
    so only these can share TEXT's call (and, per call, its quantisation)."""
    tokenizer = load_tokenizer(locate_assets() / "tokenizer.json", pad=False)
    length = len(tokenizer.encode(TEXT).ids)
    people = ["brother Tom", "aunt Rosa", "friend Ken", "cousin Ana", "neighbour Li"]
    places = ["Porto", "Oslo", "Kyoto", "Denver", "Quito", "Accra"]
    jobs = ["a library", "a clinic", "a garage", "a school", "an airline", "a farm"]
    found = [text for who in people for where in places for job in jobs
             if len(tokenizer.encode(text := f"The user's {who} moved to {where} last "
                                              f"winter and now works at {job}.").ids) == length]
    assert len(found) >= count, len(found)
    return found[:count]


async def _vector_and_dense(h, memory_id: str) -> tuple[np.ndarray, float]:
    (vector,) = h.engine.stores.hybrid.own_vectors([memory_id]).values()
    out = await h.call("memory_explain", query=QUERY, top_k=5)
    (candidate,) = [c for c in out["candidates"] if c["id"] == memory_id]
    return vector, candidate["scores"]["dense"]


async def test_alone_in_a_batch_and_after_a_reindex(make_harness, tmp_path) -> None:
    small = await make_harness(root=tmp_path / "small")
    alone = await small.write(TEXT, category="people")
    big = await make_harness(root=tmp_path / "big")
    others = same_length_others()
    written = await big.engine.writes.write_many(
        [NewMemory(content=c, category="knowledge") for c in others[:17]]
        + [NewMemory(content=TEXT, category="people")]
        + [NewMemory(content=c, category="knowledge") for c in others[17:]], Caller())
    item = written[17]
    assert not isinstance(item, RpcError), item
    batched = item[0].id
    vector, dense = await _vector_and_dense(small, alone)
    in_batch, dense_in_batch = await _vector_and_dense(big, batched)
    assert np.array_equal(vector, in_batch)
    assert dense == dense_in_batch
    await big.engine.sync.startup(force_embed=True)  # what `memoryd reindex` does
    reindexed, dense_reindexed = await _vector_and_dense(big, batched)
    assert np.array_equal(vector, reindexed)
    assert dense == dense_reindexed
