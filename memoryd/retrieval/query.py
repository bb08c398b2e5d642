"""A search's question, read once: its keyword terms, the time it names, whether it asks
for a time or about the past, the text the dense side embeds (in the voice of the
speakers it names), the entities it names, and the request it came with (the caller's
knobs and filters). Gathering and every stage read this value; none reads the
question's text again."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from dataclasses import dataclass, field

import msgspec

from memoryd.filters import Filters
from memoryd.lang import asking, past, terms, timewords, voice
from memoryd.lang.names import QueryWords, query_words
from memoryd.lang.timewords import Window


class Knobs(msgspec.Struct, frozen=True, kw_only=True):
    """What a caller may set per search; None: the configured default (the search
    policy fills it in)."""

    recency_weight: float | None = None
    importance_weight: float | None = None
    score_threshold: float | None = None
    mmr_lambda: float | None = None
    reference: float | None = None  # SearchRequest.reference


@dataclass
class SearchRequest:
    query: str
    top_k: int = 5
    where: Filters = field(default_factory=Filters)  # which memories may be ranked
    recency_weight: float = 0.2
    importance_weight: float = 0.1
    score_threshold: float = 0.0
    mmr_lambda: float = 0.7
    # What a time in the query is read against (epoch seconds): "last weekend" of a
    # replayed conversation is its own; None: `as_of`, else the moment it runs.
    reference: float | None = None

    def filters(self, now: float) -> Filters:
        """Which memories the search ranks, judged at `now`. Session summaries are
        handed to recall whole, not ranked among memories, unless asked for by kind."""
        return msgspec.structs.replace(
            self.where, not_kind="summary" if self.where.kind is None else None, now=now)


@dataclass(frozen=True)
class Query:
    request: SearchRequest
    words: QueryWords  # split once for every reader of the names it holds
    embedded: str  # what the dense side embeds (lang/voice.py)
    terms: list[str]  # keyword terms, without a relative time's words ("last", "ago")
    window: Window | None  # the time it names, if any
    asks_when: bool  # it asks for a time ("When did...", "什么时候")
    about_past: bool  # it asks about the past, or is asked `as_of` a time
    of_the_asker: bool  # about the one asking ("I", "my"), not what "you" did
    one_now: bool  # one value that holds now, of the one asking ("How old am I?")
    # The entities it names, each its keys (a name and the longer ones it may be short
    # for: "ann", "ann smith"); read from the corpus under its hold (`naming`).
    named: list[tuple[str, ...]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.request.query

    def naming(self, named: list[tuple[str, ...]]) -> Query:
        return dataclasses.replace(self, named=named)


def read(request: SearchRequest, speakers: Collection[str], now: float) -> Query:
    """`request`'s question read at `now` (the time it names is read against
    `reference`, else `as_of`, else `now`); `speakers`: the keys of the speakers whose
    turns it may be asked in the voice of."""
    asked = request.query
    words = query_words(asked)
    window = timewords.find_at(asked, request.reference or request.where.as_of or now)
    return Query(request, words, voice.in_voice(asked, speakers, words),
                 terms.terms(timewords.without(asked, window)), window,
                 timewords.asks_when(asked),
                 request.where.as_of is not None or past.asks_past(asked),
                 asking.of_the_asker(asked), asking.asks_one_now(asked))
