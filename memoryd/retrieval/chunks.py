"""Semantic chunks of a long note.

A note longer than one chunk is still one memory and one file, but it is indexed by
its chunks too, so a question about its fifth section finds it: split at blank
lines, split a piece above MAX_TOKENS further at sentence ends, then merge a piece
below MIN_TOKENS into its neighbour. Chunks are (start, end) character spans of
the content, so a match can be shown without storing the text twice.
"""

from __future__ import annotations

import re

from memoryd.lang.sentences import PROSE_SENTENCE_END, rough_tokens

MAX_TOKENS = 300
MIN_TOKENS = 50

_BLANK = re.compile(r"\n[ \t]*\n")

Span = tuple[int, int]


def tokens(text: str) -> int:
    """Tokens, roughly: words, and each CJK character on its own."""
    return rough_tokens(text)


def _pieces(text: str, pattern: re.Pattern[str], start: int, end: int) -> list[Span]:
    out, at = [], start
    for match in pattern.finditer(text, start, end):
        if match.start() > at:
            out.append((at, match.start()))
        at = match.end()
    if at < end:
        out.append((at, end))
    return [s for s in out if text[s[0]:s[1]].strip()]


def _sized(text: str, span: Span) -> list[Span]:
    """A piece over MAX_TOKENS split at sentence ends, sentences packed up to it."""
    if tokens(text[span[0]:span[1]]) <= MAX_TOKENS:
        return [span]
    out: list[Span] = []
    for sentence in _pieces(text, PROSE_SENTENCE_END, *span):
        if out and tokens(text[out[-1][0]:sentence[1]]) <= MAX_TOKENS:
            out[-1] = (out[-1][0], sentence[1])
        else:
            out.append(sentence)
    return out


def title_span(text: str) -> Span | None:
    """Where a note's title is (its first line, a Markdown heading), without the `#`s."""
    start = len(text) - len(text.lstrip())
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    line = text[start:end]
    if not line.startswith("#"):
        return None
    inner = start + len(line) - len(line.lstrip("#"))
    inner += len(text[inner:end]) - len(text[inner:end].lstrip())
    return (inner, end) if text[inner:end].strip() else None


def chunk(text: str) -> list[Span]:
    """The chunks of `text`; [] when it fits in one (it is indexed whole)."""
    if tokens(text) <= MAX_TOKENS:
        return []
    spans = [s for piece in _pieces(text, _BLANK, 0, len(text)) for s in _sized(text, piece)]
    merged: list[Span] = []
    for span in spans:
        if merged and (tokens(text[merged[-1][0]:merged[-1][1]]) < MIN_TOKENS
                       or tokens(text[span[0]:span[1]]) < MIN_TOKENS):
            merged[-1] = (merged[-1][0], span[1])
        else:
            merged.append(span)
    return merged if len(merged) > 1 else []
