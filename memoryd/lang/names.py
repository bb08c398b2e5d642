"""The entities a text names, read from its form, no model: people, places,
organisations, products, pets.

- Latin script: a run of capitalised words ("Ann Smith", "Bank of America", "LGBTQ",
  "McKinsey & Company", "Dr. Smith": Smith), a product in lower camel case ("iPhone",
  "eBay"), the speaker of a `Name: ` line, a `[[page]]` link. A capitalised word that only
  opens a sentence may be capitalised for that alone ("Painting is fun.", "Ann loves
  tea."): it is a *weak* mention, which counts only for a name the store also holds
  as a name elsewhere; so is a run that opens a sentence, and the rest of it ("Run
  Prettier first", "Use Logseq daily": Logseq). A possessive makes it a name
  ("Caroline's dog").
  Leading openers are not part of a name ("Hey Ann" names Ann); neither are months,
  weekdays or "I"; a secret's marker (`[REDACTED:kind]`) is no one's name.
- Who is spoken *to* is not what a text is about: a name addressed on its own
  ("Thanks, Melanie!", "Hey Caroline, ...", "That's great, Ann!") is left out.
- Chinese: a common surname and one or two characters between word boundaries
  ("张伟", "王小明"; two-character surnames too, "欧阳娜娜"), a surname with a title
  ("李老师", "王总") or with 小/老 before it ("小王", "老李"), and a title in 《》「」『』.

Each has a key that matches it however it is written (case, accents, a possessive),
and the name as first written.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import NamedTuple

import msgspec

from memoryd.lang.daynames import MONTHS, WEEKDAYS
from memoryd.lang.sentences import HAN
from memoryd.schema import Memory
from memoryd.secrets.rules import MARKER


class Entity(msgspec.Struct, frozen=True):
    key: str  # what matches: casefolded, accents and a possessive dropped
    name: str  # as the text first wrote it
    weak: bool = False  # only where a sentence opens: a name if the store knows it


_SPEAKER = re.compile(r"^([A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}): (.+)$", re.S)


def split_speaker(content: str) -> tuple[str | None, str]:
    """A leading `Name: ` (a transcript's speaker) and the rest."""
    match = _SPEAKER.match(content)
    return (match.group(1), match.group(2)) if match else (None, content)


# Words that open a sentence or address someone, capitalised but never a name
# ("Thanks Ann", "The Beatles", "Dear Ann"), and honorifics, not part of the key.
OPENERS = frozenset((
    "a an the my our your his her their its this that these those some any every no "
    "hey hi hello dear thanks thank thx ok okay yes yeah yep yup nope sure well so oh ah "
    "aw aww wow haha lol omg hmm congrats congratulations sorry bye goodbye great cool "
    "nice awesome amazing good morning evening night and but or if when while because "
    "also just then there here what who where why how which mr mrs ms miss dr prof "
    "sir madam please pls always never don't dont do").split())
# Capitalised, never a name: the first person, the calendar, chat abbreviations.
NOT_NAMES = frozenset([
    "i", "i'm", "i've", "i'd", "i'll", "im", "ive", "id", "ill", *MONTHS, *WEEKDAYS,
    # ... and "It's", "Let's", "That's": capitalised and "'s", but no one's possessive
    "it", "let", "that", "what", "who", "where", "how", "here", "there", "he", "she",
    "now", "today", "tomorrow", "yesterday", "everyone", "everything", "nothing",
    *(m[:3] for m in MONTHS), *(d[:3] for d in WEEKDAYS), "sept", "tues", "thurs",
    "ok", "okay", "lol", "omg", "btw", "fyi", "imo", "tbh", "asap"])
# The openers that greet or answer someone: a capital after one is a name's ("Hey Ann",
# "Thanks Bob"); after any other ("Please Run it", "Always Use pnpm") the next word
# still opens the sentence.
_GREETINGS = frozenset(
    "hey hi hello dear thanks thank thx congrats congratulations sorry bye goodbye "
    "great cool nice awesome amazing wow aw aww good morning evening night".split())
# Joins capitalised words into one name: "Bank of America", "Vincent van Gogh".
_JOINERS = frozenset("of de van von der den da del di la le du y".split())

_WORD = re.compile(r"[^\W\d_](?:[\w'’-]*\w)?")
_POSSESSIVE = re.compile(r"['’]s?$", re.I)
# What ends a sentence or starts one (a list item, a heading, a quote) before a word.
_STARTS = frozenset(".!?:;\n\"“‘([>*#•|-–—+")
_LAST_WORD = re.compile(r"[^\W\d_][\w'’]*$")
_LINK = re.compile(r"\[\[([^\[\]\n|]{1,100})(?:\|[^\[\]\n]*)?\]\]")

# Chinese: common surnames that are rarely the first character of an everyday word,
# and the characters that end a name or may stand before one.
_SURNAMES = ("王李张刘陈杨黄赵吴徐孙朱胡郭罗郑梁谢宋唐韩冯邓曹彭肖董袁潘蒋蔡杜苏魏吕丁沈姚卢"
             "姜崔钟谭陆汪贾韦邹孟熊秦邱尹薛闫雷侯陶黎贺郝龚邵覃戴莫孔")
_HAN = HAN
_BEFORE_NAME = "和跟与给对是叫找问让被把的了说同及或请位个见天上午后晚早"
_AFTER_NAME = "的说是和在了也都去来跟与给对把被还就又要会让请吗呢吧啊呀家先老"
_ZH_NAME = re.compile(
    rf"(?:^|(?<=[^{_HAN}])|(?<=[{_BEFORE_NAME}]))([{_SURNAMES}][{_HAN}]{{1,2}}?)"
    rf"(?=$|[^{_HAN}]|[{_AFTER_NAME}])")
_ZH_TITLE = re.compile(r"[《「『]([^》」』\n]{1,40})[》」』]")
# A surname with a title after it ("李老师", "王总") or 小/老 before it ("小王", "老李"):
# a person, whatever follows; and the common two-character surnames ("欧阳娜娜").
_ZH_TITLED = re.compile(
    rf"(?:[{_SURNAMES}](?:老师|医生|大夫|教授|主任|经理|律师|先生|女士|小姐|阿姨|叔叔|总)|"
    rf"(?:^|(?<=[^{_HAN}])|(?<=[{_BEFORE_NAME}]))[小老][{_SURNAMES}](?=$|[^{_HAN}]|[{_AFTER_NAME}]))")
_ZH_DOUBLE = re.compile(
    rf"(?:^|(?<=[^{_HAN}])|(?<=[{_BEFORE_NAME}]))((?:欧阳|司马|诸葛|上官|东方|慕容|令狐|皇甫|"
    rf"公孙|夏侯|尉迟|长孙|宇文|司徒)[{_HAN}]{{1,2}}?)(?=$|[^{_HAN}]|[{_AFTER_NAME}])")


def key(name: str) -> str:
    """What a name matches by: accents dropped, casefolded, spaces collapsed, no
    possessive."""
    plain = name if name.isascii() else "".join(
        c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    words = plain.casefold().split()
    if words:
        words[-1] = _POSSESSIVE.sub("", words[-1])
    return " ".join(w for w in words if w)


def names(content: str) -> list[Entity]:
    """The entities `content` names, each once: the outright ones, then the weak, each
    in the order they first appear."""
    found: dict[str, Entity] = {}

    def add(name: str, weak: bool = False) -> None:
        k = key(name)
        if k and k not in NOT_NAMES and (k not in found or found[k].weak > weak):
            found[k] = Entity(k, _POSSESSIVE.sub("", name.strip()), weak)

    speaker, body = split_speaker(MARKER.sub(lambda m: " " * len(m.group()), content))
    if speaker:
        add(speaker)
    for link in _LINK.findall(body):
        add(link)
    for run, weak in _runs(_LINK.sub(lambda m: " " * len(m.group()), body)):
        add(run, weak)
    for match in _ZH_TITLE.finditer(body):
        add(match.group(1))
    for match in _ZH_NAME.finditer(body):
        add(match.group(1))
    for match in _ZH_TITLED.finditer(body):
        add(match.group())
    for match in _ZH_DOUBLE.finditer(body):
        add(match.group(1))
    ordered = list(found.values())
    return [e for e in ordered if not e.weak] + [e for e in ordered if e.weak]


def of_memory(memory: Memory) -> list[Entity]:
    """The entities a memory names, as the indexes keep them: none yet for a turn
    still pending (memory_remember's reply does not wait for them; the background
    work that learns from the turn settles it, and its entities are indexed then)."""
    return [] if memory.pending else names(memory.content)


def _runs(text: str) -> list[tuple[str, bool]]:
    """The capitalised runs of Latin-script `text` that name something, each with
    whether it is a weak mention."""
    out: list[tuple[str, bool]] = []
    words = list(_WORD.finditer(text))
    i = 0
    while i < len(words):
        if not _capital(words[i].group()):
            i += 1
            continue
        run = [words[i]]  # capitalised words one space apart, joiners between them
        j = i + 1
        while j < len(words):
            gap = text[run[-1].end():words[j].start()]
            if gap not in (" ", " & ") or _possessive(run[-1].group()) or (
                    gap == " & " and not _capital(words[j].group())):
                break
            if _capital(words[j].group()):
                run.append(words[j])
                j += 1
            elif (words[j].group() in _JOINERS and j + 1 < len(words)
                  and text[words[j].end():words[j + 1].start()] == " "
                  and _capital(words[j + 1].group())):
                run += [words[j], words[j + 1]]
                j += 2
            else:
                break
        i = j
        out.extend(_name_in(text, run))
    return out


def _name_in(text: str, run: list[re.Match[str]]) -> list[tuple[str, bool]]:
    """The names in one capitalised run, each with whether it is weak: openers and
    honorifics before it dropped, split where a word is never a name."""
    opens = _opens(text, run[0].start())
    while run and key(run[0].group()) in OPENERS:
        # "Hey Ann": Ann is capitalised as a name, not as an opening
        opens = opens and key(run[0].group()) not in _GREETINGS
        run = run[1:]
    parts: list[list[re.Match[str]]] = [[]]
    for word in run:
        if key(word.group()) in NOT_NAMES:
            parts.append([])
        else:
            parts[-1].append(word)
    names_found: list[tuple[str, bool]] = []
    for n, part in enumerate(p for p in parts if p):
        while part and part[-1].group() in _JOINERS:
            part = part[:-1]
        if not part:
            continue
        first = part[0].group()
        opening = opens and n == 0 and part[0].start() == run[0].start()
        start, end = part[0].start(), part[-1].end()
        if len(part) <= 3 and _addressed(text, start, end):
            continue
        alone = len(part) == 1
        # Opening a sentence, a word may be capitalised for that alone: "Run
        # Prettier" is no name unless the store knows it as one elsewhere. A
        # possessive, an acronym or camel case is capitalised for itself.
        names_found.append((text[start:end], opening and not _possessive(part[-1].group())
                            and not (alone and (_acronym(first) or _camel(first)))))
        if opening and not alone:
            # "Use Logseq daily": the first word may be capitalised for the sentence
            # alone; the rest may be a name.
            tail = part[2:] if part[1].group() in _JOINERS else part[1:]
            names_found.append((text[tail[0].start():end], True))
    return names_found


def _addressed(text: str, start: int, end: int) -> bool:
    """The name at text[start:end] is someone spoken to: on its own between a
    sentence's start (and openers) and punctuation, or after a comma at a sentence's
    end ("That's great, Ann!")."""
    after = text[end:end + 3].lstrip(" ")
    # A line that is a name alone (a heading, a list item) is a title, not a call.
    if not after or after[0] not in ",!?.;" or _possessive(text[start:end]):
        return False
    at = start
    while True:  # back over openers and commas to the sentence's start, if so
        at = _back(text, at, " \t,")
        honorific = _honorific_before(text, at)
        if honorific is not None:  # "Good morning Dr. Patel!"
            at = honorific
            continue
        if at == 0 or text[at - 1] in _STARTS:
            return True
        word = _LAST_WORD.search(text, max(0, at - 20), at)
        if word is None or word.group().lower() not in OPENERS:
            break
        at = word.start()
    return text[_back(text, start, " ") - 1] == "," and after[0] in "!?."


def _opens(text: str, start: int) -> bool:
    """A sentence (a line, a list item, a numbered one) starts at `start` (not after
    an honorific's full stop: "Dr. Smith")."""
    return _starts_at(text, _back(text, start, " \t"))


def _starts_at(text: str, at: int) -> bool:
    """A sentence starts at `at`: the text's start, or after what ends one (not an
    honorific's full stop: "Dr. Smith")."""
    if at == 0:
        return True
    return text[at - 1] in _STARTS and _honorific_before(text, at) is None


def _honorific_before(text: str, at: int) -> int | None:
    """Where an honorific with its full stop ("Dr.", "Mrs.") that ends at `at` starts."""
    if at < 2 or text[at - 1] != ".":
        return None
    word = _LAST_WORD.search(text, max(0, at - 6), at - 1)
    return word.start() if word and word.group().casefold() in _HONORIFICS else None


_HONORIFICS = frozenset("mr mrs ms dr prof st mt sr jr".split())


def _back(text: str, at: int, chars: str) -> int:
    """Where the run of `chars` that ends at `at` starts."""
    while at > 0 and text[at - 1] in chars:
        at -= 1
    return at


def _capital(word: str) -> bool:
    return word[0].isupper() or _camel(word)


def _camel(word: str) -> bool:
    """A product's name in lower camel case: "iPhone", "eBay", "macOS"."""
    return len(word) >= 4 and word[0].islower() and any(c.isupper() for c in word[1:3])


def _acronym(word: str) -> bool:
    return len(word) > 1 and word.isupper()


def _possessive(word: str) -> bool:
    return word.endswith(("'s", "’s", "'S"))


_QUERY_WORD = re.compile(r"[^\W_][\w'’-]*")
_QUERY_HAN = re.compile(rf"[{_HAN}]+")
LONGEST = 4  # words in the longest name a query is read for


class QueryWords(NamedTuple):
    """A query split once for the names it may hold: each clause's words as written
    and as keys, and its Chinese runs. Every reader of the query's names (the speakers
    it addresses, the entities it names) matches against these."""

    clauses: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]
    han: tuple[str, ...]


def query_words(query: str) -> QueryWords:
    clauses = []
    for clause in re.split(r"[,.;:!?()\[\]\"“”]+", query):
        raw = tuple(_QUERY_WORD.findall(clause))
        if raw:
            clauses.append((raw, tuple(key(w) for w in raw)))
    return QueryWords(tuple(clauses), tuple(_QUERY_HAN.findall(query)))


def in_query(query: str | QueryWords, known: Callable[[str], bool]) -> list[str]:
    """The keys of known entities a query names: its runs of up to LONGEST words,
    longest first, however they are cased ("the bank of america"), a single word only
    when capitalised ("Ann", "iPhone"; not "feature" for a vault's [[Feature]] page); and its
    Chinese runs' substrings."""
    words_of = query_words(query) if isinstance(query, str) else query
    found: list[str] = []
    for raw, words in words_of.clauses:
        i = 0
        while i < len(words):
            for n in range(min(LONGEST, len(words) - i), 0, -1):
                candidate = " ".join(words[i:i + n])
                if (n > 1 or (_capital(raw[i]) and candidate not in OPENERS)) and known(
                        candidate):
                    found.append(candidate)
                    i += n
                    break
            else:
                i += 1
    for run in words_of.han:
        for n in range(min(len(run), 8), 1, -1):
            found += [run[i:i + n] for i in range(len(run) - n + 1) if known(run[i:i + n])]
    return list(dict.fromkeys(found))


# A cruder reading, for dream's links across categories: runs of capitalised words, less
# the words that are never a name (OPENERS, NOT_NAMES) and those a note to oneself opens
# with.
_CAPITALISED = re.compile(r"\b[A-Z][a-zA-Z]+(?:\s+[A-Z][a-zA-Z]+)*\b")
_NOT_IN_RUNS = frozenset({w.capitalize() for w in OPENERS | NOT_NAMES} | {
    "OK", "We", "You", "They", "User", "Users", "Learned", "Remember", "Note"})


def capitalised_runs(content: str) -> set[str]:
    """The runs of capitalised words `content` holds ("Ann Smith", "Berlin"), without
    the words in them that are no name."""
    found = set()
    for match in _CAPITALISED.finditer(content):
        words = [w for w in match.group(0).split() if w not in _NOT_IN_RUNS]
        if words:
            found.add(" ".join(words))
    return found
