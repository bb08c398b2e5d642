"""What gets indexed and how text becomes terms.

Index text: `Speaker (D Month YYYY): text` (the speaker is a leading `Name:` of
the content, if any). The same text goes to the lexical index and the embedder.
Lexical terms: lowercase `[a-z0-9]+` without stopwords, Snowball-stemmed; runs of
CJK characters become their characters and bigrams.
"""

from __future__ import annotations

import re
from datetime import datetime
from functools import lru_cache

import Stemmer

from memoryd.lang.names import split_speaker
from memoryd.lang.sentences import CJK
from memoryd.schema import Memory

# The LoCoMo evaluator's stopword list (query- and index-side).
STOPWORDS = frozenset((
    "a an the and or but if of to in on at by for with from as is are was were be been "
    "being do does did doing have has had having i me my we our you your he him his she "
    "her it its they them their what which who whom whose when where why how this that "
    "these those there here than then so not no can could would should will shall may "
    "might must about into over after before up down out just also very any some all each "
    "both more most other such only own same too s t d ll m re ve "
).split())

_WORD = re.compile(f"[a-z0-9]+|[{CJK}]+")
_CJK = re.compile(f"[{CJK}]")
_stemmer = Stemmer.Stemmer("english")


def day(when: datetime) -> str:
    return f"{when.day} {when:%B %Y}"


def index_text(memory: Memory) -> str:
    return index_text_of(memory.content, memory.created_at)


def index_text_of(content: str, created_at: datetime) -> str:
    speaker, text = split_speaker(content)
    prefix = f"{speaker} " if speaker else ""
    return f"{prefix}({day(created_at)}): {text}"


def context_line(memory: Memory) -> str:
    speaker, text = split_speaker(memory.content)
    return f"{speaker}: {text}" if speaker else text


def context_text(prev: Memory | None, memory: Memory, nxt: Memory | None) -> str:
    """A turn with its neighbours, for the context embedding (no dates)."""
    return "\n".join(context_line(m) for m in (prev, memory, nxt) if m is not None)


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


# A note's title (its first line, when a Markdown heading: an ingested page's name, a
# note's own heading) is a field of its own in keyword scoring: its terms count this
# many times, so a question that names a note's subject finds that note before a long
# one that only mentions the words.
TITLE_WEIGHT = 3


def title_of(content: str) -> str | None:
    """A note's title: its first line, when that is a Markdown heading."""
    first = content.lstrip().split("\n", 1)[0]
    title = first.lstrip("#").strip() if first.startswith("#") else ""
    return title or None


def index_terms(memory: Memory, indexed: str) -> list[str]:
    """The keyword field of a memory: the terms of its index text (`indexed`, as
    `index_text` made it), its title's again."""
    found = terms(indexed)
    title = title_of(memory.content)
    return found + terms(title) * (TITLE_WEIGHT - 1) if title else found


def terms(text: str) -> list[str]:
    out: list[str] = []
    for token in _WORD.findall(text.lower()):
        if _CJK.match(token):
            out.extend(token)
            out.extend(token[i:i + 2] for i in range(len(token) - 1))
        elif token not in STOPWORDS:
            out.append(_stem(token))
    return out
