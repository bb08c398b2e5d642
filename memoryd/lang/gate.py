"""The fast relevance gate: the checks on a turn that need no model.

`check` answers why a turn is not worth keeping (too short, only stop words,
infrastructure noise) or None. The near-duplicate check needs the embedding and the
scope's memories, so the engine makes it (engine/conversation.py).
"""

from __future__ import annotations

import re

from memoryd.lang.sentences import HAN, weight

STOP_WORDS = frozenset("""
a an the and or but so to of in on at for with is it its it's this that i me my you your
we us our he she they them ok okay k kk yes yeah yep yup no nope nah sure right fine
thanks thank thx ty please pls hi hello hey bye goodbye cya see later lol lmao haha hah
hmm hm mm uh um oh ah wow cool nice great good awesome alright well got gotcha noted
understood indeed true agreed exactly perfect np welcome much very really just too also
will do did done sounds cheers morning night evening afternoon again all lot lots
bit there here that what how same to too as be been am are was were have has had
好 好的 好吧 嗯 嗯嗯 哦 噢 啊 哈 哈哈 哈哈哈 谢谢 谢谢你 多谢 谢了 是的 是 对 对的
行 可以 没问题 收到 知道了 明白 晚安 早安 你好 再见 拜拜
""".split())
_WORD = re.compile(r"[\w']+")
_CJK_RUN = re.compile(f"[{HAN}]+")
# Infrastructure noise: errors a tool or a network produced, not something a person said.
_NOISE = re.compile("|".join([
    r"traceback \(most recent call last\)",
    r"^\s*file \"[^\"]+\", line \d+",
    r"^\s+at [\w$.<>]+\([\w.]*:\d+\)",
    r"\b(econnrefused|econnreset|etimedout|enotfound|epipe)\b",
    r"\bconnection (refused|reset|timed out|aborted|closed)\b",
    r"\brate[ -]?limit(ed|s)?\b", r"\btoo many requests\b",
    r"\b(http|status)( code)? ?(429|500|502|503|504)\b",
    r"\b(bad gateway|gateway time-?out|service unavailable|internal server error)\b",
    r"\bsocket hang up\b", r"\brequest timed out\b", r"\bnetwork error\b",
    r"^\s*(error|exception|fatal)\b[:!]",
    r"\b\w+(error|exception): ",
]), re.I | re.M)
NOISE_MAX_CHARS = 200  # a longer text mentioning an error is a person talking about it


def check(text: str, min_chars: int) -> str | None:
    """Why this (cleaned) turn is skipped, or None to keep it."""
    if weight(text) < min_chars:
        return "too_short"
    words = [w.strip("'").casefold() for w in _WORD.findall(text)]
    cjk = _CJK_RUN.findall(text)
    latin = [w for w in words if not _CJK_RUN.fullmatch(w)]
    if all(w in STOP_WORDS for w in latin) and all(run in STOP_WORDS for run in cjk):
        return "stop_words"
    if _NOISE.search(text) and (len(text) <= NOISE_MAX_CHARS or "traceback" in text.casefold()):
        return "infrastructure_noise"
    return None
