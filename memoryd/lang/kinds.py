"""What kind of thing a sentence says, read from its structure, no model: a standing
rule (how to work, what to use, what never to do), a fact, a preference, a request
for now, a question, chit-chat, or pasted content. English and Chinese.

The reading is by form, not by phrase lists of what people might say:
- **mood**: a question asks (a question mark, an auxiliary or wh-word first); an
  imperative opens with a verb (a word that is none of the closed classes — pronoun,
  determiner, preposition, auxiliary, wh-word, interjection — with no auxiliary right
  after it: "Run the tests", not "Contributions will be reviewed");
- **standing**: a rule holds beyond this request — an imperative with a frequency
  ("always", "never", "every time", "whenever", "before each"), a prohibition ("don't",
  "avoid"), a condition ("if", "when", "unless"), a generic object ("a test case",
  "any file"), or a modal of obligation with a generic subject ("Commit messages
  must follow ...", "you should ...", "we don't recommend ...");
- **subject**: the speaker ("I", "my", "we") states a fact or a preference; a
  third-person subject states a fact about someone or something else, unless all the
  sentence says is how it feels ("Nature is so refreshing": chit-chat).

Where structure is unsure the answer leans to what costs least to get wrong: not a
rule. Measured on real sentences in bench/data/messages (bench/sentence_types.py).
"""

from __future__ import annotations

import re
from typing import Literal

from memoryd.lang.sentences import LATIN_WORD, is_chinese

Kind = Literal["rule", "fact", "preference", "request", "question", "chat", "content"]

_AUX = frozenset("""
am is are was were be been being will would can could should must may might shall has
have had do does did need needs ought 's 're 'll 'd 've isn't aren't wasn't weren't won't
wouldn't can't cannot couldn't shouldn't mustn't hasn't haven't hadn't doesn't didn't
""".split())
_PRONOUNS = frozenset("""
i me my mine myself you your yours yourself we us our ours he him his she her hers it its
they them their theirs this that these those there here one everyone someone something
everything nothing anyone anything i'm i've i'd i'll you're you've you'll we're we've
it's that's there's here's he's she's they're let's
""".split())
_DETERMINERS = frozenset("a an the some any every each no all both either neither such".split())
_PREPOSITIONS = frozenset("""
in on at for with by from of to about as into onto after before during since until while
if when whenever unless because although though so and but or nor yet also then just
like than over under between through without within via per
""".split())
_WH = frozenset("what who whom whose which where when why how".split())
_INTERJECTIONS = frozenset("""
yes yeah yep yup no nope ok okay oh ah aw aww wow haha lol hey hi hello thanks thank
sorry please well hmm um uh great cool nice awesome amazing good bye goodbye congrats
congratulations welcome sure alright right indeed absolutely totally
""".split())
_HONORIFICS = frozenset("mr mrs ms dr prof sir madam".split())
_CLOSED = _AUX | _PRONOUNS | _DETERMINERS | _PREPOSITIONS | _WH | _INTERJECTIONS | _HONORIFICS
# What a sentence of mere talk opens with: greeting, thanking, laughing, marvelling.
_SOCIAL = frozenset(
    "thanks thank thx hello hi hey haha hah lol wow bye goodbye congrats congratulations "
    "welcome sorry glad aw aww cheers".split())
# Words that may open an imperative without being its verb.
_LEADS = frozenset(
    "please pls also and so just now then always never oh btw ok okay kindly only".split())
_NEGATIONS = ("don't", "do not", "dont", "never", "avoid", "stop", "no more")
# What makes an instruction hold beyond this request.
_STANDING = re.compile(
    r"\b(always|never|every ?time|each time|whenever|every|each|any|all|by default|"
    r"from now on|going forward|in (?:this|the) (?:repo|repository|project|codebase|team)|"
    r"before (?:each|every|any)|after (?:each|every|any)|unless|instead of|rather than|"
    r"make sure|be sure|ensure|prefer(?:red)?|avoid|only)\b", re.I)
_CONDITION = re.compile(r"\b(if|when|whenever|unless|while)\b", re.I)
_GENERIC_OBJECT = re.compile(r"\b(?:a|an|any|every|each|all|your)\s+[a-z]", re.I)
_OBLIGATION = re.compile(
    r"\b(should|must|shall|need to|needs to|have to|has to|are to|is to|may not|"
    r"cannot|can't|is expected|are expected|is preferred|are preferred|is required|"
    r"are required|we (?:\w+ )?(?:don't |do not )?(?:recommend|suggest|prefer|expect)|"
    r"you(?:'ll| will)? (?:probably |may |might )?(?:want|need) to|"
    r"it's (?:ok|okay|fine|best|better)|it is (?:ok|okay|fine|best|better))\b", re.I)
# An obligation of the speaker's own ("I need to sort the photos") is a fact of theirs;
# "must be" with a degree word is a guess, not a duty ("you must be very talented").
_OWN_DUTY = re.compile(r"\b(?:i|i'm|i've)\s+(?:\w+\s+)?(?:need|needs|have|has|must|should|"
                       r"ought|gotta|can't|cannot|couldn't)\b", re.I)
_GUESS = re.compile(r"\bmust (?:be|have been) (?:very|so|really|quite|pretty|such|a|an)\b",
                    re.I)
_PREFERS = re.compile(
    r"\b(love|loves|like|likes|enjoy|enjoys|prefer|prefers|hate|hates|dislike|adore|"
    r"interested in|into|fan of|favou?rite|can't stand|rather)\b", re.I)
_FEELING = re.compile(
    r"\b(great|awesome|amazing|fun|rewarding|refreshing|beautiful|cool|nice|sad|crazy|"
    r"insane|incredible|wonderful|delicious|perfect|impressive|phenomenal|interesting|"
    r"inspiring|special|exciting|tough|hard|helpful|lovely|fantastic|magical|sweet|"
    r"glad|happy|proud|sorry|excited|means a lot|mean the world|everything to me)\b", re.I)
_ASK_FOR = re.compile(
    r"^(?:(?:so|and|also|but|then|ok|okay|well|now),?\s+)*(?:can|could|would|will) you\b|"
    r"\b(?:do|would) you (?:have|know) (?:any|some|a few) (?:tips|suggestions|ideas|"
    r"recommendations|advice|examples)\b|\bany (?:tips|suggestions|ideas|recommendations)\b|"
    r"^(?:please )?(?:help me|tell me|show me|give me|let's|let me|i need (?:help|you)|"
    r"i'm looking for|i am looking for|i'd like (?:you|to)|i want you|how to|act as)\b",
    re.I)
_CODE = re.compile(r"[{}=<>|\\]|-->|^\W*$|^\d[\d\s.,:;-]*\d$|^[-•*]\s")
# The speaker as the subject (or the owner: "my sister"), not the object ("send me").
_FIRST_PERSON = re.compile(r"^(?:\W*\w+\W+){0,3}?(?:i|i'm|i've|i'd|i'll|my|we|we're|we've|"
                           r"our)\b", re.I)

# The speaker anywhere, subject or not ("send me", "takes me back").
_SPEAKER = re.compile(r"(?<![a-z'’])(?:i|i'm|i’m|i've|i’ve|me|my|mine|myself)(?![a-z])")
_ZH_SPEAKER = re.compile("我(?!们)")

# Chinese, by the same structure: a question particle or mark, the asking verbs, the
# words of obligation and prohibition, the first person.
_ZH_QUESTION = re.compile(r"[？?]$|[吗呢]\W*$")
_ZH_ASK_FOR = re.compile(r"推荐|建议|帮我|请你|能不能|可不可以|可以.*吗|有没有.*(?:方法|办法)")
# 别/不要 forbid at a clause's start ("别提交到main"), not inside a word (特别, 区别).
_ZH_RULE = re.compile(r"总是|一律|必须|务必|一定要|永远不要|禁止|不得|每次|以后都|"
                      r"(?:^|[，,；;：:]|请)(?:别|不要)")
_ZH_PREFERS = re.compile(r"我.{0,4}(?:喜欢|爱|讨厌|偏好|感兴趣|最爱)")
_ZH_SPECIFIC = re.compile(r"[A-Za-z0-9`/]")
_ZH_CHAT = re.compile(r"^(?:谢谢|感谢|你好|再见|好的|嗯|哈哈|是的|没错|太好了|下次再聊)")
# 我 as the subject: in the first clause, with no other person before it ("你给我推荐过",
# "他们给我们发了" are about what another did).
_ZH_FIRST_PERSON = re.compile(r"^(?:[^你他她它，,]{0,10}[，,])?[^你他她它，,]{0,6}?我")


def kind_of(sentence: str) -> Kind:
    """What `sentence` (one, as lang/sentences.py splits a text) says."""
    text = sentence.strip()
    if not text:
        return "content"
    if is_chinese(text):
        return _chinese(text)
    text = _VOCATIVE.sub("", text)  # "Dave, it's awesome": who is spoken to is not said
    raw, words = _words(text)
    if not words or (_CODE.search(text) and not text.endswith("?")):
        return "content"
    if words[0] in _SOCIAL or words[0] in _FEELING_WORDS:
        return "chat"
    if _ASK_FOR.search(text):
        return "request"
    asks = text.rstrip().endswith("?")
    main = None if asks else _main_clause(text)
    if asks or (main is None and words[0] in _WH | _AUX and len(words) > 1
                and words[1] in _AUX | _PRONOUNS | _DETERMINERS):
        return "question"
    if main is not None:
        raw, words = _words(main)
    rest = _without_leads(words)
    if rest and _imperative(rest, words, raw[len(words) - len(rest)]):
        return "rule" if main is not None or _standing(text, words, rest) else "request"
    # A condition's own modal ("If you need to talk, I'm here") binds nothing: the
    # clause it governs says whether this is a rule.
    duty = main if main is not None else text
    if _OBLIGATION.search(duty) and not _OWN_DUTY.search(duty) and not _GUESS.search(duty):
        return "rule"
    if _FIRST_PERSON.match(text):
        if _PREFERS.search(text):
            return "preference"
        return "chat" if _FEELING.search(text) and not _specific(text) else "fact"
    if len(words) <= 4 or (_FEELING.search(text) and not _specific(text)):
        return "chat"
    if not (any(w in _AUX or w.endswith(("s", "ed")) for w in words[1:])
            or any(w.endswith(_VERB_CONTRACTIONS) for w in words)):
        return "content"  # no verb to be seen: a heading, a label, a fragment
    return "fact"


def _words(text: str) -> tuple[list[str], list[str]]:
    """The words of `text` as written, and lowercased with a plain apostrophe."""
    raw = LATIN_WORD.findall(text)
    return raw, [w.lower().replace("’", "'") for w in raw]


# "They're written in ...": a pronoun's contraction holds its verb.
_VERB_CONTRACTIONS = ("'re", "'ve", "'ll", "'d", "'m")
_VOCATIVE = re.compile(r"^[A-Z][a-z]+,\s+(?=\S)")
_FEELING_WORDS = frozenset("glad happy sorry excited proud great awesome nice cool".split())
# "If/When/Before you ..., <do this>": a condition, then the instruction it governs.
_CONDITIONAL = re.compile(r"^(?:if|when|whenever|before|after|unless|while|once)\b[^,]{3,80},"
                          r"\s*(?P<main>.+)$", re.I)


def _main_clause(text: str) -> str | None:
    """The clause after a leading condition, or None without one."""
    match = _CONDITIONAL.match(text)
    return match.group("main") if match else None


_LISTENER = re.compile(r"(?<![a-z'’])(?:you|your|yours|yourself|you're|you’re|you've|"
                       r"you’ve|you'll|you’ll|you'd|you’d)(?![a-z])")
_ZH_LISTENER = re.compile("[你您]")


def names_the_listener(text: str) -> bool:
    """Whether `text` names the one spoken to ("you", "your", 你, 您)."""
    return bool(_LISTENER.search(text.casefold()) or _ZH_LISTENER.search(text))


def names_the_speaker(text: str) -> bool:
    """Whether `text` names the one speaking anywhere in it ("The pic takes me back";
    "I", "me", "my", 我), not the team they may speak for ("we", 我们)."""
    return bool(_SPEAKER.search(text.casefold()) or _ZH_SPEAKER.search(text))


def of_the_speaker(sentence: str) -> bool:
    """Whether the sentence's subject is the speaker ("I", "my", "we"; 我, 我们)."""
    if is_chinese(sentence):
        return bool(_ZH_FIRST_PERSON.match(sentence))
    return bool(_FIRST_PERSON.match(sentence))


def _without_leads(words: list[str]) -> list[str]:
    i = 0
    while i < len(words) - 1 and words[i] in _LEADS:
        i += 1
    if words[i:i + 2] == ["do", "not"]:
        i += 2
    elif i < len(words) and words[i] in ("don't", "dont"):
        i += 1
    return words[i:]


def _imperative(rest: list[str], words: list[str], as_written: str) -> bool:
    """Opens with a verb: a word of no closed class, with no auxiliary within the next
    three words (which would make it a subject: "Commit messages must ..."). Not a
    verb's base form: an -ing or -ed form ("Painting is fun"), a plural ("Contributions
    ..."; "Focus", "Pass" are verbs), a possessor ("Ann's car ..."), a name written
    with capitals inside ("GitHub") or all in capitals (a heading)."""
    negated = len(rest) < len(words) and any(
        " ".join(words[:len(words) - len(rest)]).endswith(n) for n in _NEGATIONS)
    first = rest[0]
    if negated or (first == "be" and len(rest) > 1 and rest[1] not in _PRONOUNS):
        return True  # "Don't ...", "Be sure to ...", "Be careful with ..."
    if first in _CLOSED or first.endswith(("ing", "ed", "'s")):
        return False
    if first.endswith("s") and not first.endswith(("ss", "us", "is")):
        return False
    if any(c.isupper() for c in as_written[1:]):
        return False
    if len(rest) > 1 and rest[1].endswith("'s"):
        return False
    return not any(w in _AUX for w in rest[1:4])


def _standing(text: str, words: list[str], rest: list[str]) -> bool:
    """An instruction that holds beyond this request: a frequency, a prohibition, a
    condition, or a generic object ("a test case", "any file", a bare plural: "keep
    API handlers free of SQL"), not a definite one ("run the tests", "fork the
    repository")."""
    lowered = " ".join(words)
    bare_plural = False  # the object's head, a plural with no determiner before it
    for word in rest[1:4]:
        if word in _CLOSED:
            break
        if word.endswith("s") and not word.endswith(("ss", "us", "is")):
            bare_plural = True
            break
    return bool(_STANDING.search(text) or _CONDITION.search(text) or bare_plural
                or _GENERIC_OBJECT.search(text)
                or any(lowered.startswith(n) or f" {n} " in f" {lowered} "[:40]
                       for n in _NEGATIONS))


def _specific(text: str) -> bool:
    """Names, numbers, code or paths: a statement that says more than a feeling."""
    return bool(re.search(r"\d|`|/|\b[A-Z][a-z]+\b.*\b[A-Z][a-z]+\b", text[1:]))


def _chinese(text: str) -> Kind:
    chat = _ZH_CHAT.match(text)
    if chat and "我" not in text[chat.end():]:
        return "chat"
    if _ZH_QUESTION.search(text):
        return "request" if _ZH_ASK_FOR.search(text) else "question"
    if _ZH_ASK_FOR.search(text):
        return "request"
    if _ZH_RULE.search(text) and not _ZH_FIRST_PERSON.match(text):
        return "rule"
    if _ZH_FIRST_PERSON.match(text):
        return "preference" if _ZH_PREFERS.search(text) else "fact"
    # Of something else: a fact when it names what a feeling does not (a name, a
    # command, a number: "预发布环境的数据库是 Postgres 16"), as in English.
    return "fact" if _ZH_SPECIFIC.search(text) else "chat"
