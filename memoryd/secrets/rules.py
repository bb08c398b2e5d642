"""The secret rules, the one list of them: a kind (what `[REDACTED:<kind>]` says and
what `redaction.disabled` names), a pattern, and which of its groups is the secret (0: the
whole match; an assignment keeps its key and cuts the value).

Provider keys are matched by the form each provider documents for them; the generic
rules (an assignment to a secret-like key, a bearer token, a high-entropy token near
such a key) catch what has no fixed form. Look-alikes stay: a commit hash, a UUID,
a base64 image, a key's *name* with nothing assigned."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memoryd.secrets.providers import PREFIXED, SERVICES, SHAPED


@dataclass(frozen=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    group: int = 0  # the group that is the secret
    entropy: float = 0.0  # the secret must be at least this random (bits a character)
    check: Callable[[str], bool] | None = None  # ... or pass this test instead
    # Words one of which every match holds (in `haystack`'s folding): a text holding
    # none is not tried. One search for them all is far cheaper than the rule's pattern,
    # most of whose forms start with a class or a boundary the regex engine cannot skip
    # to. Each must hold in every match, or a secret passes: checked on the corpus of
    # secrets by tests/secrets/test_redact.py.
    hints: tuple[str, ...] = ()
    hinted: re.Pattern[str] | None = None  # many hints as one pattern (a trie of them)


MANY_HINTS = 12


def _rule(kind: str, pattern: str, group: int = 0, entropy: float = 0.0,
          check: Callable[[str], bool] | None = None, hints: tuple[str, ...] = ()) -> Rule:
    # A few are found fastest one by one; a search per hint costs more than one
    # search of the trie of many.
    return Rule(kind, re.compile(pattern), group, entropy, check, hints,
                re.compile(_trie(hints)) if len(hints) > MANY_HINTS else None)


def haystack(text: str) -> str:
    """`text` as the hints are looked for in it: case folded, and the characters a
    case-blind pattern takes for an ASCII letter made that letter (the dotless and the
    dotted I: "ı" and "İ" match `(?i)i`; "ſ" and the Kelvin sign fold to "s" and "k")."""
    return text.casefold().replace("ı", "i").replace("\u0307", "")


def entropy(text: str) -> float:
    """Shannon entropy, bits a character."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _service_value(value: str) -> bool:
    """What follows a service's name and an assignment is its key when it looks issued:
    letters and digits mixed and random (not a version, "7.12.0-rc1"), a long number,
    or a UUID; never a URL."""
    if "://" in value or not any(c.isdigit() for c in value):
        return False
    if value.isdigit():
        return len(value) >= 15
    return (len(value) >= 12 and any(c.isalpha() for c in value)
            and (entropy(value) >= 3.0 or _UUID.fullmatch(value) is not None))


def _spellings(name: str) -> list[str]:
    """The literal spellings of a service's name pattern (`new[_-]?relic`: newrelic,
    new_relic, new-relic; `telegr(?:am)?`: its start), each a rule hint."""
    name = re.sub(r"\(\?:[^)]*\)\?", "", name)
    spellings = [""]
    for n, part in enumerate(re.split(r"\[_-\]\?|-\?", name)):
        joins = ("",) if n == 0 else ("", "_", "-")
        spellings = [s + j + part for s in spellings for j in joins]
    return spellings


def _trie(words: tuple[str, ...]) -> str:
    """A regex matching any of `words` (literals), as a trie of their letters."""
    tree: dict[str, Any] = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}  # a word ends here

    def alternation(node: dict[str, Any]) -> str:
        ends = "" in node
        branches = [re.escape(c) + alternation(child) for c, child in sorted(node.items())
                    if c]
        if not branches:
            return ""
        group = branches[0] if len(branches) == 1 and not ends else f"(?:{'|'.join(branches)})"
        return f"{group}?" if ends else group

    return f"(?:{alternation(tree)})"


_SERVICE_SPELLINGS = tuple(dict.fromkeys(s for name in SERVICES for s in _spellings(name)))
_UUID = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")


_END = r"(?![A-Za-z0-9_-])"  # a key ends where its alphabet does
# A key's name starts and ends where letters and digits do: an underscore joins words of
# a name (DB_PASSWORD, MY_SECRET_KEY), so `\b` would not see "PASSWORD" in it.
_NAME_START = r"(?<![A-Za-z0-9])"
_NAME_END = r"(?![A-Za-z0-9])"
# A token ends at a character of its alphabet's neighbours, or at a full stop that ends
# the sentence (one followed by a letter or digit is part of it: a domain, a file name).
_TOKEN_END = r"(?![A-Za-z0-9+/_-]|\.[A-Za-z0-9])"
# Words that make what is assigned to them a secret ("password = ...", "token: ...").
_SECRET_KEYS = (r"pass(?:word|wd|phrase)?|pwd|secret|client[_-]?secret|api[_-]?key|"
                r"apikey|access[_-]?key|secret[_-]?key|private[_-]?key|auth[_-]?token|"
                r"access[_-]?token|refresh[_-]?token|token|credentials?")
# A word every one of those holds.
_SECRET_KEY_WORDS = ("pass", "pwd", "secret", "api", "access", "private", "auth", "refresh",
                     "token", "credential")

RULES: tuple[Rule, ...] = (
    # Whole blocks first: a key block holds lines that later rules would half match.
    _rule("private-key", r"(?i)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
          r"(?:[\s\S]*?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|[\s\S]*)",
          hints=("-----begin",)),
    _rule("anthropic", rf"\bsk-ant-[A-Za-z0-9_-]{{20,}}{_END}", hints=("sk-ant-",)),
    _rule("openai", rf"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{{32,}}{_END}",
          hints=("sk-",)),
    _rule("github", rf"\b(?:gh[pousr]_[A-Za-z0-9]{{36,}}|github_pat_[A-Za-z0-9_]{{40,}}){_END}",
          hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    _rule("gitlab", rf"\bglpat-[A-Za-z0-9_-]{{20,}}{_END}", hints=("glpat-",)),
    _rule("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
          hints=("akia", "asia", "abia", "acca")),
    _rule("aws-secret-key", rf"(?i){_NAME_START}aws_?secret_?access_?key{_NAME_END}[\"']?\s*"
          r"[:=]\s*[\"'`(\[<]?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])", 1, hints=("aws",)),
    _rule("google", rf"\bAIza[0-9A-Za-z_-]{{35}}{_END}|\bya29\.[0-9A-Za-z_-]{{20,}}{_END}",
          hints=("aiza", "ya29.")),
    _rule("slack", rf"\b(?i:xox[abposr])-(?:[A-Za-z0-9-]{{10,}}|(?:\d+-)+[A-Za-z0-9]+){_END}"
          r"|(?i:(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_+/]+)",
          hints=("xox", "hooks.slack.com")),
    _rule("stripe", rf"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{{16,}}{_END}",
          hints=("_live_", "_test_")),
    _rule("huggingface", rf"\bhf_[A-Za-z0-9]{{30,}}{_END}", hints=("hf_",)),
    _rule("npm", rf"\bnpm_[A-Za-z0-9]{{36}}{_END}", hints=("npm_",)),
    _rule("sendgrid", rf"\bSG\.[A-Za-z0-9_-]{{22}}\.[A-Za-z0-9_-]{{43}}{_END}", hints=("sg.",)),
    _rule("twilio", r"\b(?:SK|AC)(?:[0-9a-fA-F]{32}|[a-z0-9]{32})\b", hints=("sk", "ac")),
    # The forms other services publish (providers.py).
    _rule("provider", rf"{_NAME_START}(?:{'|'.join(p + b for p, b in PREFIXED)}){_END}"),
    _rule("provider", rf"(?<![A-Za-z0-9_.~-])(?:{'|'.join(SHAPED)})(?![A-Za-z0-9_~-])"),
    # A JWT: two base64 JSON objects (`ey...`) and a signature, which may be empty.
    _rule("jwt", r"\bey[A-Za-z0-9_=-]{8,}\.ey[A-Za-z0-9/\\_=-]{8,}\.?[A-Za-z0-9/\\_+=-]*",
          hints=("ey",)),
    # scheme://user:password@host: the password goes, the rest stays readable.
    _rule("connection-string", r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]+:([^\s@/]{3,})@[^\s]+",
          1, hints=("://",)),
    _rule("bearer", r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{20,}=*)", 1, hints=("bearer",)),
    # key = value, key: value, "key": "value" (the value goes; a short or spaced one is
    # prose, "token: the next one"; a call, an index or a variable is code).
    # A value in brackets is a secret when it has a digit or a symbol ("(optional)" is prose).
    _rule("assignment", rf"(?i){_NAME_START}(?:{_SECRET_KEYS}){_NAME_END}[\"']?\s*(?:[:=]|=>)"
          r"\s*[\"'`]{0,2}(?:[(\[<](?=[^\s)\]>]*[0-9!@#$%^&*_]))?(?![$%{])"
          r"([^\s\"'`,;()<>{}\[\]]{6,}+)(?![(\[])", 1, hints=_SECRET_KEY_WORDS),
    # ... and in words: "my password is hunter22" (a value with a digit or a symbol, so
    # "the password is required" stays).
    _rule("assignment", r"(?i)\b(?:pass(?:word|phrase|code)|pin|secret|token|api key)"
          r"\s+(?:is|was)\s+[\"'`(\[<]?(?=[^\s\"']*[0-9!@#$%^&*_])([^\s\"'`,;()<>{}\[\]]{6,}+)",
          1, hints=("pass", "pin", "secret", "token", "api key")),
    # A service's name, then an assignment: `ALGOLIA_ADMIN_KEY = ...`, "twilio: ...".
    # The name may be inside a longer one (MYGOCARDLESS_TOKEN), as gitleaks has it.
    # The names as a trie: an alternation of 95 words is tried word by word at every
    # position of the text; a trie fails at the first letter that fits no name.
    _rule("assignment", rf"(?i){_trie(_SERVICE_SPELLINGS)}[ \t\w.-]{{0,30}}?"
          r"[\s'\"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[`'\"\s=]{0,5}"
          r"([A-Za-z0-9_=+/.~%:-]{8,}+)", 1, check=_service_value, hints=_SERVICE_SPELLINGS),
    # A long random token on a line that names a key, whatever sits between: letters and
    # digits mixed (redact.py `_random`), not a UUID; base64's "/" inside it only with
    # both cases and a digit (a path's words are not), and never after a "." or "/" (a
    # URL's path).
    _rule("high-entropy", rf"(?i){_NAME_START}(?:key|secret|token|credential|auth|passw)\w*"
          rf"{_NAME_END}[^\n]{{0,40}}?(?<![A-Za-z0-9+/_.-])([A-Za-z0-9+/_-]{{24,}}=*){_TOKEN_END}",
          1, 3.5, hints=("key", "secret", "token", "credential", "auth", "passw")),
)
KINDS = (*dict.fromkeys(r.kind for r in RULES), "private")  # "private": <private> spans
# What a secret becomes in the text (`marker(kind)`), and how to find one: readers of
# the text (names, terms) must not take the marker's word for one of the user's.
MARKER_OPEN = "[REDACTED:"
MARKER = re.compile(r"\[REDACTED:[a-z0-9_-]{1,40}\]")


def marker(kind: str) -> str:
    return f"{MARKER_OPEN}{kind}]"
