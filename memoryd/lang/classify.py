"""Category heuristics, English and Chinese: which of the 14 categories a text is about.

Each category has cue words; a text's category is the one with the most cue hits
(ties go to the earlier entry, the more specific). No hit: it stays in the inbox.

Two things come before the cues. A note kept under a folder or namespace that says
what it is about (`people/Ann`, `Projects/Atlas`, `决策/…`) is of that category:
the source's own structure. And preferences and habits are the user's: a cue whose
clause has another person as its subject ("She prefers…", "Ann always…", "他喜欢…")
counts for `people` (a note about that person), not for the user's preferences.
"""

from __future__ import annotations

import re

# Ordered from specific to general: the first wins a tie.
CUES: dict[str, tuple[str, ...]] = {
    "reminders": ("remind me", "don't forget", "do not forget", "提醒", "记得", "别忘"),
    "lessons": ("learned", "lesson", "gotcha", "mistake", "never again", "turns out",
                "the hard way", "教训", "学到", "踩坑", "经验"),
    "decisions": ("decided", "decision", "we chose", "chose", "going with", "agreed to",
                  "will use", "决定", "选择了", "定了", "采用"),
    "preferences": ("prefers", "prefer", "likes", "like to", "loves", "hates", "dislikes",
                    "favourite", "favorite", "rather than", "偏好", "喜欢", "讨厌", "爱吃",
                    "更喜欢"),
    "feedback": ("feedback", "suggestion", "suggested", "complained", "should improve",
                 "review comment", "反馈", "建议", "意见"),
    "habits": ("every day", "every morning", "every week", "usually", "always", "routine",
               "each night", "每天", "习惯", "经常", "总是"),
    "skills": ("knows how", "is good at", "skilled", "proficient", "experienced in",
               "can speak", "擅长", "会说", "技能", "精通"),
    "people": ("wife", "husband", "mother", "father", "mom", "dad", "sister", "brother",
               "daughter", "son", "friend", "colleague", "boss", "partner", "妻子", "丈夫",
               "妈妈", "爸爸", "母亲", "父亲", "朋友", "同事", "女儿", "儿子", "老板"),
    "date": ("deadline", "birthday", "anniversary", "due on", "due date", "截止", "生日",
             "纪念日"),
    "project": ("project", "repo", "repository", "deploy", "release", "milestone", "sprint",
                "roadmap", "项目", "部署", "发布", "上线"),
    "character": ("personality", "tends to", "communication style", "temperament",
                  "性格", "脾气", "风格"),
    "soul": ("values", "mission", "believes", "purpose in life", "principle",
             "价值观", "使命", "信念"),
    "knowledge": ("how to", "means that", "is defined as", "works by", "the reason is",
                  "原理", "定义", "方法是"),
}
_ASCII = re.compile(r"[a-z]")


# A folder or namespace of the note's source that names what its notes are about.
PLACES: dict[str, str] = {
    **dict.fromkeys(("people", "person", "persons", "contacts", "contact", "family",
                     "friends", "人物", "联系人", "家人", "朋友"), "people"),
    **dict.fromkeys(("projects", "project", "项目"), "project"),
    **dict.fromkeys(("decisions", "decision", "adr", "adrs", "决策", "决定"), "decisions"),
    **dict.fromkeys(("lessons", "postmortems", "postmortem", "retros", "retrospectives",
                     "教训", "复盘"), "lessons"),
    **dict.fromkeys(("habits", "routines", "习惯"), "habits"),
    **dict.fromkeys(("skills", "技能"), "skills"),
}
_PARTS = re.compile(r"/|\\|___|%2f|\.", re.I)  # folders, Logseq namespaces
# The user's own: a clause with another subject is about that person.
_THEIRS = ("preferences", "habits")
_FIRST = re.compile(r"(?<![a-z])(?:i|i'm|i've|i'd|me|my|we|our|the user|user)(?![a-z])|我")
_OTHER = re.compile(r"(?<![a-z])(?:she|he|they|her|his|their|them)(?![a-z])|她|他")
_NAME = re.compile(r"\b[A-Z][a-z]+\b")  # a capitalised word: a person named...
_NOT_NAMES = frozenset((  # ...unless it is a word that starts sentences
    "The This That These Those It Its A An Every Each Our My Your There Here Then Now "
    "Also Usually Always Often Sometimes Never Most Some All Many When If In On At For "
    "After Before During Since While Today Tomorrow Yesterday").split())
_CLAUSE_START = re.compile(r"[.!?;。！？；\n]")


def place_of(source_path: str | None) -> str | None:
    """The category a note's folder or namespace names, if any (not its file name)."""
    if not source_path:
        return None
    parts = [p.strip().casefold() for p in _PARTS.split(source_path)[:-1]]
    return next((PLACES[p] for p in parts if p in PLACES), None)


def _whose(content: str, text: str, at: int) -> str:
    """Whom the cue at `at` is about, read in its clause before it: `mine`, `theirs`
    (another person), or `unsaid`."""
    start = max((m.end() for m in _CLAUSE_START.finditer(text, 0, at)), default=0)
    before, original = text[start:at], content[start:at]
    if _FIRST.search(before):
        return "mine"
    if _OTHER.search(before) or any(w not in _NOT_NAMES for w in _NAME.findall(original)):
        return "theirs"
    return "unsaid"


def _count(content: str, text: str, category: str, cue: str) -> tuple[int, int]:
    """(hits for `category`, hits that are about another person instead)."""
    # English cues match whole words
    pattern = rf"(?<![a-z]){re.escape(cue)}(?![a-z])" if _ASCII.search(cue) else re.escape(cue)
    spots = [m.start() for m in re.finditer(pattern, text)]
    if category not in _THEIRS:
        return len(spots), 0
    theirs = sum(_whose(content, text, at) == "theirs" for at in spots)
    return len(spots) - theirs, theirs


def classify(content: str, source_path: str | None = None) -> str | None:
    """The category of a note (None: no cue, it stays in the inbox); `source_path`:
    where an ingested note was kept in its source."""
    placed = place_of(source_path)
    if placed is not None:
        return placed
    text = content.casefold()
    hits = dict.fromkeys(CUES, 0)
    for category, cues in CUES.items():
        for cue in cues:
            own, theirs = _count(content, text, category, cue)
            hits[category] += own
            hits["people"] += theirs
    best, best_hits = None, 0
    for category in CUES:  # in order: the earlier wins a tie
        if hits[category] > best_hits:
            best, best_hits = category, hits[category]
    return best
