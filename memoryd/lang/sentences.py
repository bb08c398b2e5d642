"""Text cleaning and sentence splitting, English and Chinese."""

from __future__ import annotations

import re
import unicodedata

_FENCE = re.compile(r"(```.*?(?:```|\Z))", re.S)
_BLANK_LINES = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")
# The scripts whose every character is about a word: HAN, the ideographs (Chinese, and
# Japanese kanji); CJK, those with kana and Hangul.
HAN = "\u3400-\u4dbf\u4e00-\u9fff"
CJK = f"\u3040-\u30ff{HAN}\uac00-\ud7af"
_CJK = re.compile(f"[{CJK}]")
_HAN = re.compile(f"[{HAN}]")
# Words whose full stop ends no sentence: titles before a name, and a few Latin and
# business abbreviations that a clause goes on after ("Dr. Lee", "vs. the old one").
TITLES = ("Mr", "Mrs", "Ms", "Mx", "Dr", "Prof", "Sr", "Jr", "St", "Mt", "Ft", "Rev",
          "Gen", "Col", "Capt", "Lt", "Sgt", "Gov", "Sen", "Rep", "Hon", "Messrs")
_GOES_ON = ("vs", "cf", "approx", "incl", "esp", "dept", "viz", "resp")
# Where a full stop is not an end: after one of those words (any case), after a lone
# capital (an initial: "J. R. Smith"), and after a word of single letters and dots
# ("e.g.", "i.e.", "U.S.", "a.m.", "U.S.A."). A version number, a decimal, a file name
# or a URL has no space after its inner dots, so those never split; the stop after
# one does end its sentence. Each is its own fixed-width lookbehind (Python's cannot
# vary in width); a word's start is white space, an opening bracket or the text's.
_NOT_AN_END = "".join(
    [f"(?<!\\b(?i:{word})\\.)" for word in sorted({*TITLES, *_GOES_ON}, key=len)]
    + [f"(?<!{start}{letters})" for start in (r"[\s(]", "^")
       for letters in (r"[A-Z]\.", r"[A-Za-z]\.[A-Za-z]\.", r"[A-Za-z]\.[A-Za-z]\.[A-Za-z]\.")])
# A sentence of a turn ends at . ! ? (then space) or at 。！？ or a line break.
_SENTENCE_END = re.compile(f"(?<=[.!?]){_NOT_AN_END}\\s+|(?<=[。！？!?；;])|\\n+")
# A sentence of a long note's prose ends at . ! ? then white space and a capital ("e.g.
# x" goes on), or at a CJK full stop: where a chunk may end.
PROSE_SENTENCE_END = re.compile(
    f"(?<=[.!?]){_NOT_AN_END}\\s+(?=[A-Z\"'(\\[])|(?<=[。！？])")
_TOKEN = re.compile(f"[{CJK}]|[^\\s{CJK}]+")


def clean(text: str) -> str:
    """NFC, trimmed, runs of blank lines collapsed to one; code blocks untouched."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    parts = _FENCE.split(text)
    out = [p if p.startswith("```") else _BLANK_LINES.sub("\n\n", p) for p in parts]
    return "".join(out).strip()


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def has_han(text: str) -> bool:
    return bool(_HAN.search(text))


LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")


def is_chinese(text: str) -> bool:
    """Chinese, with perhaps a name, a command or a path in Latin letters ("我们用 pnpm
    管理依赖"): more than two Han characters for each Latin word ("I love 北京烤鸭" is
    English); CJK text with no Latin word at all, whatever its script."""
    if not has_cjk(text):
        return False  # most sentences: nothing to count
    latin = len(LATIN_WORD.findall(text))
    return latin == 0 or len(_HAN.findall(text)) > 2 * latin


def rough_tokens(text: str) -> int:
    """Tokens, roughly: words, and each CJK character on its own."""
    return len(_TOKEN.findall(text))


def weight(text: str) -> int:
    """Characters that carry meaning: letters and digits, a CJK character counting 3
    (one carries about a short word)."""
    return sum(3 if _CJK.match(ch) else 1 for ch in text if ch.isalnum())


def sentences(text: str) -> list[str]:
    """Sentences of `text`, without code blocks, stripped, non-empty."""
    text = _FENCE.sub("\n", text)
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]
