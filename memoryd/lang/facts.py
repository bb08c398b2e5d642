"""Deterministic fact extraction (no model): the sentences of a text that state
something about the speaker or the people and things around them, rewritten in the
third person ("I live in Boston" -> "The user lives in Boston"; "我住在北京" ->
"用户住在北京"). Questions, requests, greetings and filler are not facts.

In a project's memory (`team`), a standing rule ("Never push directly to main") and a
statement about the project in the third person ("The staging database is Postgres 16
on port 5433") are kept in the speaker's own words (lang/kinds.py reads which a
sentence is): rewriting them could only garble them, and they are already as the team
will want to read them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from memoryd.lang import past
from memoryd.lang.kinds import (
    kind_of,
    names_the_listener,
    names_the_speaker,
    of_the_speaker,
)
from memoryd.lang.sentences import clean, has_cjk, is_chinese, sentences
from memoryd.lang.signals import about_now

MAX_FACTS = 3
MAX_FACT_CHARS = 500

_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|my|mine|me|myself|we|we're|we've|our|"
                           r"us)\b", re.I)
_QUESTION_START = re.compile(
    r"^(what|who|whom|whose|when|where|why|how|which|can|could|would|will|shall|should|"
    r"do|does|did|is|are|am|was|were|have|has|may|might)\b", re.I)
_REQUEST_START = re.compile(
    r"^(please|pls|let's|let me|tell|show|give|help|write|make|explain|find|remind|"
    r"share|recommend|suggest|send|teach|describe|list|translate|summari[sz]e|bring|"
    r"thanks|thank you|ok|okay|sure|yes|no|hi|hello|hey|sorry|i wonder|i was wondering|"
    r"i'm (just )?(curious|wondering)|i think so|i guess|i hope you)\b", re.I)
# Agreement that says nothing of the speaker: "我也这么觉得", "我也是", "我同意".
_CJK_EMPTY = re.compile(r"^我(?:也|都)?(?:(?:这么|这样|是这么|是这样)?(?:觉得|认为|想)(?:的)?|"
                        r"是(?:的|啊|呀)?|同意|明白了?|知道了?|懂了?)[。！!…~～]*$")
_CJK_QUESTION = re.compile(r"[吗呢？?]$|^(请|帮我|能不能|可以|怎么|为什么|什么)")
# What a statement may open with that is not part of it: "Thanks, I always floss",
# "Big news: I moved to Berlin", "haha yes I did", "嗯，我结婚了". Stripped before the
# statement test (alone, such words are no statement: the request test still says so).
_LEAD_WORDS = (r"thanks|thank you|thx|ok|okay|yes|yeah|yep|yup|no|nope|sure|well|so|oh|ah|"
               r"hi there|hello there|hey there|hi|hello|hey|good morning|good afternoon|"
               r"good evening|greetings|"
               r"wow|haha+|hah|lol|hmm+|great|cool|nice|alright|right|anyway|btw|"
               r"by the way|big news|good news|bad news|news|guess what|fun fact|update|fyi|"
               r"actually|honestly|you know what|oh and|also")
# A lead-in word ends at punctuation, or before "I"/"my"/"we" or another lead-in word.
_LEAD_IN = re.compile(rf"^(?:(?:{_LEAD_WORDS})\b(?:\s*[,.!:;-]+\s*|\s+(?=(?:i|i'm|i've|"
                      rf"i'd|my|we|our|{_LEAD_WORDS})\b)))+(?=\S)", re.I)
# A short heading before a colon or dash, when a statement of the speaker's follows
# it ("Exciting update: we moved", "Life update - I got married"). Two to four words,
# not all capitalised: "Ann Smith: I moved" is a transcript's speaker, not a heading.
_HEADING = re.compile(r"^(?=[A-Za-z' ]*\b[a-z])[A-Za-z]+(?: [A-Za-z']+){1,3}\s*(?::|\s-)\s+"
                      r"(?=(?:I|I'm|I've|I'd|[Mm]y|[Ww]e|[Ww]e're|[Ww]e've|[Oo]ur|[Jj]ust|"
                      r"[Ff]inally)\b)")
_CJK_LEAD_IN = re.compile(r"^(?:(?:谢谢|好消息|告诉你|好的|好|嗯|哈哈+|是的|对|哦|噢)"
                          r"[\s，,。！!：:]*)+(?=\S)")
# Where a sentence holds two facts: "..., and I hate mushrooms" / "...，我..."
_CLAUSE_SPLIT = re.compile(
    r"\s*,?\s+(?:and|but|while|plus)\s+(?=(?:i|i'm|i've|my|we|our)\b)|\s*;\s*", re.I)
_CJK_CLAUSE_SPLIT = re.compile(r"[，,；;]\s*(?=(?:而且|并且|但是|但)?我)")

# First-person verbs in the third person. Anything else: +s / +es / -y+ies, unless it
# is already past tense.
_IRREGULAR = {"am": "is", "'m": "is", "have": "has", "'ve": "has", "do": "does",
              "go": "goes", "was": "was", "'d": "would", "'ll": "will"}
_UNCHANGED = frozenset("""
can could will would should shall may might must did was had went got made said saw
bought ate drank took gave came ran met left felt kept lost found thought told knew
quit cut hit let shut hurt cost
grew began wrote read built became brought caught fell flew forgot held heard paid
put sat sold sent set slept spent stood swam taught won wore used also really just
still never always usually often sometimes recently finally already actually now
""".split())
_ADVERBS = frozenset("also really just still never always usually often sometimes "
                     "recently finally already actually now even only".split())
# Any "-ly" word before the verb is an adverb ("I mainly love...", "I mostly cook..."),
# but for the verbs that end so.
_LY_VERBS = frozenset("apply reply rely supply comply imply multiply fly ally bully tally "
                      "rally sully dally".split())


def _adverb(word: str) -> bool:
    low = word.casefold()
    return low in _ADVERBS or (low.endswith("ly") and low.isalpha() and len(low) > 3
                               and low not in _LY_VERBS)


_NEGATIONS = {"don't": "doesn't"}
# A verb of the user's after "and" ("I sold my car and now drive a Tesla"): conjugated
# when an adverb says it is one, or when it is a verb people state facts with.
_COORD = re.compile(r"\b(and|but|then|or)\s+(?:(now|also|still|then|later|currently|"
                    r"usually|often|sometimes|always|never|recently|just)\s+)?([a-z]+)\b")
_VERBS = frozenset("""
live work drive own have love like hate prefer enjoy use play teach study speak cook
ride walk run eat drink go visit travel write read sing dance paint build make keep
take want need plan hope volunteer collect swim hike bike commute rent sell buy
""".split())
_NOT_VERBS = frozenset("the a an their it i he she they we my his her this that".split())
# Two words that say nothing on their own: "I did", "I see", "I guess".
_EMPTY_SECOND = frozenset("""did do does am was were have had will would can could should
is are too not know see agree guess think mean suppose bet""".split())


def _third_person(verb: str) -> str:
    low = verb.casefold()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low in _UNCHANGED or low.endswith("ed") or not low.isalpha() or _adverb(low):
        return verb
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


_WE_FULL = {"'re": "are", "'ve": "have", "'ll": "will", "'d": "would"}
_WE_CONTRACTED = re.compile(r"^we('re|'ve|'ll|'d)\b", re.I)
_WE_VERB = re.compile(rf"^we ((?:(?:{'|'.join(sorted(_ADVERBS))}|"
                      rf"(?!(?:{'|'.join(sorted(_LY_VERBS))})\b)[a-z]{{2,}}ly) )*)([\w']+)", re.I)
_ONE = {"are": "is", "were": "was", "aren't": "isn't", "weren't": "wasn't",
        "don't": "doesn't", "haven't": "hasn't"}


def _team_verb(match: re.Match[str]) -> str:
    """`We [adverbs] verb` with the verb of one subject (the team)."""
    adverbs, verb = match.group(1), match.group(2)
    if verb.casefold() == "do" and match.string[match.end():].startswith(" not"):
        return f"We {adverbs}does"
    return f"We {adverbs}{_ONE.get(verb.casefold()) or _third_person(verb)}"


def _rewrite_english(sentence: str, team: bool = False) -> str:
    text = sentence
    text = re.sub(r"\bI'm\b", "I am", text)
    text = re.sub(r"\bI've\b", "I have", text)
    text = re.sub(r"\bI'd\b", "I would", text)
    text = re.sub(r"\bI'll\b", "I will", text)

    def subject(match: re.Match[str]) -> str:
        words = match.group(2).split(" ")
        out = []
        for n, word in enumerate(words):  # adverbs pass, the first verb conjugates
            low = word.casefold()
            if _adverb(low) and n + 1 < len(words):
                out.append(word)
                continue
            if low == "do" and n + 1 < len(words) and words[n + 1].casefold() == "not":
                out.append("does")
            else:
                out.append(_NEGATIONS.get(low) or _third_person(word))
            out.extend(words[n + 1:])
            break
        return f"{match.group(1)}the user {' '.join(out)}"

    starts_with_i = bool(re.match(r"\s*I\b", text))
    # (the words after "I" stop at another "I": "I feel like I am tired")
    text = re.sub(r"(^|[^\w'])I ((?!I\b)[\w']+(?: (?!I\b)[\w']+){0,2})", subject, text)
    if starts_with_i:  # the user is the subject: a verb after "and" is the user's too
        def coordinated(match: re.Match[str]) -> str:
            joint, adverb, verb = match.groups()
            if (adverb is None and verb not in _VERBS) or verb in _NOT_VERBS:
                return match.group()
            return f"{joint} {adverb + ' ' if adverb else ''}{_third_person(verb)}"

        text = _COORD.sub(coordinated, text)
        # "my" once the user is the subject: "The user sold their car" (a sentence that
        # starts with "My ..." keeps "The user's ...", which facts' frames read).
        text = re.sub(r"\bmy\b", "their", text, flags=re.I)
    text = re.sub(r"\bmy\b", "the user's", text, flags=re.I)
    text = re.sub(r"\bmine\b", "the user's", text, flags=re.I)
    text = re.sub(r"\b(me|myself)\b", "the user", text, flags=re.I)
    text = re.sub(r"\bour\b", "the team's" if team else "the user's", text, flags=re.I)
    text = _WE_CONTRACTED.sub(lambda m: f"We {_WE_FULL[m.group(1).casefold()]}", text)
    if team:  # "the team" is one: its verb agrees ("We deploy" -> "The team deploys")
        text = _WE_VERB.sub(_team_verb, text)
    text = re.sub(r"^we\b", "The team" if team else "The user and family", text, flags=re.I)
    text = text.strip().rstrip(".!;,")
    return text[:1].upper() + text[1:] + "."


def _rewrite_chinese(sentence: str, team: bool = False) -> str:
    # "we, the family", "our home": the user and family
    text = sentence.replace("我们一家", "我们").replace("我们家", "我们")
    text = text.replace("我们", "团队" if team else "用户一家").replace(
        "我的", "用户的").replace("我", "用户")
    return text.strip().rstrip("。！!；;，,") + "。"


def _without_lead_in(sentence: str) -> str:
    """The sentence without words that open it but say nothing ("Thanks, ", "Big news:
    ", "嗯，"), when something is left."""
    stripped = sentence.strip()
    lead = _CJK_LEAD_IN if is_chinese(stripped) else _LEAD_IN
    return lead.sub("", _HEADING.sub("", stripped)) or stripped


# A statement may leave out its subject when it tells what the speaker did ("Moved to
# Manchester last week!", "Just started a new job at Initech"): the verbs of events
# in a life, past tense, with something after them that is not "it" or "you" ("Got
# it", "Loved that" say nothing).
_EVENT_VERBS = frozenset("""
moved relocated settled started joined bought sold adopted quit left got married
switched finished graduated retired began changed took signed booked visited returned
landed lost won broke met hired upgraded traded replaced turned enrolled passed
""".split())
_NOT_AN_OBJECT = frozenset("it that this you so me them those these".split())


def _with_subject(clause: str) -> str:
    """`clause` with "I" before it when it tells, without a subject, what the speaker
    did."""
    words = clause.split()
    at = 1 if words and _adverb(words[0]) else 0
    if len(words) < at + 2 or not words[at].isalpha() or \
            words[at].casefold() not in _EVENT_VERBS or \
            words[at + 1].casefold().strip(",.!") in _NOT_AN_OBJECT or \
            "question" in clause.casefold():  # "Got a question for you": a request
        return clause
    return "I " + clause[:1].lower() + clause[1:]


def _is_statement(sentence: str) -> bool:
    stripped = sentence.strip()
    if is_chinese(stripped):
        return ("我" in stripped and not _CJK_QUESTION.search(stripped) and len(stripped) >= 3
                and not _CJK_EMPTY.match(stripped))
    if stripped.endswith("?") or _QUESTION_START.match(stripped):
        return False
    if _REQUEST_START.match(stripped):
        return False
    words = re.findall(r"[\w']+", stripped)
    # Two words are a statement when the first is its subject: "I'm vegetarian", "I
    # resigned"; not "my friend" (who is addressed), "my bad", "my pleasure".
    if len(words) == 2 and (words[1].casefold() in _EMPTY_SECOND
                            or words[0].casefold() in ("my", "our")):
        return False
    return len(words) >= 2 and bool(_FIRST_PERSON.search(stripped))


def _clauses(sentence: str) -> list[str]:
    splitter = _CJK_CLAUSE_SPLIT if has_cjk(sentence) else _CLAUSE_SPLIT
    return [c.strip() for c in splitter.split(sentence) if c and c.strip()]


def extract(text: str, limit: int = MAX_FACTS, team: bool = False,
            chat: Callable[[str], bool] | None = None) -> list[str]:
    """Up to `limit` facts from a user's text, in order, in the third person. `team`:
    said in a project's memory, where "we" and "our" are the team's, not the family's.
    `chat`: whether a sentence is chit-chat by meaning, where its structure cannot
    tell (lang/prototypes.py); such a sentence states nothing to learn."""
    facts: list[str] = []
    for sentence in sentences(clean(text)):
        said = _without_lead_in(sentence)
        if team and (kept := _as_said(said)) is not None:
            if kept not in facts:
                facts.append(kept)
            if len(facts) >= limit:
                return facts
            continue
        stated = _stated(said, team)
        if stated and chat is not None and chat(said):
            continue  # the model is asked only of a sentence the rules learn from
        for fact in stated:
            if fact not in facts:
                facts.append(fact)
            if len(facts) >= limit:
                return facts
    return facts


def _stated(said: str, team: bool) -> list[str]:
    """The facts of one sentence's statement clauses, rewritten in the third person."""
    found = []
    for clause in _clauses(said):
        clause = _without_lead_in(clause)
        chinese = is_chinese(clause)
        if not chinese:
            clause = _with_subject(clause)
        if not _is_statement(clause):
            continue
        # (the mood is the whole clause's: a question stays one without its "can you")
        kept = _without_listener(clause)
        if kept != clause and not _is_statement(kept):
            continue  # what is left after the listener's parts says nothing
        clause = kept
        fact = _rewrite_chinese(clause, team) if chinese else _rewrite_english(clause, team)
        found.append(fact[:MAX_FACT_CHARS])
    return found


_PART = re.compile(r"[^,，]+(?:[,，]\s*|$)")
# What opens a clause that leans on another ("If we need help", "如果你需要").
_LEADING = re.compile(r"(?:if|when|whenever|since|because|although|though|while|once|"
                      r"unless|as long as|so that)\b|(?:如果|要是|假如|因为|既然|虽然|当)", re.I)


def _without_listener(clause: str) -> str:
    """The clause without its comma-separated parts that name the one spoken to: they
    are about this exchange ("Since you mentioned pastries, I made ..."; "我是郑思雨，
    很高兴认识你"), and kept as a fact would say "The user is glad you liked it", a
    "you" no later reader can place. Empty when every part does."""
    parts = _PART.findall(clause)
    aside = [names_the_listener(p) and not _told_to(p) for p in parts]
    if not any(aside):
        return clause
    kept: list[str] = []
    for part, dropped in zip(parts, aside, strict=True):
        if not dropped:
            kept.append(part)
        elif kept and not is_chinese(kept[-1]):
            # an aside's comma goes with it: "My sister, who you met, lives ..."
            kept[-1] = kept[-1].rstrip(" ,") + " "
    said = "".join(kept).rstrip(" ,，")
    if _LEADING.match(said) and not re.search(r"[,，]", said):
        return ""  # "If we need help, we'll let you know": no clause left to say it
    if said and clause[-1] in ".!。！" and said[-1] not in ".!。！":
        said += clause[-1]
    return said


def _told_to(part: str) -> bool:
    """What the speaker did, told to the one they speak to: "I took a lot of shots
    yesterday and chose the best one to send to you" is an event of theirs."""
    return names_the_speaker(part) and past.tells_past(part.casefold())


def _as_said(said: str) -> str | None:
    """A project's standing rule or third-person fact, in the speaker's words (`said`:
    the sentence with what opens it and says nothing taken off), with a full stop where
    none ends it; None for any other sentence, and for a statement of the moment ("The
    build is broken right now") or of what happened ("The deploy failed yesterday"),
    which would crowd the project's standing facts at every session's start."""
    kind = kind_of(said)
    # A statement that names the speaker is theirs, not the project's: it is read as
    # the user's, in the third person, like any other.
    if kind != "rule" and not (kind == "fact" and not of_the_speaker(said)
                               and not names_the_speaker(said)):
        return None
    if kind == "fact" and (about_now(said) or past.tells_past(said.casefold())):
        return None  # how things stand today, or what happened: no standing fact
    said = said[0].upper() + said[1:] if said[:1].islower() else said
    if not said.endswith((".", "!", "?", "。", "！", "`")):
        said += "."
    return said[:MAX_FACT_CHARS]
