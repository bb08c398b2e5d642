"""One filter, two compilations: for any store and any filter, the catalog's SQL (a list,
and a search whose word every memory holds, on each of its query plans) and the
corpus's mask select the same memories. Live means the same everywhere: not
superseded (unless `as_of` a time it was current), not expired at `now`, not
compressed unless asked for, in the scopes given."""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.filters import Filters
from memoryd.retrieval.corpus import Corpus
from memoryd.schema import CATEGORIES, KINDS, TYPES, Memory, content_hash
from memoryd.store.catalog import Catalog

BASE = datetime(2026, 3, 1, tzinfo=UTC)
NOW = (BASE + timedelta(days=10)).timestamp()
DAYS = [BASE + timedelta(days=d) for d in range(0, 20, 3)]  # before and after NOW
SCOPES = ["global", "agent:a", "user:b"]
TAGS = ["red", "green", "blue"]
SESSIONS = ["s1", "s2"]

maybe = st.none().__or__
T = TypeVar("T")


def memory(rng: random.Random, i: int) -> Memory:
    kind = rng.choice(KINDS)
    category = rng.choice(CATEGORIES)
    superseded = maybe_of(rng, DAYS)
    created = rng.choice(DAYS)
    text = f"alpha memory {i}"
    return Memory(
        id=f"00000000-0000-4000-8000-{i:012d}", content=text,
        content_hash=content_hash(text), kind=kind, category=category,
        phase="inbox" if category == "inbox" else "organized",
        type=rng.choice(TYPES), scope=rng.choice(SCOPES),
        session=rng.choice(SESSIONS) if kind == "turn" else maybe_of(rng, SESSIONS),
        role="user" if kind == "turn" else None,
        tags=rng.sample(TAGS, rng.randint(0, 3)),
        created_at=created, updated_at=created,
        expires_at=maybe_of(rng, DAYS),
        superseded_at=max(superseded, created) if superseded else None,
        replaced_by="00000000-0000-4000-8000-999999999999" if superseded else None,
        compressed=rng.random() < 0.5)


def maybe_of(rng: random.Random, choices: Sequence[T]) -> T | None:
    return None if rng.random() < 0.5 else rng.choice(choices)


@st.composite
def stores(draw: st.DrawFn) -> list[Memory]:
    """Up to 30 memories, made from one drawn seed: a store is some 400 choices, and
    drawing each through Hypothesis cost more than the checks (the stores are as varied;
    a failing one is reported whole, not shrunk)."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    return [memory(rng, i) for i in range(rng.randint(0, 30))]


filters = st.builds(
    Filters,
    scopes=maybe(st.lists(st.sampled_from(SCOPES), unique=True, max_size=3)),
    phase=maybe(st.sampled_from(["inbox", "organized"])),
    category=maybe(st.sampled_from(CATEGORIES)),
    kind=maybe(st.sampled_from(KINDS)),
    type=maybe(st.sampled_from(TYPES)),
    session=maybe(st.sampled_from(SESSIONS)),
    tags=st.lists(st.sampled_from(TAGS), unique=True, max_size=2),
    not_kind=maybe(st.sampled_from(KINDS)),
    since=maybe(st.sampled_from(DAYS)),
    until=maybe(st.sampled_from(DAYS)),
    include_compressed=st.booleans(),
    as_of=maybe(st.sampled_from([d.timestamp() for d in DAYS])),
    now=st.just(NOW))

# Fewer filters: the common calls, whose SQL takes the narrow search_keys plan.
narrow = st.builds(Filters, scopes=maybe(st.lists(st.sampled_from(SCOPES), unique=True)),
                   since=maybe(st.sampled_from(DAYS)), until=maybe(st.sampled_from(DAYS)),
                   now=st.just(NOW))


# Time travel: what was current at `as_of`, with few other filters to hide it.
past = st.builds(Filters, as_of=st.sampled_from([d.timestamp() for d in DAYS]),
                 include_compressed=st.booleans(),
                 scopes=maybe(st.lists(st.sampled_from(SCOPES), unique=True)),
                 now=st.just(NOW))


def selected(store: list[Memory], f: Filters) -> tuple[set[str], set[str] | None, set[str]]:
    """The ids a list, a search (None for `as_of`: a search refuses it) and the mask
    select; `admits`, read a memory at a time, narrows as they do."""
    with tempfile.TemporaryDirectory() as tmp:
        catalog = Catalog(Path(tmp) / "k.sqlite")
        corpus = Corpus(4)
        try:
            with catalog.transaction():
                for m in store:
                    catalog.writer.upsert(m, f"categories/{m.category}/{m.id}.md", "sha")
            for m in store:
                corpus.put(m, [], np.full(4, 0.5, dtype=np.float32))
            listed, total = catalog.reader.list_memories(f, limit=10_000, offset=0)
            assert total == len(listed)
            found: set[str] | None = None
            if f.as_of is None:  # the text index holds what is current only
                page, hits = catalog.reader.search("alpha", f, limit=10_000, offset=0)
                assert hits == len(page)
                found = {m.id for m in page}
            with corpus.lock.read():
                rows = np.flatnonzero(corpus.mask(f))
            masked = {corpus.meta[r].id for r in rows.tolist()}
        finally:
            catalog.close()
    assert {m.id for m in store if f.admits(m)} == expected(
        store, f, live=lambda _: True), "admits narrows as the indexes do"
    return {m.id for m in listed}, found, masked


def alive(m: Memory, f: Filters) -> bool:
    if f.as_of is None:
        current = m.superseded_at is None
    else:
        current = m.created_at.timestamp() <= f.as_of and (
            m.superseded_at is None or m.superseded_at.timestamp() > f.as_of)
    return (current and (m.expires_at is None or m.expires_at.timestamp() > f.at())
            and (f.include_compressed or not m.compressed))


def expected(store: list[Memory], f: Filters,
             live: Callable[[Memory], bool] | None = None) -> set[str]:
    """The rules, written out once more, a memory at a time (`live`: which memories
    are live; default the liveness rules)."""
    out = set()
    for m in store:
        live_now = alive(m, f) if live is None else live(m)
        narrowed = (
            (f.scopes is None or m.scope in f.scopes)
            and all(getattr(f, k) is None or getattr(f, k) == getattr(m, k)
                    for k in ("phase", "category", "kind", "type", "session"))
            and (f.not_kind is None or m.kind != f.not_kind)
            and set(f.tags) <= set(m.tags)
            and (f.since is None or m.created_at >= f.since)
            and (f.until is None or m.created_at < f.until))
        if live_now and narrowed:
            out.add(m.id)
    return out


CHECKS = settings(max_examples=150, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow])


@CHECKS
@given(stores(), filters)
def test_sql_and_mask_select_the_same_memories(store, f):
    listed, found, masked = selected(store, f)
    assert listed == masked == expected(store, f) and found in (None, listed)


@CHECKS
@given(stores(), narrow)
def test_the_narrow_plan_agrees_too(store, f):
    listed, found, masked = selected(store, f)
    assert listed == found == masked == expected(store, f)


@CHECKS
@given(stores(), past)
def test_what_was_known_then_agrees_too(store, f):
    listed, found, masked = selected(store, f)
    assert found is None and listed == masked == expected(store, f)


def test_an_expired_inbox_memory_is_gone_for_every_reader():
    """The issue's case: a TTL passed, the expire job not yet run."""
    expired = Memory(id="00000000-0000-4000-8000-000000000001", content="alpha inbox note",
                     category="inbox", phase="inbox", created_at=BASE,
                     expires_at=BASE + timedelta(days=1))
    f = Filters(now=NOW)
    assert selected([expired], f) == (set(), set(), set())
    assert selected([expired], Filters(now=BASE.timestamp())) == ({expired.id},) * 3


def test_a_tools_params_are_its_filter_by_field_name():
    """A params field named as a Filters field is that filter, for every read tool;
    the wire forms that need reading (`from`/`to`, `as_of`) are read once."""
    import msgspec

    from memoryd import filters as filtering
    from memoryd.errors import InvalidParams
    from memoryd.tools import params

    listed = msgspec.convert({"category": "people", "source": "obsidian", "tags": ["red"],
                              "phase": "organized", "include_compressed": True},
                             params.ListParams)
    assert filtering.of(listed, ["global"]) == Filters(
        scopes=["global"], category="people", source="obsidian", tags=["red"],
        phase="organized", include_compressed=True)
    searched = msgspec.convert({"query": "a b", "kind": "fact", "session": "s1",
                                "from": "2026-03-01", "to": "2026-03-01"}, params.SearchParams)
    f = filtering.of(searched, None)
    assert (f.kind, f.session, f.since, f.until) == (
        "fact", "s1", BASE, BASE + timedelta(days=1))  # `to` is inclusive
    ranked = msgspec.convert({"query": "q", "as_of": "2026-03-01", "type": "episodic"},
                             params.SmartSearchParams)
    f = filtering.of(ranked, None)
    assert f.type == "episodic" and f.as_of == (BASE + timedelta(days=1)).timestamp() - 1e-6
    for bad, field in (({"query": "q", "as_of": "2026-13-45"}, "as_of"),):
        try:
            msgspec.convert(bad, params.RecallParams)
        except InvalidParams as exc:
            assert exc.data == {"field": field}
        else:
            raise AssertionError("an impossible as_of was taken")
    # whatever a read tool's params hold under a Filters name, its filter holds
    named = {f.name for f in msgspec.structs.fields(Filters)}
    for struct, taken in ((params.ListParams, listed), (params.SearchParams, searched),
                          (params.SmartSearchParams, ranked)):
        shared = {f.name for f in msgspec.structs.fields(struct)} & named
        assert shared and all(getattr(filtering.of(taken, None), name) == getattr(taken, name)
                              for name in shared), struct
