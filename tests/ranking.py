"""Ranking assertions that a different CPU, thread count or embedder variant cannot flip.

A test that asserts one memory ranks above another with the real model asserts it by a
margin: the int8 and fp32 vectors of a text differ by about 0.005 in cosine, another
CPU's float rounding by far less, so an order decided in the fourth decimal is a coin
flip, not behaviour. `MARGIN` is above both; the suite is run with
`MEMORYD_EMBEDDER=fp32`, `MEMORYD_EMBEDDER_THREADS=2` and `MEMORYD_SCORING=float` to
keep it honest.
"""

from __future__ import annotations

from typing import Any

MARGIN = 0.01


def ranked(explained: dict[str, Any]) -> list[dict[str, Any]]:
    """`memory_explain`'s ranked candidates, best first."""
    return sorted((c for c in explained["candidates"] if c["rank"]), key=lambda c: c["rank"])


def score_of(explained: dict[str, Any], memory_id: str) -> float:
    (candidate,) = [c for c in explained["candidates"] if c["id"] == memory_id]
    return float(candidate["scores"]["score"])


def assert_before(explained: dict[str, Any], first: str, second: str,
                  margin: float = MARGIN) -> None:
    """`first` ranks above `second` and scores at least `margin` more."""
    order = [c["id"] for c in ranked(explained)]
    assert first in order, f"{first} is not ranked"
    assert second not in order or order.index(first) < order.index(second), order
    if second in order:
        gap = score_of(explained, first) - score_of(explained, second)
        assert gap >= margin, f"ahead by {gap:.4f}, less than {margin}: a coin flip"


def assert_first(explained: dict[str, Any], first: str, margin: float = MARGIN) -> None:
    """`first` ranks first, at least `margin` above the next."""
    order = ranked(explained)
    assert order and order[0]["id"] == first, [c["id"] for c in order]
    if len(order) > 1:
        assert_before(explained, first, order[1]["id"], margin)
