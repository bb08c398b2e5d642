"""Importance and type routing of a text.

importance = novelty x 0.6 + salience x 0.4, where novelty is the cosine distance
of the text's embedding from the centroid of its scope's memories (1.0 in an empty
scope) and salience adds up content signals: a named entity +0.3, a number or date
+0.2, a preference +0.4, a technical term +0.1 (at most 1.0).
"""

from __future__ import annotations

import re

import numpy as np

from memoryd.lang.daynames import WEEKDAYS

PREFERENCE = re.compile("|".join([
    r"\bi (really |truly |absolutely |just )?(prefer|love|hate|like|dislike|enjoy|adore|"
    r"can't stand|cannot stand|detest)\b",
    r"\bi (always|never|usually)\b", r"\bi('d| would) rather\b",
    r"\bi (don't|do not|never) (like|want|eat|drink|use)\b",
    r"\bmy (favou?rite|preferred)\b", r"\bplease (always|never)\b",
    # ... and the same in a fact's third person
    r"\bthe user (really |truly |absolutely |still |also )?(prefers|loves|hates|likes|"
    r"dislikes|enjoys|adores|can't stand|cannot stand|detests|always|never|usually|"
    r"doesn't like|does not like|would rather)\b", r"\bthe user's (favou?rite|preferred)\b",
    r"用户(很|真|最|更|特别|非常|不|一直|总是)?(喜欢|讨厌|爱|偏好|不喜欢|受不了)",
    r"我(很|真|最|更|特别|非常|不|一直|总是)?(喜欢|讨厌|爱|偏好|不喜欢|受不了)",
    r"我(总是|从不|一直)",
]), re.I)
_NOW = re.compile(r"\b(right now|currently|at the moment|for now|this session|today|"
                  r"this (morning|afternoon|evening)|tonight)\b|现在|目前|今天|今晚|此刻", re.I)
_NUMBER_OR_DATE = re.compile(
    r"\d|\b(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|"
    rf"sep(tember)?|oct(ober)?|nov(ember)?|dec(ember)?|{'|'.join(WEEKDAYS)}|"
    r"yesterday|tomorrow|week|month|year)\b|[年月日号]", re.I)
_NOT_NAMES = frozenset({"I", "I'm", "I've", "I'd", "I'll", "OK", "Ok"})
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")
_SENTENCE_START = re.compile(r"(^|[.!?:\n\"]\s*)$")
_TECHNICAL = re.compile(r"\b(\w+_\w+|[a-z]+[A-Z]\w*|\w+\.\w+\(?|\w*\d\w*[a-zA-Z]\w*|"
                        r"[A-Za-z]{13,})\b")


def salience(text: str) -> float:
    score = 0.0
    if has_name(text):
        score += 0.3
    if _NUMBER_OR_DATE.search(text):
        score += 0.2
    if PREFERENCE.search(text):
        score += 0.4
    if _TECHNICAL.search(text):
        score += 0.1
    return min(1.0, score)


def has_name(text: str) -> bool:
    """A capitalised word inside a sentence: a person, place, organisation, product."""
    for match in _CAPITALISED.finditer(text):
        if match.group() in _NOT_NAMES:
            continue
        if not _SENTENCE_START.search(text[max(0, match.start() - 3):match.start()]):
            return True
    return False


def novelty(vector: np.ndarray, centroid: np.ndarray | None) -> float:
    """Cosine distance from the scope's centroid (1.0 when the scope is empty)."""
    if centroid is None:
        return 1.0
    norm = float(np.linalg.norm(centroid))
    if norm == 0:
        return 1.0
    return float(min(1.0, max(0.0, 1.0 - float(vector @ centroid) / norm)))


def importance(novelty_score: float, salience_score: float) -> float:
    return round(min(1.0, max(0.0, novelty_score * 0.6 + salience_score * 0.4)), 4)


def about_now(text: str) -> bool:
    """Whether `text` is about this moment ("right now", "currently", "today", 现在)."""
    return bool(_NOW.search(text))


def route_type(text: str, states_a_fact: bool) -> str:
    """procedural (a preference), working (about now), semantic (a fact), episodic."""
    if PREFERENCE.search(text):
        return "procedural"
    if about_now(text):
        return "working"
    if states_a_fact:
        return "semantic"
    return "episodic"
