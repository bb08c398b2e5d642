"""Category heuristics, English and Chinese: which of the 14 categories a text is about.

Each category has cue words; a text's category is the one with the most cue hits
(ties go to the earlier entry, the more specific). No hit: it stays in the inbox.
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


def _hits(text: str, cue: str) -> int:
    if _ASCII.search(cue):  # English cues match whole words
        return len(re.findall(rf"(?<![a-z]){re.escape(cue)}(?![a-z])", text))
    return text.count(cue)


def classify(content: str) -> str | None:
    text = content.casefold()
    best, best_hits = None, 0
    for category, cues in CUES.items():
        hits = sum(_hits(text, cue) for cue in cues)
        if hits > best_hits:
            best, best_hits = category, hits
    return best
