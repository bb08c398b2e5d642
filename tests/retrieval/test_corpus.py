"""The in-memory corpus: rows, neighbours, in-place refresh and compaction."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np

from memoryd.retrieval import scoring
from memoryd.retrieval.columns import CODED, COLUMNS
from memoryd.retrieval.corpus import Corpus
from memoryd.schema import Memory


def turn(i: int, text: str, session: str = "s1") -> Memory:
    return Memory(id=f"t{i}", content=text, kind="turn", session=session,
                  created_at=datetime(2024, 1, 1, tzinfo=UTC) + timedelta(seconds=i))


def vec(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(8).astype(np.float32)
    return v / np.linalg.norm(v)


def test_neighbours_follow_time_order_and_removals():
    c = Corpus(dim=8)
    for i in (2, 0, 1):
        c.put(turn(i, f"turn {i}"), [f"w{i}"], vec(i))
    assert c.neighbours("t1") == ("t0", "t2")
    c.remove("t1")
    assert c.neighbours("t0") == (None, "t2") and c.neighbours("t2") == ("t0", None)


def test_refresh_in_place_and_compaction_keep_scores():
    c = Corpus(dim=8)
    for i in range(6):
        c.put(turn(i, f"turn {i}"), ["alpha", f"w{i}"], vec(i))
    m = turn(3, "turn 3")
    m.tags = ["new"]
    assert c.refresh(m) and c.size == 6, "a metadata change adds no row"
    mask = c.alive[: c.size].copy()
    before = scoring.lexical(c, ["w4"], mask, scoring.Recipe())
    score_before = {c.meta[r].id: float(before[r]) for r in range(c.size) if c.meta[r]}
    for i in (0, 1, 5):
        c.remove(f"t{i}")
    c.put(turn(3, "turn 3 edited"), ["alpha", "w3", "w3b"], vec(33))
    c.compact()
    assert c.size == c.live == 3
    assert sorted(c.row_of) == ["t2", "t3", "t4"]
    assert c.neighbours("t3") == ("t2", "t4")
    after = scoring.lexical(c, ["w4"], c.alive[: c.size].copy(), scoring.Recipe())
    got = {c.meta[r].id: float(after[r]) for r in range(c.size)}
    assert got["t4"] > 0 and got["t3"] > 0, "t4 matches, t3 via its neighbour field"
    assert got["t2"] == 0
    assert score_before["t4"] > 0
    own = c.vectors("own", [c.row_of["t3"]])[0]
    assert np.allclose(own, vec(33), atol=np.abs(vec(33)).max() / 254)  # int8: half a step
    rows = np.arange(c.size)
    assert np.allclose(c.mean("own", rows), c.vectors("own", rows).mean(axis=0), atol=1e-6)


def test_lexical_raises_only_the_reached_rows_as_the_whole_formula_would():
    """The coverage power is applied to the rows a term reached (the others are 0):
    the scores are the ones raising every row gives, bit for bit, and a power of 0
    still raises every row."""
    c = Corpus(dim=8)
    for i in range(40):
        c.put(turn(i, f"turn {i}", session=f"s{i % 3}"),
              ["alpha"] * (i % 2) + [f"w{i % 5}", "beta"] * (i % 3 == 0), vec(i))
    mask = c.alive[: c.size].copy()
    mask[::7] = False
    terms = ["alpha", "w2", "beta", "nowhere"]
    for power in (1.5, 1.0, 0.7):
        recipe = scoring.Recipe(coverage_power=power)
        got = scoring.lexical(c, terms, mask, recipe)
        raw = scoring.lexical(c, terms, mask, scoring.Recipe(coverage_power=1.0))
        idf_free = np.power(raw, power, dtype=np.float32)  # raw is out / idf_mass
        assert np.count_nonzero(got) and not np.count_nonzero(got[~mask])
        assert np.allclose(got, idf_free, rtol=1e-6, atol=0)
    zero = scoring.lexical(c, terms, mask, scoring.Recipe(coverage_power=0))
    assert np.all(zero == 1.0)


def _whole_array_lexical(c: Corpus, terms: list[str], mask: np.ndarray,
                         recipe: scoring.Recipe) -> np.ndarray:
    """The formula over every row at once (as `lexical` was before it worked on the rows
    a term reaches): the reference its scores must equal bit for bit."""
    n = c.size
    out = np.zeros(n, dtype=np.float32)
    total = int(mask.sum())
    prev, nxt = c.prev[:n], c.next[:n]
    w = recipe.neighbour_field
    length = c.length[:n].copy()
    has_prev, has_next = prev >= 0, nxt >= 0
    length[has_prev] += w * c.length[prev[has_prev]]
    length[has_next] += w * c.length[nxt[has_next]]
    avg = float(length[mask].mean(dtype=np.float64)) or 1.0
    norm = recipe.k1 * (1 - recipe.b + recipe.b * length / avg)
    idf_mass = 0.0
    for term in dict.fromkeys(terms):
        tf = np.zeros(n, dtype=np.float32)
        posting = c.posting(term)
        if posting is not None:
            rows, freqs = posting
            live = c.alive[rows]
            rows, freqs = rows[live], freqs[live]
            np.add.at(tf, rows, freqs)
            for spill in (nxt[rows], prev[rows]):
                ok = spill >= 0
                np.add.at(tf, spill[ok], w * freqs[ok])
        df = int(np.count_nonzero((tf != 0) & mask))
        idf = math.log(1 + (total - df + 0.5) / (df + 0.5))
        idf_mass += idf
        if df:
            share = np.multiply(idf, tf)
            share *= recipe.k1 + 1
            share /= tf + norm
            out += share
    out[~mask] = 0
    rows = np.flatnonzero(out != 0)
    out[rows] = np.power(out[rows] / idf_mass, recipe.coverage_power, dtype=np.float32)
    return out


def test_lexical_on_the_reached_rows_scores_as_the_whole_arrays_bit_for_bit():
    """Turns (whose neighbours share their terms) and notes, dead rows, masks, a term
    nowhere; and after writes and deletes the kept field lengths are made again."""
    rng = np.random.default_rng(4)
    words = ["alpha", "beta", "gamma", "delta", "eps"]
    c = Corpus(dim=8)
    for i in range(300):
        terms = [str(x) for x in rng.choice(words, size=int(rng.integers(1, 9)))]
        memory = (turn(i, "t", session=f"s{i % 4}") if i % 3 else
                  Memory(id=f"n{i}", content="n", created_at=datetime(2024, 1, 1, tzinfo=UTC)))
        c.put(memory, terms, vec(i))
    recipe = scoring.Recipe()

    def same() -> None:
        for mask in (c.alive[:c.size].copy(), rng.random(c.size) < 0.5):
            for terms in (["alpha"], ["beta", "gamma", "nowhere"], words, ["eps", "eps"]):
                got = scoring.lexical(c, terms, mask, recipe)
                assert got.tobytes() == _whole_array_lexical(c, terms, mask, recipe).tobytes()

    same()
    for i in range(0, 300, 7):
        c.remove(f"t{i}" if i % 3 else f"n{i}")
    c.put(turn(1000, "t", session="s1"), ["alpha", "alpha", "beta"], vec(1))
    same()
    c.compact(force=True)
    same()
    notes = Corpus(dim=8)  # no turns at all: a term's rows are the rows it reaches
    for i in range(50):
        notes.put(Memory(id=f"m{i}", content="m", created_at=datetime(2024, 1, 1, tzinfo=UTC)),
                  ["alpha"] * (i % 3) + ["beta"], vec(i))
    mask = notes.alive[:notes.size].copy()
    mask[::5] = False
    got = scoring.lexical(notes, ["alpha", "beta"], mask, recipe)
    assert got.tobytes() == _whole_array_lexical(notes, ["alpha", "beta"], mask,
                                                 recipe).tobytes()


def test_lexical_scores_do_not_depend_on_the_order_rows_were_put_in():
    """A restart loads the rows in another order than they were written in: each
    memory's keyword score is the same bit for bit."""
    rng = np.random.default_rng(7)
    words = ["alpha", "beta", "gamma", "delta", "eps"]
    rows = []
    for i in range(2000):
        terms = [str(x) for x in rng.choice(words, size=int(rng.integers(1, 40)))]
        memory = (turn(i, "t", session=f"s{i % 9}") if i % 3 else
                  Memory(id=f"n{i}", content="n", created_at=datetime(2024, 1, 1, tzinfo=UTC)))
        rows.append((memory, terms))
    scores = []
    for order in (rows, rows[::-1], [rows[i] for i in rng.permutation(len(rows))]):
        c = Corpus(dim=8)
        for memory, terms in order:
            c.put(memory, terms, vec(0))
        got = scoring.lexical(c, ["alpha", "eps"], c.alive[:c.size].copy(), scoring.Recipe())
        scores.append({c.meta[r].id: got[r].tobytes() for r in range(c.size)})
    assert scores[0] == scores[1] == scores[2]


def test_the_declared_columns_are_the_columns():
    """Corpus declares for the type checker each column the code reads by name; COLUMNS
    makes them all. A coded filter column (CODED) is read by its name in the table and
    need not be declared."""
    declared = {k for k, v in Corpus.__annotations__.items() if v in ("np.ndarray",)}
    assert declared <= set(COLUMNS) and set(COLUMNS) - declared <= set(CODED)


def test_footprint_counts_the_rows_written_not_the_capacity():
    c = Corpus(dim=8, capacity=1024)
    empty = c.footprint()
    assert empty["rows"] == 0 and empty["capacity"] > 0
    for i in range(10):
        c.put(turn(i, f"turn {i}"), ["alpha", f"w{i}"], vec(i))
    ten = c.footprint()
    for i in range(10, 20):
        c.put(turn(i, f"turn {i}"), ["alpha", f"w{i}"], vec(i))
    twenty = c.footprint()
    assert twenty["rows"] == 2 * ten["rows"] > 0, "a row costs the same, whichever it is"
    assert twenty["capacity"] == empty["capacity"], "no column grew: 20 rows of 1,024"
    assert twenty["keywords"] > ten["keywords"] > 0
    with c.lock.read():
        assert c.footprint() == twenty
