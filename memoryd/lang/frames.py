"""What a fact is about: the frame (an attribute and its subject: a place, an employer,
a count of kids...) and its value, read from the fact's words in English and Chinese, no
model; whether the fact says a value changed, which old value it names, and what it
says the user switched to. Reconciliation (reconcile.py) decides by these; ranking's
`current` stage puts the newer fact of one frame first."""

from __future__ import annotations

import re

_TAIL = re.compile(r"\s+(now|anymore|any more|these days|nowadays|instead|recently|"
                   r"yesterday|today|last (?:week|month|year|summer|winter|spring|fall)|"
                   r"this (?:week|month|year)|(?:a few|a couple of|\d+|two|three) "
                   r"(?:days|weeks|months|years) ago)$|[.!。！]+$")
# Words that say a value changed: with one, two facts in one frame are an update even
# where the frame alone cannot tell ("The user now drives a Tesla").
_CHANGE_CUE = re.compile(r"\b(now|no longer|not any more|anymore|instead|switched|"
                         r"changed|new|these days|from now on|started|stopped|quit|"
                         r"sold|gave up|replaced)\b|现在|不再|换成|改成|新的|换了|改用|跳槽")
# "switched from X to Y", "used to X but now Y", "no longer X": the old value, named.
_OLD_VALUE = (
    re.compile(r"\b(?:switched|changed|moved|went|upgraded|converted|migrated) from "
               r"(?:the |a |an |their )?(?P<old>.+?) to (?P<new>.+)$"),
    re.compile(r"\bused to (?:\w+ )?(?:in |at |a |an |the )?(?P<old>.+?),? but "
               r"(?:now )?(?P<new>.+)$"),
    re.compile(r"\b(?:sold|gave up|quit|left|stopped using|got rid of) "
               r"(?:the |a |an |their )?(?P<old>.+?) and (?:now )?(?P<new>.+)$"),
    re.compile(r"\bno longer \w+ (?:in |at |a |an |the )?(?P<old>.+)$"),
    re.compile(r"\b(?:traded|swapped|exchanged)(?: in)? (?:the |a |an |their )?(?P<old>.+?) "
               r"for (?P<new>.+)$"),
    re.compile(r"\breplaced (?:the |a |an |their )?(?P<old>.+?) with (?P<new>.+)$"),
)
_NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
            "ten", "eleven", "twelve")
# How many of a thing: "The user has three kids" (a/an is an item, not a count:
# "The user also has a cat" is one more, an ADD).
_ZH_COUNT = re.compile(r"^用户(?:现在|目前|已经|一共|总共)*有(?P<v>\d+|[两二三四五六七八九十]+)"
                       r"(?:个|只|条|辆|本|位|台|家)(?P<k>.+?)了?$")
_COUNT = re.compile(rf"^the user (?:now |also |still )*(?:has|owns|keeps) (?:got )?"
                    rf"(?P<v>\d+|{'|'.join(_NUMBERS)}) (?P<k>[a-z]+?)(?:s|es)?(?: now)?$")
# A verb frame that holds one value at a time, decided only with a change cue.
_ONE_AT_A_TIME = re.compile(r"^the user (?:now |currently |also |still )*(?P<k>drives|rides|"
                            r"uses|is using|studies|is studying|is learning|plays for|"
                            r"works on|is dating|is married to|is engaged to|supports|"
                            r"banks with|votes for|owns) (?:a |an |the |their )?(?P<v>.+)$")
_ZH_ONE_AT_A_TIME = re.compile(r"^用户(?:现在|目前|还|也|已经)*(?P<k>开|用|使用|骑|在用|喝|抽)"
                               r"(?P<v>.+?)了?$")
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("location", re.compile(r"^the user (?:now |currently |recently |just |finally |has "
                            r"|had )*(?:lives|lived|moved|relocated|is living|been living|"
                            r"is based|been based|resides|stays|is staying|is moving|"
                            r"settled|is settling|has moved) (?:in|to|back to|into|over to)"
                            r" (?P<v>.+)$")),
    ("employer", re.compile(r"^the user (?:now |currently |just |recently |has |finally )*"
                            r"(?:(?:works|worked|is working|been working|started working) "
                            r"(?:at|for)|is employed (?:at|by)|(?:was|got|been) hired (?:at|"
                            r"by)|(?:took|got|started|accepted) (?:a |an )?(?:new )?(?:job|"
                            r"position|role) (?:at|with)|accepted (?:a |an )?(?:job )?offer "
                            r"(?:from|at)) (?P<v>.+)$")),
    ("job", re.compile(r"^the user (?:now |currently )*works as (?:an? )?(?P<v>.+)$")),
    ("age", re.compile(r"^the user (?:just |recently |has )*(?:is|turned|is turning) "
                       r"(?P<v>\d+)(?: years old)?$")),
    ("name", re.compile(r"^the user(?:'s name is| is called| is named| goes by) (?P<v>.+)$")),
    ("sentiment", re.compile(r"^the user (?:really |absolutely |still |also |truly )*"
                             r"(?P<v>loves|likes|enjoys|adores|hates|dislikes|detests|"
                             r"prefers|doesn't like|does not like|can't stand|cannot "
                             r"stand|no longer likes) (?P<k>.+)$")),
    ("attribute", re.compile(r"^the user's (?:new |current |latest |updated |present )?"
                             r"(?P<k>.+?) (?:is|are|was|were) (?:named |called"
                             r" |now )?(?P<v>.+)$")),
    ("location", re.compile(r"^用户(?:现在|目前|已经)*"
                            r"(?:住在|搬到了|搬到|搬去了|搬去|定居在|生活在)(?P<v>.+?)了?$")),
    ("attribute", re.compile(r"^用户(?P<k>的.+?|最?喜欢的.+?)(?:现在|目前|已经)?(?:是|叫)"
                             r"(?P<v>.+?)了?$")),
    ("sentiment", re.compile(r"^用户(?:很|最|非常|特别|还是)*(?P<v>不喜欢|喜欢|讨厌|爱|受不了)"
                             r"(?P<k>.+?)了?$")),
    ("employer", re.compile(r"^用户(?:现在|目前|已经|刚)*(?:在|去|加入了?)(?P<v>.+?)"
                            r"(?:工作|上班|任职)了?$")),
    ("employer", re.compile(r"^用户(?:现在|目前|已经|刚)*(?:跳槽到了?|跳槽去了?|入职了?)"
                            r"(?P<v>.+?)了?$")),
    ("age", re.compile(r"^用户(?:今年|现在|已经|刚)*满?(?P<v>\d+)岁了?$")),
)
# What a fact says the user changed to, without naming what it replaced ("switched to
# Linux", "moved over to Firefox", "started using Obsidian", "joined Microsoft").
_SWITCHED_TO = re.compile(
    r"^the user (?:now |just |recently |finally |has |had )*(?:(?:switched|changed|moved|"
    r"migrated|converted|upgraded|went)(?: over)? to|started using|joined) "
    r"(?:a |an |the )?(?P<v>.+)$|^用户(?:现在|已经|刚)*(?:换成了?|换用了?|改用了?|转用了?|"
    r"改成了?)(?P<zv>.+?)了?$")
# Words a search for facts about the same attribute can use (the engine looks them up).
KEY_TERMS = {"location": ["lives", "moved", "住在", "搬到"], "employer": ["works"],
             "job": ["works as"], "age": ["years old"], "name": ["name"]}


_LEAD = re.compile(r"^(?:these days|nowadays|now|currently|recently|today|lately),? ")
# A time or place said before the subject: "Since June the user has been living in Rome",
# "As of this month, the user ...".
_ADVERBIAL = re.compile(r"^(?:since|as of|from|starting|after|before|in|on|at|for|by|last|"
                        r"this|next|over|during|early|late|earlier|later|a few|\d+)\b"
                        r"[^,.;:]{0,40}?,? (?=the user\b)")
# ... and in Chinese, a time or "now" after the subject ("用户最近搬到了天津"), or "new"
# before what is named ("用户的新手机号").
_ZH_ADVERBIAL = re.compile(r"^用户(?:现在|目前|已经|刚刚|刚|最近|去年|今年|前年|上个月|这个月|"
                           r"上周|前不久|不久前|前几天|今天|昨天)+")
_ZH_NEW = re.compile(r"^用户的(?:新的?|现在的|目前的)")
# "We have three dogs" is read as the user's: "the user and family have" -> "the user has".
_PLURAL = re.compile(r"^the user ((?:now |also |still |just |recently |currently )*)"
                     r"(have|are|were|own|keep|live|work)\b")
_SINGULAR = {"have": "has", "are": "is", "were": "was", "own": "owns", "keep": "keeps",
             "live": "lives", "work": "works"}
_SPELLING = {"favourite": "favorite", "colour": "color", "the user and family": "the user",
             "用户一家": "用户"}


def mentions(text: str, value: str) -> bool:
    """Whether a fact's words (`normal`) name `value`, as whole words."""
    return bool(re.search(rf"(?<!\w){re.escape(value)}(?!\w)", normal(text)))


def normal(text: str) -> str:
    """A fact's words as the frames read them: case folded, lead-ins and times around
    the subject dropped, "we" as the user."""
    text = _LEAD.sub("", " ".join(text.casefold().split()))
    for variant, spelling in _SPELLING.items():
        text = text.replace(variant, spelling)
    text = _ADVERBIAL.sub("", text)
    text = _ZH_NEW.sub("用户的", _ZH_ADVERBIAL.sub("用户", text))
    text = _PLURAL.sub(lambda m: f"the user {m[1]}{_SINGULAR[m[2]]}", text)
    while True:
        trimmed = _TAIL.sub("", text).strip()
        if trimmed == text:
            return text
        text = trimmed


def key_of(fact: str, cued: bool = False) -> tuple[tuple[str, str], str] | None:
    """((attribute, subject), value) of a fact, when it has that shape. With `cued`
    (the fact says a value changed), frames that hold one value at a time are read
    too ("drives", "uses"...): without a cue two such facts may both hold."""
    text = normal(fact)
    for attribute, rule in _RULES:
        match = rule.match(text)
        if match and not _manner(fact, match["v"]):
            groups = match.groupdict()
            return (attribute, groups.get("k") or ""), groups["v"].strip()
    count = _COUNT.match(text) or _ZH_COUNT.match(text)
    if count:
        return ("count", count["k"]), count["v"]
    one = (_ONE_AT_A_TIME.match(text) or _ZH_ONE_AT_A_TIME.match(text)) if cued else None
    if one:
        return ("one", one["k"]), one["v"].strip()
    return None


def _manner(fact: str, value: str) -> bool:
    """A value that opens with how, not what: "settled in quickly at work" (an adverb,
    lower case where the fact wrote it; "Italy" is a name, "family" a noun)."""
    first = value.split(" ", 1)[0]
    return (len(first) > 3 and first.endswith("ly") and first != "family"
            and re.search(rf"(?<![\w]){re.escape(first)}(?![\w])", fact) is not None)


def changes(fact: str) -> bool:
    """Whether a fact says a value changed ("now", "no longer", "switched"...)."""
    return bool(_CHANGE_CUE.search(" ".join(fact.casefold().split())))


def old_value(fact: str) -> str | None:
    """The value a fact says was replaced ("switched from vim to VS Code": "vim")."""
    text = normal(fact)
    for rule in _OLD_VALUE:
        found = rule.search(text)
        if found:
            old = found["old"].strip(" ,")
            return old if 2 <= len(old) <= 80 else None
    return None


def switched_to(fact: str) -> str | None:
    """The value a fact says the user changed to, when it does not say from what."""
    found = _SWITCHED_TO.match(normal(fact))
    return (found["v"] or found["zv"]).strip() if found else None


# Any verb and its object, for a fact with no other frame ("drinks cow's milk").
_VERB_OBJECT = re.compile(r"^the user (?:now |currently |usually |always |still |mostly )*"
                          r"(?P<k>[a-z]+s) (?:a |an |the |their )?(?P<v>[^,;]+)$")


def verb_object(fact: str) -> tuple[str, str] | None:
    """(verb, object) of a plain "the user <verb>s <object>" fact."""
    found = _VERB_OBJECT.match(normal(fact))
    return (found["k"], found["v"].strip()) if found else None


def search_terms(fact: str) -> list[str]:
    """Words to find known facts about the same thing (beyond the nearest ones)."""
    found = key_of(fact)
    if found is None:
        return []
    (attribute, subject), _ = found
    if subject:
        return [subject]
    return KEY_TERMS.get(attribute, [])
