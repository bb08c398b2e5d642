"""Text cleaning and sentence splitting, English and Chinese."""

from __future__ import annotations

import re
import unicodedata

_FENCE = re.compile(r"(```.*?(?:```|\Z))", re.S)
_BLANK_LINES = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
# A sentence ends at . ! ? (then space) or at 。！？ or a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？!?；;])|\n+")


def clean(text: str) -> str:
    """NFC, trimmed, runs of blank lines collapsed to one; code blocks untouched."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    parts = _FENCE.split(text)
    out = [p if p.startswith("```") else _BLANK_LINES.sub("\n\n", p) for p in parts]
    return "".join(out).strip()


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def weight(text: str) -> int:
    """Characters that carry meaning: letters and digits, a CJK character counting 3
    (one carries about a short word)."""
    return sum(3 if _CJK.match(ch) else 1 for ch in text if ch.isalnum())


def sentences(text: str) -> list[str]:
    """Sentences of `text`, without code blocks, stripped, non-empty."""
    text = _FENCE.sub("\n", text)
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]
